package pass

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// namedProblems is how many configuration problems a health message names
// before it only counts the rest: validate lists them all.
const namedProblems = 3

// PassProblem says why a pass could not do its work, or "" when it did. A
// pass that failed could not: the config repository or its state branch
// could not be read or did not verify, or a write did not go through. Nor
// could one whose snapshot has configuration problems (what validate
// rejects: an object that does not decode, a reference that does not
// resolve, a landscape repository that cannot be read), since the configs
// they touch are not reconciled. Promotions waiting for an approval are work
// done: waiting is their state, not a fault.
func PassProblem(problems []string, err error) string {
	if err != nil {
		return "pass failed: " + source.RedactText(err.Error())
	}
	n := len(problems)
	if n == 0 {
		return ""
	}
	named := problems[:min(n, namedProblems)]
	msg := fmt.Sprintf("%d configuration problem(s): %s", n, strings.Join(named, "; "))
	if n > len(named) {
		msg += fmt.Sprintf("; and %d more", n-len(named))
	}
	return source.RedactText(msg)
}

// ConfigurationProblems are what keeps a pass from reconciling every
// config of the snapshot: its problems (what validate reports), then every
// config and template of it whose Ready condition the decision set to False
// (a template that cannot assemble a vector, say) and that no snapshot
// problem names already. A registry that could not be asked while the last
// resolved version is kept (RegistryUnavailable) is not one: the pass still
// works from what it knows, and the next one asks again.
func ConfigurationProblems(snap *source.Snapshot, state *reconcilers.State) []string {
	var out []string
	named := map[string]bool{}
	for _, p := range snap.Problems {
		out = append(out, p.Error())
		named[p.Kind+"/"+p.Name] = true
	}
	notReady := func(kind, name string, conds []metav1.Condition) {
		c := meta.FindStatusCondition(conds, v1alpha1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason == v1alpha1.RegistryUnavailableReason || named[kind+"/"+name] {
			return
		}
		out = append(out, fmt.Sprintf("%s/%s: %s: %s", kind, name, c.Reason, c.Message))
	}
	for _, name := range snap.ConfigNames() {
		if cfg := state.Configs[name]; cfg != nil {
			notReady(v1alpha1.VectorPromotionConfigKind, name, cfg.Status.Conditions)
		}
	}
	for _, name := range keys.Sorted(snap.Templates) {
		if t := state.Templates[name]; t != nil {
			notReady(v1alpha1.VectorTemplateKind, name, t.Status.Conditions)
		}
	}
	return out
}

// RepositoryHealth is what a Runner knows about one repository's last pass.
type RepositoryHealth struct {
	Repository string
	// Passed is true once a pass has completed, failed or not.
	Passed bool
	// Problem is PassProblem of the last pass.
	Problem string
}

// Readiness is nil when every repository's last pass did its work, and
// otherwise names each repository that is not ready and why. Before its
// first pass a repository is not ready: nothing is known about it yet.
func Readiness(health []RepositoryHealth) error {
	var reasons []string
	for _, h := range health {
		switch {
		case !h.Passed:
			reasons = append(reasons, fmt.Sprintf("repository %s: first pass not done yet", h.Repository))
		case h.Problem != "":
			reasons = append(reasons, fmt.Sprintf("repository %s: %s", h.Repository, h.Problem))
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "\n"))
}
