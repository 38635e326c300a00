package pass

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

// TestDecideSetsKstatusConditions: a config in conflict is Stalled (only a
// change to the repository helps), a template whose registry failed is
// Reconciling, and both go once Ready is True again; the promotions keep
// their two conditions only.
func TestDecideSetsKstatusConditions(t *testing.T) {
	snap := passtest.DefaultSnapshotSpec().Build()
	snap.Configs["prod-to-dev"] = passtest.NewConfig("prod-to-dev", v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "prod", Landscape: "prod"}, "dev")
	var template string
	for name := range snap.Templates {
		template = name
	}
	d := decide(t, Inputs{Snapshot: snap, State: reconcilers.NewState(), RegistryProblems: map[string]string{template: "registry.example.com: connection refused"}}, t0)
	stalled := meta.FindStatusCondition(d.State.Configs["prod-to-dev"].Status.Conditions, v1alpha1.StalledCondition)
	if stalled == nil || stalled.Status != "True" || stalled.Reason != v1alpha1.ConfigConflictReason {
		t.Errorf("prod-to-dev in conflict: Stalled %+v, want True/%s", stalled, v1alpha1.ConfigConflictReason)
	}
	if c := meta.FindStatusCondition(d.State.Configs["prod-to-dev"].Status.Conditions, v1alpha1.ReconcilingCondition); c != nil {
		t.Errorf("prod-to-dev: Reconciling %+v, want none", c)
	}
	reconciling := meta.FindStatusCondition(d.State.Templates[template].Status.Conditions, v1alpha1.ReconcilingCondition)
	if reconciling == nil || reconciling.Status != "True" || reconciling.Reason != v1alpha1.ProgressingWithRetryReason {
		t.Errorf("template %s with its registry down: Reconciling %+v, want True/%s", template, reconciling, v1alpha1.ProgressingWithRetryReason)
	}

	delete(snap.Configs, "prod-to-dev")
	d = decide(t, Inputs{Snapshot: snap, State: d.State}, t0.Add(time.Minute))
	for name, cfg := range d.State.Configs {
		for _, typ := range []string{v1alpha1.StalledCondition, v1alpha1.ReconcilingCondition} {
			if c := meta.FindStatusCondition(cfg.Status.Conditions, typ); c != nil {
				t.Errorf("config %s once Ready: %s %+v, want none", name, typ, c)
			}
		}
	}
	if c := meta.FindStatusCondition(d.State.Templates[template].Status.Conditions, v1alpha1.ReconcilingCondition); c != nil {
		t.Errorf("template %s once its registry answered: Reconciling %+v, want none", template, c)
	}
	for name, p := range d.State.Promotions {
		for _, c := range p.Status.Conditions {
			if c.Type != v1alpha1.ApprovedCondition && c.Type != v1alpha1.SucceededCondition {
				t.Errorf("promotion %s has condition %s; a promotion has only Approved and Succeeded", name, c.Type)
			}
		}
	}
}
