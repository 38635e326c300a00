package reconcilers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// AggregateStatus is the config's mirror of its promotions, recomputed from
// the full set so it never depends on the order events or inputs arrive in:
//
//   - last: the conditions of the promotion with the highest sequence that
//     has acted on the target, i.e. that has a Succeeded condition other
//     than PromotionSuperseded (InProgress, Blocked, Succeeded or Failed).
//     Waiting and Ready ones have not acted yet; Superseded ones never will.
//   - lastSuccessful: the conditions of the highest-sequence Succeeded one.
//
// When no promotion qualifies (cleanup deleted them), the previous value is
// kept: the status remembers what the set no longer shows.
func AggregateStatus(promotions []v1alpha1.VectorPromotion, previous v1alpha1.VectorPromotionConfigStatus) (last, lastSuccessful []metav1.Condition) {
	var acted, won *v1alpha1.VectorPromotion
	for i := range promotions {
		p := &promotions[i]
		s := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
		if s == nil || s.Status == metav1.ConditionUnknown || DeriveState(p) == v1alpha1.PromotionSuperseded {
			continue
		}
		if acted == nil || compareSequence(p, acted) > 0 {
			acted = p
		}
		if s.Status == metav1.ConditionTrue && (won == nil || compareSequence(p, won) > 0) {
			won = p
		}
	}
	last, lastSuccessful = previous.LastPromotionConditions, previous.LastSuccessfulPromotionConditions
	if acted != nil {
		last = copyConditions(acted.Status.Conditions)
	}
	if won != nil {
		lastSuccessful = copyConditions(won.Status.Conditions)
	}
	return last, lastSuccessful
}

func copyConditions(in []metav1.Condition) []metav1.Condition {
	if in == nil {
		return nil
	}
	return append([]metav1.Condition(nil), in...)
}
