package pass

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// manyStages is a state of n stages with two StageVersions each, and a
// config into each stage.
func manyStages(n int) (*Decision, []*v1alpha1.VectorPromotionConfig) {
	s := reconcilers.NewState()
	configs := make([]*v1alpha1.VectorPromotionConfig, n)
	for i := range n {
		stage := fmt.Sprintf("s%d", i)
		for v := range 2 {
			vector := fmt.Sprintf("acme:2026.12.%d-%09dZ", v+1, i)
			name := reconcilers.StageVersionName("apps", stage, vector)
			s.StageVersions[name] = &v1alpha1.StageVersion{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha1.StageVersionSpec{Landscape: "apps", Stage: stage, Vector: vector}}
		}
		configs[i] = &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "to-" + stage},
			Spec: v1alpha1.VectorPromotionConfigSpec{Target: v1alpha1.StageReference{Kind: v1alpha1.StageKind, Landscape: "apps", Name: stage}}}
	}
	return &Decision{State: s}, configs
}

// TestUpgradeInputKeepsEachStagesVectors: the vectors a config's target
// keeps StageVersions of (what a rollback may go back to) are its own
// stage's, from the index a decision builds once.
func TestUpgradeInputKeepsEachStagesVectors(t *testing.T) {
	d, configs := manyStages(3)
	kept := keptVectors(d.State.StageVersions)
	for i, cfg := range configs {
		u := d.upgradeInput(cfg, nil, nil, kept)
		want := map[string]bool{fmt.Sprintf("acme:2026.12.1-%09dZ", i): true, fmt.Sprintf("acme:2026.12.2-%09dZ", i): true}
		if fmt.Sprint(u.Kept) != fmt.Sprint(want) {
			t.Errorf("%s keeps %v, want %v", cfg.Name, u.Kept, want)
		}
	}
	none := &v1alpha1.VectorPromotionConfig{Spec: v1alpha1.VectorPromotionConfigSpec{Target: v1alpha1.StageReference{Landscape: "apps", Name: "new"}}}
	if u := d.upgradeInput(none, nil, nil, kept); u.Kept == nil || len(u.Kept) != 0 {
		t.Errorf("a stage with no StageVersion keeps %v, want an empty set", u.Kept)
	}
}

// BenchmarkUpgradeInputs is reconcileConfigs' look at what each target
// keeps, for 1,000 and 8,000 stages: linear, so the time per config is the
// same at both sizes (it scanned every StageVersion per config: 0.36 s of
// each Decide at 10,000 stages).
func BenchmarkUpgradeInputs(b *testing.B) {
	for _, n := range []int{1000, 8000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d, configs := manyStages(n)
			b.ResetTimer()
			for b.Loop() {
				kept := keptVectors(d.State.StageVersions)
				for _, cfg := range configs {
					d.upgradeInput(cfg, nil, nil, kept)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/config")
		})
	}
}
