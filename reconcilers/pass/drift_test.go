package pass

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

// TestDecideReportsConfigConflicts: a config added that closes a cycle
// (prod → dev) and shares dev with latest-to-dev makes every config
// involved not Ready, naming the others; none of them creates a promotion,
// and those outside the conflict carry on.
func TestDecideReportsConfigConflicts(t *testing.T) {
	snap := passtest.DefaultSnapshotSpec().Build()
	snap.Configs["prod-to-dev"] = passtest.NewConfig("prod-to-dev", v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "prod", Landscape: "prod"}, "dev")
	d := decide(t, Inputs{Snapshot: snap, State: reconcilers.NewState()}, t0)
	want := map[string][]string{
		"latest-to-dev": {"is also the target of VectorPromotionConfig prod-to-dev"},
		"prod-to-dev":   {"is also the target of VectorPromotionConfig latest-to-dev", "cycle: VectorPromotionConfig prod-to-dev (prod/prod → dev/dev) → VectorPromotionConfig dev-to-test (dev/dev → test/test) → VectorPromotionConfig test-to-prod (test/test → prod/prod)"},
		"dev-to-test":   {"cycle: VectorPromotionConfig dev-to-test (dev/dev → test/test)"},
		"test-to-prod":  {"cycle: VectorPromotionConfig test-to-prod (test/test → prod/prod)"},
	}
	for name, says := range want {
		c := meta.FindStatusCondition(d.State.Configs[name].Status.Conditions, v1alpha1.ReadyCondition)
		if c == nil || c.Status != "False" || c.Reason != v1alpha1.ConfigConflictReason {
			t.Errorf("%s: Ready %+v, want False/%s", name, c, v1alpha1.ConfigConflictReason)
			continue
		}
		for _, s := range says {
			if !strings.Contains(c.Message, s) {
				t.Errorf("%s: Ready message %q does not say %q", name, c.Message, s)
			}
		}
	}
	if len(d.State.Promotions) != 0 {
		t.Errorf("configs in conflict created promotions: %v", keys.Sorted(d.State.Promotions))
	}
	// Without prod-to-dev, everything is Ready again.
	delete(snap.Configs, "prod-to-dev")
	d = decide(t, Inputs{Snapshot: snap, State: d.State}, t0.Add(time.Minute))
	for name := range snap.Configs {
		if c := meta.FindStatusCondition(d.State.Configs[name].Status.Conditions, v1alpha1.ReadyCondition); c == nil || c.Status != "True" {
			t.Errorf("%s after the conflict is gone: Ready %+v", name, c)
		}
	}
	if _, ok := d.State.Promotions["latest-to-dev-1"]; !ok {
		t.Errorf("latest-to-dev did not promote once the conflict was gone: %v", keys.Sorted(d.State.Promotions))
	}
}
