package reconcilers

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// RecordHistory adds to a config's promotion history a record for every
// finished execution among promotions (Succeeded or Failed; a Superseded
// promotion never ran) that it lacks, and returns it newest first by finish
// time, then sequence, bounded to v1alpha1.MaxPromotionHistory records. A
// record is keyed by promotion name and finish time, so a name reused after
// the state branch was reset is a new record. history is not modified; when
// nothing is added it is returned as it is.
func RecordHistory(history []v1alpha1.PromotionRecord, promotions []v1alpha1.VectorPromotion) []v1alpha1.PromotionRecord {
	var added []v1alpha1.PromotionRecord
	for i := range promotions {
		p := &promotions[i]
		state := DeriveState(p)
		if state != v1alpha1.PromotionSucceeded && state != v1alpha1.PromotionFailed {
			continue
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
		r := v1alpha1.PromotionRecord{Vector: p.Spec.Vector, Promotion: p.Name, Sequence: p.Spec.Sequence,
			State: state, Reason: c.Reason, FinishedAt: c.LastTransitionTime}
		known := slices.ContainsFunc(history, func(h v1alpha1.PromotionRecord) bool {
			return h.Promotion == r.Promotion && h.FinishedAt.Equal(&r.FinishedAt)
		})
		if !known {
			added = append(added, r)
		}
	}
	if len(added) == 0 && len(history) <= v1alpha1.MaxPromotionHistory {
		return history
	}
	out := append(added, history...)
	slices.SortStableFunc(out, func(a, b v1alpha1.PromotionRecord) int {
		return cmp.Or(b.FinishedAt.Compare(a.FinishedAt.Time), cmp.Compare(b.Sequence, a.Sequence))
	})
	return out[:min(len(out), v1alpha1.MaxPromotionHistory)]
}

// VectorOrNone is how messages name a vector that may be empty.
func VectorOrNone(vector string) string {
	if vector == "" {
		return "no vector"
	}
	return vector
}
