package pass

import (
	"fmt"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// ApprovalCount is what the approval files of one promotion add up to.
type ApprovalCount struct {
	// Needed is spec.approval.minApprovals of the promotion's config.
	Needed int
	// Grants are the distinct approvers with a valid approval, each at
	// their first one, oldest first.
	Grants []v1alpha1.ApprovalRecord
	// Refusals say why each refused file does not count, in path order.
	Refusals []string
}

// Complete reports whether enough distinct approvers approved.
func (c ApprovalCount) Complete() bool { return len(c.Grants) >= c.Needed && len(c.Grants) > 0 }

// Approvers names the counted approvers, oldest first.
func (c ApprovalCount) Approvers() []string {
	names := make([]string, 0, len(c.Grants))
	for _, g := range c.Grants {
		names = append(names, g.ApprovedBy)
	}
	return names
}

// Waiting is the Approved condition's message while the count is short:
// who approved, how many more are needed, and what was refused.
func (c ApprovalCount) Waiting(config string) string {
	var parts []string
	if len(c.Grants) > 0 {
		more := c.Needed - len(c.Grants)
		noun := "approval"
		if more > 1 {
			noun = "approvals"
		}
		parts = append(parts, fmt.Sprintf("approved by %s; %d more %s of %s's approvers needed",
			joinNames(c.Approvers()), more, noun, config))
	}
	refusals := c.Refusals
	if len(refusals) > maxRefusalsShown {
		refusals = append(refusals[:maxRefusalsShown:maxRefusalsShown],
			fmt.Sprintf("%d more approval files refused", len(c.Refusals)-maxRefusalsShown))
	}
	parts = append(parts, refusals...)
	return strings.Join(parts, "; ")
}

// maxRefusalsShown bounds the refusals a condition message lists: anyone
// may add files, and a message is no place for a thousand of them.
const maxRefusalsShown = 3

func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
