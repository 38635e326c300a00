package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRevertedPromotionIsOfferedAgain: a person reverts a promotion commit
// of a config that requires approval (git revert on main). Drift is what the
// overlays name now, so the vector is offered again as a new Waiting
// candidate, and approving it writes it back.
func TestRevertedPromotionIsOfferedAgain(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionWaiting)
	vector := ps["latest-to-dev-1"].Spec.Vector
	if got := ps["dev-to-test-2"].Spec.Vector; got != vector {
		t.Fatalf("dev-to-test-2 promotes %s, want dev's vector %s", got, vector)
	}
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	ps = f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSucceeded)

	// A person reverts the promotion commit.
	clone := f.clone(t)
	testutil.Git(t, clone, nil, "revert", "--no-edit", ps["dev-to-test-2"].Status.Commit)
	testutil.Git(t, clone, nil, "push", "-q", "origin", "main")
	if got := testutil.Git(t, clone, nil, "show", "HEAD:apps/overlays/test/kustomization.yaml"); strings.Contains(got, vector) {
		t.Fatalf("the revert left test on %s:\n%s", vector, got)
	}

	f.run(t)
	ps = f.promotions(t)
	p, ok := ps["dev-to-test-3"]
	if !ok {
		t.Fatalf("no candidate after the revert of dev-to-test-2's commit; promotions: %v", promotionStates(ps))
	}
	if p.Spec.Vector != vector || p.Status.State != v1alpha1.PromotionWaiting {
		t.Fatalf("dev-to-test-3 is a %s promotion of %s, want a Waiting one of %s", p.Status.State, p.Spec.Vector, vector)
	}
	// The next pass offers nothing more.
	f.run(t)
	if ps := f.promotions(t); len(ps) != 4 {
		t.Fatalf("a second pass after the revert changed the promotions: %v", promotionStates(ps))
	}

	f.cli(t, "approve", "dev-to-test-3", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-3", v1alpha1.PromotionSucceeded)
	clone = f.clone(t)
	if got := testutil.Git(t, clone, nil, "show", "HEAD:apps/overlays/test/kustomization.yaml"); !strings.Contains(got, "vectorflow.dev/vector: "+vector) {
		t.Fatalf("after approving dev-to-test-3 test does not name %s:\n%s", vector, got)
	}
}

func promotionStates(ps map[string]v1alpha1.VectorPromotion) map[string]v1alpha1.PromotionState {
	out := map[string]v1alpha1.PromotionState{}
	for n, p := range ps {
		out[n] = p.Status.State
	}
	return out
}

// TestConfigsTableSaysWhyDriftIsLeftAlone: get configs shows the Drift
// message when the config leaves a drift to a person, and Ready's otherwise.
func TestConfigsTableSaysWhyDriftIsLeftAlone(t *testing.T) {
	ready := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ResolvedReason, Message: "resolve"}
	drift := func(reason string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.DriftCondition, Status: metav1.ConditionTrue, Reason: reason, Message: "drift: " + reason}
	}
	tests := []struct {
		conds []metav1.Condition
		want  string
	}{
		{[]metav1.Condition{ready, drift(v1alpha1.TargetChangedByHandReason)}, "drift: " + v1alpha1.TargetChangedByHandReason},
		{[]metav1.Condition{ready, drift(v1alpha1.FailedNotRetriedReason)}, "drift: " + v1alpha1.FailedNotRetriedReason},
		{[]metav1.Condition{ready, drift(v1alpha1.PromotionOfferedReason)}, "resolve"},
	}
	for _, tt := range tests {
		cfg := &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "latest-to-dev"},
			Spec: v1alpha1.VectorPromotionConfigSpec{Source: v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"},
				Target: v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: "dev", Landscape: "dev"}}}
		state := reconcilers.NewState()
		state.Configs["latest-to-dev"] = &v1alpha1.VectorPromotionConfig{ObjectMeta: cfg.ObjectMeta,
			Status: v1alpha1.VectorPromotionConfigStatus{Conditions: tt.conds}}
		objs := listConfigs(getInput{snap: &source.Snapshot{Configs: map[string]*v1alpha1.VectorPromotionConfig{"latest-to-dev": cfg}}, state: state, now: time.Now()})
		if diff := cmp.Diff(any(tt.want), objs[0].cells[5]); diff != "" {
			t.Errorf("message (-want +got):\n%s", diff)
		}
	}
}
