package v1alpha1

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
)

// TestFluxConditionHelpers: every kind is a fluxcd conditions Setter, so
// the kstatus helpers Flux controllers use work on vectorflow's objects.
func TestFluxConditionHelpers(t *testing.T) {
	objects := map[string]conditions.Setter{
		LandscapeKind:             &Landscape{},
		StageKind:                 &Stage{},
		VectorTemplateKind:        &VectorTemplate{},
		VectorPromotionConfigKind: &VectorPromotionConfig{},
		VectorPromotionKind:       &VectorPromotion{},
		StageVersionKind:          &StageVersion{},
		StageVersionUsageKind:     &StageVersionUsage{},
	}
	for kind, obj := range objects {
		t.Run(kind, func(t *testing.T) {
			conditions.MarkFalse(obj, meta.ReadyCondition, "SourceNotFound", "stage %s not found", "dev")
			conditions.MarkTrue(obj, meta.StalledCondition, "InvalidSpec", "fix the spec")
			if conditions.IsReady(obj) || !conditions.IsStalled(obj) {
				t.Fatalf("after MarkFalse(Ready) and MarkTrue(Stalled): conditions %+v", obj.GetConditions())
			}
			if got := conditions.GetReason(obj, meta.ReadyCondition); got != "SourceNotFound" {
				t.Errorf("Ready reason %q", got)
			}
			conditions.MarkTrue(obj, meta.ReadyCondition, "Resolved", "all references resolve")
			conditions.Delete(obj, meta.StalledCondition)
			if !conditions.IsReady(obj) || len(obj.GetConditions()) != 1 {
				t.Errorf("after recovery: conditions %+v", obj.GetConditions())
			}
		})
	}
}
