package reconcilers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// SetCondition sets c in conds and reports whether anything changed.
//
// LastTransitionTime moves to now when the status or the reason changes.
// meta.SetStatusCondition moves it on a status change only, which would date
// a start (Succeeded=False/PromotionRunning) from an earlier block
// (Succeeded=False/PromotionTargetUnresolved) and time the run out at once,
// and would date a timeout from its start, shortening the TTL. A message-only
// change (e.g. the time left on UpdateDelayed) keeps the time, unlike
// fluxcd's conditions.Set, which reads the wall clock anyway.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition, now time.Time) bool {
	c.LastTransitionTime = Stamp(now)
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason {
			c.LastTransitionTime = old.LastTransitionTime
		}
		if sameCondition(*old, c) {
			return false
		}
		*old = c
		return true
	}
	*conds = append(*conds, c)
	return true
}

// removeCondition drops the condition of type typ and reports whether it was there.
func removeCondition(conds *[]metav1.Condition, typ string) bool {
	for i := range *conds {
		if (*conds)[i].Type == typ {
			*conds = append((*conds)[:i:i], (*conds)[i+1:]...)
			return true
		}
	}
	return false
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

// Stamp is now exactly as a read of the state branch gives it back:
// metav1.Time keeps whole seconds in YAML and decodes into the local zone,
// so a plan that stamped more, or in another zone, would differ from its own
// re-read, and the codec would encode it again to find the same bytes.
func Stamp(now time.Time) metav1.Time {
	return metav1.NewTime(now.Truncate(time.Second).Local())
}

// Transition is one promotion state change, for the state commit message and logs.
type Transition struct {
	Promotion string
	// From is empty for a created promotion; To is empty for a deleted one.
	From, To v1alpha1.PromotionState
	Reason   string
}

// String renders "dev-to-test-4: Waiting -> Ready (Approved)".
func (t Transition) String() string {
	from, to := string(t.From), string(t.To)
	if from == "" {
		from = "(new)"
	}
	if to == "" {
		to = "(deleted)"
	}
	s := fmt.Sprintf("%s: %s -> %s", t.Promotion, from, to)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	return s
}
