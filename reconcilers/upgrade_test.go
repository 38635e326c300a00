package reconcilers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// upgradeWorld is a template-sourced config whose target runs acme with
// a=1.4.0, a stone at a=1.5.0, and vectors at 1.4.0, 1.5.0 and 1.6.0.
func upgradeWorld() (*world, map[string]*v1alpha1.Vector) {
	vectors := map[string]*v1alpha1.Vector{}
	for _, v := range []*v1alpha1.Vector{
		vec("2026.1.1-000000000Z", "a=1.4.0"), vec("2026.2.1-000000000Z", "a=1.5.0"), vec("2026.3.1-000000000Z", "a=1.6.0"),
	} {
		vectors[v.Ref()] = v
	}
	w := newWorld(tmplSource, "acme:2026.3.1-000000000Z", "acme:2026.1.1-000000000Z")
	w.in.Upgrade = UpgradeInput{
		ActiveVector: "acme:2026.1.1-000000000Z", Active: vectors["acme:2026.1.1-000000000Z"].Spec.Components,
		Stones: map[string]map[string][]string{"acme": {"a": {"1.5.0"}}}, Vectors: vectors,
	}
	return w, vectors
}

func (w *world) landed(name string, vectors map[string]*v1alpha1.Vector, now time.Time) {
	for i := range w.in.Promotions {
		p := &w.in.Promotions[i]
		if p.Name != name {
			continue
		}
		done, _, err := Complete(*p, Result{Outcome: OutcomeSucceeded, Commit: "c0ffee"}, now)
		if err != nil {
			panic(err)
		}
		*p = done
		w.in.TargetVector = p.Spec.Vector
		w.in.Upgrade.ActiveVector, w.in.Upgrade.Active = p.Spec.Vector, vectors[p.Spec.Vector].Spec.Components
		return
	}
	panic("no promotion " + name)
}

func driftOf(plan ConfigPlan) (string, string) {
	c := meta.FindStatusCondition(plan.Status.Conditions, v1alpha1.DriftCondition)
	if c == nil {
		return "", ""
	}
	return c.Reason, c.Message
}

func TestSteppingStonePromotedFirst(t *testing.T) {
	w, vectors := upgradeWorld()

	plan := w.pass(t, at(0))
	if diff := cmp.Diff([]string{"dev-to-test-1"}, names(plan.Create)); diff != "" {
		t.Fatalf("created (-want +got):\n%s", diff)
	}
	if got := plan.Create[0].Spec.Vector; got != "acme:2026.2.1-000000000Z" {
		t.Fatalf("the first promotion carries %s, want the stone's vector acme:2026.2.1-000000000Z", got)
	}
	if plan.Start == nil || plan.Start.Name != "dev-to-test-1" {
		t.Fatalf("the stone's promotion is not started: %+v", plan.Start)
	}
	reason, msg := driftOf(plan)
	if reason != v1alpha1.SteppingStoneRequiredReason || !strings.Contains(msg, "stepping stone 1.5.0") || !strings.Contains(msg, "acme:2026.3.1-000000000Z waits") {
		t.Fatalf("Drift = %s: %s; want SteppingStoneRequired naming the stone and the waiting vector", reason, msg)
	}

	// While the stone runs, the newer vector is not offered.
	plan = w.pass(t, at(time.Second))
	if len(plan.Create) != 0 {
		t.Fatalf("a pass while the stone runs created %v", names(plan.Create))
	}

	// Once the stone is active, the newer vector proceeds.
	w.landed("dev-to-test-1", vectors, at(2*time.Second))
	plan = w.pass(t, at(3*time.Second))
	if len(plan.Create) != 1 || plan.Create[0].Spec.Vector != "acme:2026.3.1-000000000Z" || plan.Start == nil || plan.Start.Name != "dev-to-test-2" {
		t.Fatalf("after the stone, want dev-to-test-2 of acme:2026.3.1-000000000Z started; created %v start %v", names(plan.Create), plan.Start)
	}
}

func TestSteppingStoneGateAtStart(t *testing.T) {
	cases := []struct {
		name    string
		active  string
		vector  string
		forced  bool
		hold    *StageHold
		request bool
		reason  string // "" starts
	}{
		{name: "missing stone blocks", active: "a=1.0.0", vector: "acme:2026.3.1-000000000Z", reason: v1alpha1.SteppingStoneMissingReason},
		{name: "downgrade across a stone is refused", active: "a=2.1.0", vector: "acme:2026.1.1-000000000Z", reason: v1alpha1.SteppingStoneDowngradeReason},
		{name: "a forced downgrade runs", active: "a=2.1.0", vector: "acme:2026.1.1-000000000Z", forced: true},
		{name: "a version that is not semver blocks", active: "a=latest", vector: "acme:2026.3.1-000000000Z", reason: v1alpha1.SteppingStoneInvalidReason},
		{name: "a held stage holds a drift promotion", active: "a=2.0.0", vector: "acme:2026.3.1-000000000Z",
			hold: &StageHold{Stage: "test/test-stage", By: "alice", At: at(0), Reason: "incident"}, reason: v1alpha1.StageHeldReason},
		{name: "a held stage runs a requested promotion", active: "a=2.0.0", vector: "acme:2026.3.1-000000000Z",
			hold: &StageHold{Stage: "test/test-stage", By: "alice", At: at(0), Reason: "incident"}, request: true},
		{name: "clear", active: "a=2.0.0", vector: "acme:2026.3.1-000000000Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vectors := map[string]*v1alpha1.Vector{}
			for _, v := range []*v1alpha1.Vector{vec("2026.1.1-000000000Z", "a=1.4.0"), vec("2026.3.1-000000000Z", "a=2.2.0")} {
				vectors[v.Ref()] = v
			}
			w := newWorld(tmplSource, "", "")
			p := NewPromotion(&w.in.Config, tc.vector, 1, at(0))
			p.Spec.Forced, p.Spec.Requested = tc.forced, tc.request
			w.in.Promotions = []v1alpha1.VectorPromotion{p}
			w.in.Upgrade = UpgradeInput{Active: vec("2026.0.1-000000000Z", tc.active).Spec.Components,
				Stones: map[string]map[string][]string{"acme": {"a": {"1.5.0", "2.0.0"}}}, Vectors: vectors, Hold: tc.hold}
			plan := w.pass(t, at(time.Second))
			got := w.find("dev-to-test-1")
			if tc.reason == "" {
				if plan.Start == nil || plan.Start.Name != "dev-to-test-1" {
					t.Fatalf("not started: %+v", got.Status.Conditions)
				}
				return
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.SucceededCondition)
			if plan.Start != nil || c == nil || c.Reason != tc.reason || DeriveState(got) != v1alpha1.PromotionBlocked {
				t.Fatalf("want Blocked with %s, got start %v, state %s, condition %+v", tc.reason, plan.Start, DeriveState(got), c)
			}
			// A steady block writes nothing more.
			if plan := w.pass(t, at(2*time.Second)); len(plan.Update) != 0 {
				t.Fatalf("a second pass rewrote %v", names(plan.Update))
			}
		})
	}
}

// A promotion made before the stage moved, approved late, still does not
// skip the stone: the stone's vector is offered and runs first.
func TestSteppingStoneStepOfferedAtStart(t *testing.T) {
	w, _ := upgradeWorld()
	p := NewPromotion(&w.in.Config, "acme:2026.3.1-000000000Z", 1, at(0))
	w.in.Promotions = []v1alpha1.VectorPromotion{p}
	w.in.Config.Status.Sequence = 1
	w.in.Config.Status.SourceVector = "acme:2026.3.1-000000000Z"
	plan := w.pass(t, at(time.Second))
	if len(plan.Create) != 1 || plan.Create[0].Spec.Vector != "acme:2026.2.1-000000000Z" || plan.Start == nil || plan.Start.Name != "dev-to-test-2" {
		t.Fatalf("want dev-to-test-2 of the stone started; created %v, start %v", names(plan.Create), plan.Start)
	}
}

func TestPromoteWithVectorAndForce(t *testing.T) {
	w, _ := upgradeWorld()
	if _, err := PromoteWith(w.in, PromoteOptions{Vector: "acme:2026.1.1-000000000Z", Rollback: true}, at(0)); err == nil ||
		!strings.Contains(err.Error(), "keeps no StageVersion of that vector") {
		t.Fatalf("a rollback to a vector the target never ran: err = %v", err)
	}
	// A StageVersion the stage keeps is a vector it ran, even one no
	// promotion of the config wrote (what its overlay named at first).
	w.in.Upgrade.Kept = map[string]bool{"acme:2026.1.1-000000000Z": true}
	if _, err := PromoteWith(w.in, PromoteOptions{Vector: "acme:2026.1.1-000000000Z", Forced: true, Rollback: true}, at(0)); err != nil {
		t.Fatalf("a rollback to a kept StageVersion's vector: %v", err)
	}
	w.in.Upgrade.Kept = nil
	w.in.Config.Status.PromotionHistory = []v1alpha1.PromotionRecord{{Vector: "acme:2026.1.1-000000000Z", Promotion: "dev-to-test-1",
		Sequence: 1, State: v1alpha1.PromotionSucceeded}}
	plan, err := PromoteWith(w.in, PromoteOptions{Vector: "acme:2026.1.1-000000000Z", Forced: true, Rollback: true}, at(0))
	if err != nil {
		t.Fatal(err)
	}
	got := plan.Create[0].Spec
	if got.Vector != "acme:2026.1.1-000000000Z" || !got.Forced || !got.Rollback || !got.Requested {
		t.Fatalf("spec = %+v", got)
	}
	if _, err := PromoteWith(w.in, PromoteOptions{Vector: "acme:nope"}, at(0)); err == nil || !strings.Contains(err.Error(), "no vector acme:nope") {
		t.Fatalf("an unknown vector: err = %v", err)
	}
}

// A promotion that would remove protected objects goes back to waiting
// for an approval, whatever its config says, and an approval then lets it
// start again.
func TestCompleteNeedsApproval(t *testing.T) {
	cfg := config(tmplSource)
	p := NewPromotion(&cfg, "acme:2026.3.1-000000000Z", 1, at(0))
	running, _, err := Start(p, at(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	removed := []v1alpha1.InventoryEntry{{Kind: "Namespace", Name: "acme-dev"}}
	if _, _, err := Complete(running, Result{Outcome: OutcomeNeedsApproval}, at(2*time.Second)); err == nil {
		t.Fatal("a removal without objects was accepted")
	}
	waiting, tr, err := Complete(running, Result{Outcome: OutcomeNeedsApproval, Removed: removed}, at(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Transition{Promotion: p.Name, From: v1alpha1.PromotionInProgress, To: v1alpha1.PromotionWaiting,
		Reason: v1alpha1.ProtectedRemovalReason}, tr); diff != "" {
		t.Fatalf("transition (-want +got):\n%s", diff)
	}
	if !waiting.Spec.RequireApproval || meta.FindStatusCondition(waiting.Status.Conditions, v1alpha1.SucceededCondition) != nil ||
		!strings.Contains(meta.FindStatusCondition(waiting.Status.Conditions, v1alpha1.ApprovedCondition).Message, "removes Namespace acme-dev") {
		t.Fatalf("waiting = %+v", waiting)
	}
	if diff := cmp.Diff(removed, waiting.Status.RemovesProtected); diff != "" {
		t.Fatalf("removesProtected (-want +got):\n%s", diff)
	}
	approved, err := Approve(waiting, "alice", at(3*time.Second))
	if err != nil || !approved.Changed || DeriveState(&approved.Promotion) != v1alpha1.PromotionReady {
		t.Fatalf("after alice's approval: %+v, %v", approved, err)
	}
}
