package reconcilers

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// CleanupPlan names the promotions to delete.
type CleanupPlan struct {
	Delete      []string
	Transitions []Transition
	// RequeueAfter is when the next kept promotion's TTL runs out (0: never).
	RequeueAfter time.Duration
}

// Cleanup deletes finished promotions (Succeeded, Failed, Superseded) whose
// spec.ttlAfterFinished has elapsed since they finished (the Succeeded
// condition's lastTransitionTime; at exactly the TTL they go), except the
// newest keepLast of them by sequence, which stay whatever their age: an
// aggressive TTL cannot erase the audit trail. Waiting, Ready, Blocked and
// InProgress promotions are never deleted and do not count: the approval
// queue is its own backpressure.
func Cleanup(promotions []v1alpha1.VectorPromotion, keepLast int, now time.Time) CleanupPlan {
	var plan CleanupPlan
	ps := make([]*v1alpha1.VectorPromotion, len(promotions))
	for i := range promotions {
		ps[i] = &promotions[i]
	}
	slices.SortFunc(ps, compareSequence)
	kept := 0
	for i := len(ps) - 1; i >= 0; i-- { // newest first
		p := ps[i]
		state := DeriveState(p)
		if !IsTerminal(state) {
			continue
		}
		if kept < keepLast {
			// It leaves the newest keepLast only when a newer one
			// finishes, which is a pass of its own: no requeue.
			kept++
			continue
		}
		expiry := finishedAt(p).Add(p.Spec.TTLAfterFinished.Duration)
		if now.Before(expiry) {
			plan.RequeueAfter = minRequeue(plan.RequeueAfter, expiry.Sub(now))
			continue
		}
		plan.Delete = append(plan.Delete, p.Name)
		plan.Transitions = append(plan.Transitions, Transition{Promotion: p.Name, From: state})
	}
	// Oldest first reads better in a commit message.
	for i, j := 0, len(plan.Delete)-1; i < j; i, j = i+1, j-1 {
		plan.Delete[i], plan.Delete[j] = plan.Delete[j], plan.Delete[i]
		plan.Transitions[i], plan.Transitions[j] = plan.Transitions[j], plan.Transitions[i]
	}
	return plan
}

func finishedAt(p *v1alpha1.VectorPromotion) time.Time {
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}
