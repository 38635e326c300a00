package reconcilers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Ready's reasons that only a change to the configuration repository
// resolves: the object is Stalled. A reason not listed and not retried is
// neither (Ready=False alone).
var stalledReasons = map[string]bool{
	v1alpha1.InvalidSpecReason:          true,
	v1alpha1.ConfigConflictReason:       true,
	v1alpha1.SourceNotFoundReason:       true,
	v1alpha1.TargetNotFoundReason:       true,
	v1alpha1.LandscapeNotFoundReason:    true,
	v1alpha1.StalePromotionMergedReason: true,
}

// Ready's reasons that every pass retries on its own: the object is
// Reconciling. A template's assembly asks the registries again each pass.
var retriedReasons = map[string]bool{
	v1alpha1.RegistryUnavailableReason: true,
	v1alpha1.AssemblyFailedReason:      true,
}

// SetKstatus derives Reconciling and Stalled from the Ready condition in
// conds, in kstatus's shape: each present only when True, and neither while
// Ready is True or absent. It reports whether anything changed. Times move
// as SetCondition moves them; fluxcd's conditions helpers would read the
// wall clock instead of now.
func SetKstatus(conds *[]metav1.Condition, now time.Time) bool {
	var reconciling, stalled *metav1.Condition
	if ready := meta.FindStatusCondition(*conds, v1alpha1.ReadyCondition); ready != nil && ready.Status == metav1.ConditionFalse {
		c := metav1.Condition{Status: metav1.ConditionTrue, Reason: ready.Reason, Message: ready.Message, ObservedGeneration: ready.ObservedGeneration}
		switch {
		case stalledReasons[ready.Reason]:
			c.Type = v1alpha1.StalledCondition
			stalled = &c
		case retriedReasons[ready.Reason]:
			c.Type, c.Reason = v1alpha1.ReconcilingCondition, v1alpha1.ProgressingWithRetryReason
			reconciling = &c
		}
	}
	changed := false
	for typ, c := range map[string]*metav1.Condition{v1alpha1.ReconcilingCondition: reconciling, v1alpha1.StalledCondition: stalled} {
		if c == nil {
			changed = removeCondition(conds, typ) || changed
		} else {
			changed = SetCondition(conds, *c, now) || changed
		}
	}
	return changed
}
