package pass

import (
	"fmt"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// PullRequestDescription is what a promotion's pull request says.
type PullRequestDescription struct {
	Promotion, Vector, Source, Target string
	// From are the overlay's images before, To the vector's components.
	From, To []v1alpha1.VectorComponent
	// Manifests is the rendered change; RenderProblem says why there is none.
	Manifests     ManifestChanges
	RenderProblem string
	// Merge is the config's spec.approval.pullRequest.merge.
	Merge string
}

// PullRequestBody renders d as Markdown: a table of the components that
// change, a summary of the rendered objects, how the promotion is approved.
func PullRequestBody(d PullRequestDescription) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vectorflow promotion **%s**: vector `%s` from %s to %s.\n\n", d.Promotion, d.Vector, d.Source, d.Target)
	b.WriteString(d.Diff())
	b.WriteString("\n### Approval\n\n")
	if d.Merge == v1alpha1.PullRequestMergeVectorflow {
		b.WriteString("An approving review by someone other than the author, on the current head, approves this promotion: vectorflow then writes the signed promotion commit to the target branch itself and closes this pull request.\n")
	} else {
		b.WriteString("Merging this pull request (under the branch's protection rules) approves and executes the promotion.\n")
	}
	return b.String()
}

// Diff is the change the promotion makes, as Markdown: the components that
// change their version and the rendered objects it adds, changes and
// removes. The pull request body, `vectorflow diff` and the web view show it.
func (d PullRequestDescription) Diff() string {
	var b strings.Builder
	b.WriteString("### Components\n\n")
	rows := componentRows(d.From, d.To)
	if len(rows) == 0 {
		b.WriteString("No component changes its version.\n")
	} else {
		b.WriteString("| Component | Old | New |\n|---|---|---|\n")
		for _, r := range rows {
			b.WriteString(r + "\n")
		}
	}
	b.WriteString("\n### Rendered manifests\n\n")
	switch {
	case d.RenderProblem != "":
		fmt.Fprintf(&b, "Not rendered: %s\n", d.RenderProblem)
	case len(d.Manifests.Added)+len(d.Manifests.Changed)+len(d.Manifests.Removed) == 0:
		b.WriteString("No object changes.\n")
	default:
		fmt.Fprintf(&b, "%d added, %d changed, %d removed.\n\n", len(d.Manifests.Added), len(d.Manifests.Changed), len(d.Manifests.Removed))
		for _, l := range []struct {
			verb string
			ids  []string
		}{{"added", d.Manifests.Added}, {"changed", d.Manifests.Changed}, {"removed", d.Manifests.Removed}} {
			for _, id := range l.ids {
				fmt.Fprintf(&b, "- %s `%s`\n", l.verb, id)
			}
		}
	}
	return b.String()
}

// componentRows are the table rows of the components whose image, tag or
// digest differ, by name.
func componentRows(from, to []v1alpha1.VectorComponent) []string {
	var rows []string
	for _, ch := range reconcilers.DiffComponents(from, to) {
		old, cur := "—", "—"
		if ch.Old != nil {
			old = componentVersion(*ch.Old)
		}
		if ch.New != nil {
			cur = componentVersion(*ch.New)
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", ch.Name, old, cur))
	}
	return rows
}

func componentVersion(c v1alpha1.VectorComponent) string {
	v := "`" + reconcilers.VectorOrNone(c.Tag) + "`"
	if c.Tag == "" {
		v = "no tag"
	}
	if c.Image != "" && c.Image != c.Name {
		v = "`" + c.Image + "` " + v
	}
	if c.Digest != "" {
		v += " (`" + c.Digest + "`)"
	}
	return v
}
