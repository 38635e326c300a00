package pass

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
	"github.com/vectorflow-dev/vectorflow/source"
)

// t0 is when the first decision of every scenario is made.
var t0 = passtest.T0

// TestDecide walks the promotion lifecycle one decision at a time over
// hand-built snapshots: each step decides from the state the previous one
// produced, at an injected time.
func TestDecide(t *testing.T) {
	type step struct {
		snap  func(*passtest.SnapshotSpec)
		in    func(*Inputs)
		at    time.Duration // after t0
		check func(t *testing.T, d Decision)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "a new template vector makes a Ready promotion that starts in the same decision",
			steps: []step{{
				check: func(t *testing.T, d Decision) {
					ref := "acme:" + reconcilers.VectorVersion(t0)
					if got := d.State.Templates["acme"].Status.LatestVector; got != ref {
						t.Fatalf("latestVector %q, want %q", got, ref)
					}
					v := d.State.Vectors[ref]
					if v == nil {
						t.Fatalf("no vector %s in the state; have %v", ref, keys.Sorted(d.State.Vectors))
					}
					want := []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"},
						{Name: "registry.example.com/acme/service-a", Tag: "1.0.1"}}
					if diff := cmp.Diff(want, v.Spec.Components); diff != "" {
						t.Errorf("vector components (-want +got):\n%s", diff)
					}
					passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionInProgress, ref)
					if diff := cmp.Diff([]string{"latest-to-dev-1"}, d.Start); diff != "" {
						t.Errorf("Start (-want +got):\n%s", diff)
					}
				},
			}},
		},
		{
			name: "a stage source drift makes a Waiting promotion that does not start",
			steps: []step{{
				snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" },
				check: func(t *testing.T, d Decision) {
					passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
					if slices.Contains(d.Start, "dev-to-test-1") {
						t.Errorf("Start %v names a promotion that waits for approval", d.Start)
					}
					c := meta.FindStatusCondition(d.State.Promotions["dev-to-test-1"].Status.Conditions, v1alpha1.ApprovedCondition)
					if c == nil || c.Reason != v1alpha1.WaitingForApprovalReason {
						t.Errorf("Approved condition %+v, want WaitingForApproval", c)
					}
				},
			}},
		},
		{
			name: "an accepted approval verdict approves the promotion and starts it",
			steps: []step{
				{snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" }},
				{
					snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" },
					in: func(in *Inputs) {
						in.Approvals = map[string]ApprovalCount{"dev-to-test-1": ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0.Add(30 * time.Second)), Commit: "c1"}}}}
					},
					at: time.Minute,
					check: func(t *testing.T, d Decision) {
						p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionInProgress, "acme:v1")
						want := &v1alpha1.ApprovalRecord{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0.Add(30 * time.Second)), Commit: "c1"}
						if diff := cmp.Diff(want, p.Status.Approval); diff != "" {
							t.Errorf("status.approval (-want +got):\n%s", diff)
						}
						if !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ApprovedCondition) {
							t.Errorf("Approved is not True: %+v", p.Status.Conditions)
						}
						if !slices.Contains(d.Start, "dev-to-test-1") {
							t.Errorf("Start %v lacks the approved promotion", d.Start)
						}
					},
				},
			},
		},
		{
			name: "a refused approval verdict keeps the promotion Waiting and says why",
			steps: []step{
				{snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" }},
				{
					snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" },
					in: func(in *Inputs) {
						in.Approvals = map[string]ApprovalCount{"dev-to-test-1": {Needed: 1, Refusals: []string{"signed by mallory, who is not an approver"}}}
					},
					at: time.Minute,
					check: func(t *testing.T, d Decision) {
						p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
						c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition)
						if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ApprovalRefusedReason ||
							c.Message != "signed by mallory, who is not an approver" {
							t.Errorf("Approved condition %+v, want False/ApprovalRefused with the refusal as message", c)
						}
						if p.Status.Approval != nil || slices.Contains(d.Start, "dev-to-test-1") {
							t.Errorf("a refused approval was recorded (%+v) or started (%v)", p.Status.Approval, d.Start)
						}
					},
				},
			},
		},
		{
			name: "a result completes the promotion with its commit",
			steps: []step{
				{},
				{
					in: func(in *Inputs) {
						in.Results = map[string]reconcilers.Result{"latest-to-dev-1": {Outcome: reconcilers.OutcomeSucceeded, Commit: "0123abcd"}}
					},
					at: time.Minute,
					check: func(t *testing.T, d Decision) {
						p := passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionSucceeded, "")
						if p.Status.Commit != "0123abcd" {
							t.Errorf("status.commit %q, want 0123abcd", p.Status.Commit)
						}
						if len(d.Start) != 0 {
							t.Errorf("Start %v after the only promotion succeeded", d.Start)
						}
					},
				},
			},
		},
		{
			name: "an InProgress promotion without a result is executed again within the deadline",
			steps: []step{
				{},
				{
					at: reconcilers.ExecutionDeadline - time.Second,
					check: func(t *testing.T, d Decision) {
						passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionInProgress, "")
						if diff := cmp.Diff([]string{"latest-to-dev-1"}, d.Start); diff != "" {
							t.Errorf("Start (-want +got):\n%s", diff)
						}
					},
				},
			},
		},
		{
			name: "an overdue InProgress promotion times out and the next Ready one starts",
			steps: []step{
				{},
				{
					snap: func(s *passtest.SnapshotSpec) { s.ServiceA = "1.0.2" },
					at:   time.Minute,
					check: func(t *testing.T, d Decision) {
						passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionInProgress, "")
						passtest.WantPromotion(t, d.State, "latest-to-dev-2", v1alpha1.PromotionReady, "acme:"+reconcilers.VectorVersion(t0.Add(time.Minute)))
						if slices.Contains(d.Start, "latest-to-dev-2") {
							t.Errorf("Start %v: a second promotion of the config started while one runs", d.Start)
						}
					},
				},
				{
					snap: func(s *passtest.SnapshotSpec) { s.ServiceA = "1.0.2" },
					at:   reconcilers.ExecutionDeadline + 2*time.Minute,
					check: func(t *testing.T, d Decision) {
						p := passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionFailed, "")
						if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c == nil ||
							c.Reason != v1alpha1.PromotionTimedOutReason {
							t.Errorf("Succeeded condition %+v, want PromotionTimedOut", c)
						}
						passtest.WantPromotion(t, d.State, "latest-to-dev-2", v1alpha1.PromotionInProgress, "")
						if diff := cmp.Diff([]string{"latest-to-dev-2"}, d.Start); diff != "" {
							t.Errorf("Start (-want +got):\n%s", diff)
						}
					},
				},
			},
		},
		{
			name: "a config deleted from the repository deletes its promotions",
			steps: []step{
				{snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" }},
				{
					snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1"; s.WithoutConfig = "dev-to-test" },
					at:   time.Minute,
					check: func(t *testing.T, d Decision) {
						if p := d.State.Promotions["dev-to-test-1"]; p != nil {
							t.Errorf("dev-to-test-1 survived its config: %s", p.Status.State)
						}
						if _, ok := d.State.Configs["dev-to-test"]; ok {
							t.Error("the deleted config's status is still in the state")
						}
						if d.State.Promotions["latest-to-dev-1"] == nil {
							t.Error("latest-to-dev-1 was deleted with another config")
						}
					},
				},
			},
		},
		{
			name: "with a problem in the repository nothing is pruned",
			steps: []step{
				{snap: func(s *passtest.SnapshotSpec) { s.DevVector = "acme:v1" }},
				{
					snap: func(s *passtest.SnapshotSpec) {
						s.DevVector = "acme:v1"
						s.WithoutConfig, s.WithoutStage = "dev-to-test", "test/test"
						s.Problems = []source.Problem{{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig",
							Name: "dev-to-test", Reason: "does not decode"}}
					},
					at: time.Minute,
					check: func(t *testing.T, d Decision) {
						passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
						if _, ok := d.State.Configs["dev-to-test"]; !ok {
							t.Error("the config's status was pruned although the snapshot has a problem")
						}
						if _, ok := d.State.Stages["test/test"]; !ok {
							t.Error("stage test/test was pruned although the snapshot has a problem")
						}
					},
				},
			},
		},
		{
			name: "a stage removed from the repository leaves the state",
			steps: []step{
				{},
				{
					snap: func(s *passtest.SnapshotSpec) { s.WithoutStage = "test/test" },
					at:   time.Minute,
					check: func(t *testing.T, d Decision) {
						if _, ok := d.State.Stages["test/test"]; ok {
							t.Error("stage test/test is still in the state")
						}
						if _, ok := d.State.Stages["dev/dev"]; !ok {
							t.Error("stage dev/dev was removed with test/test")
						}
						if !slices.Contains(d.Transitions, "stage test/test: removed from the repository") {
							t.Errorf("transitions %q do not say the stage was removed", d.Transitions)
						}
					},
				},
			},
		},
		{
			name: "a vector the state never saw is recorded from the overlay, components sorted",
			steps: []step{{
				snap: func(s *passtest.SnapshotSpec) {
					s.DevVector = "acme:2026.11.3-090000000Z"
					s.DevImages = []v1alpha1.VectorComponent{
						{Name: "registry.example.com/acme/service-b", Tag: "1.0.0"},
						{Name: "registry.example.com/acme/frontend", Image: "ghcr.io/acme/frontend", Tag: "1.2.0"},
						{Name: "registry.example.com/acme/service-a", Digest: "sha256:" + strings.Repeat("ab", 32)},
					}
				},
				check: func(t *testing.T, d Decision) {
					components := []v1alpha1.VectorComponent{
						{Name: "registry.example.com/acme/frontend", Image: "ghcr.io/acme/frontend", Tag: "1.2.0"},
						{Name: "registry.example.com/acme/service-a", Digest: "sha256:" + strings.Repeat("ab", 32)},
						{Name: "registry.example.com/acme/service-b", Tag: "1.0.0"},
					}
					want := &v1alpha1.Vector{
						ObjectMeta: metav1.ObjectMeta{Name: "acme-2026.11.3-090000000Z"},
						Spec: v1alpha1.VectorSpec{Template: "acme", Version: "2026.11.3-090000000Z",
							Components: components, Digest: reconcilers.ComponentsDigest(components)},
					}
					got := d.State.Vectors["acme:2026.11.3-090000000Z"]
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("recorded vector (-want +got):\n%s", diff)
					}
					if got != nil && !strings.HasPrefix(got.Spec.Digest, "sha256:") {
						t.Errorf("digest %q is not a sha256", got.Spec.Digest)
					}
				},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := reconcilers.NewState()
			for i, s := range tt.steps {
				spec := passtest.DefaultSnapshotSpec()
				if s.snap != nil {
					s.snap(&spec)
				}
				in := Inputs{Snapshot: spec.Build(), State: state}
				if s.in != nil {
					s.in(&in)
				}
				d := decide(t, in, t0.Add(s.at))
				if s.check != nil {
					t.Run(fmt.Sprintf("step %d", i+1), func(t *testing.T) { s.check(t, d) })
				}
				state = passtest.RoundTrip(t, d.State)
			}
		})
	}
}

// TestDecideDoesNotMutateItsInputs decides over a state holding every kind
// of object, with verdicts and results, and compares the inputs with deep
// copies taken before.
func TestDecideDoesNotMutateItsInputs(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	state := decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0).State
	state.Approvals[reconcilers.LegacyApprovalPath("dev-to-test-1")] = &reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind,
		Promotion: "dev-to-test-1", Vector: "acme:v1", ApprovedAt: metav1.NewTime(t0)}
	spec.ServiceA = "1.0.2"
	snap := spec.Build()
	in := Inputs{
		Snapshot: snap, State: state,
		Approvals: map[string]ApprovalCount{"dev-to-test-1": ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0), Commit: "c1"}}}},
		Results:   map[string]reconcilers.Result{"latest-to-dev-1": {Outcome: reconcilers.OutcomeSucceeded, Commit: "c0ffee"}},
	}
	before := state.Clone()
	configs := map[string]*v1alpha1.VectorPromotionConfig{}
	for k, v := range snap.Configs {
		configs[k] = v.DeepCopy()
	}
	for _, at := range []time.Duration{time.Minute, 2 * reconcilers.ExecutionDeadline} {
		d := Decide(in, t0.Add(at)) // what decide checks, spelled out
		if len(d.Transitions) == 0 {
			t.Fatal("the decision changed nothing, so it proves nothing about mutation")
		}
		if diff := cmp.Diff(before, in.State); diff != "" {
			t.Fatalf("Decide mutated its input state (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(configs, snap.Configs); diff != "" {
			t.Fatalf("Decide mutated the snapshot's configs (-before +after):\n%s", diff)
		}
	}
}

// TestDecideIsDeterministic decides the same inputs many times: two
// controllers reading the same commit must write the same state commit,
// message included. Several stages change at once and two overlays name
// the same unseen vector, so any dependence on map order shows.
func TestDecideIsDeterministic(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector, spec.TestVector, spec.ProdVector = "acme:v1", "acme:v0", "acme:v0"
	spec.DevImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"}}
	// test and prod name the same vector with different images (edited by
	// hand): which one is recorded must not depend on iteration order.
	spec.TestImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "0.9.0"}}
	spec.ProdImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "0.8.0"}}
	in := Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}
	first := decide(t, in, t0)
	for i := 0; i < 50; i++ {
		if diff := cmp.Diff(first, decide(t, in, t0), cmpopts.IgnoreUnexported(Decision{})); diff != "" {
			t.Fatalf("decision %d differs from the first (-first +again):\n%s", i+2, diff)
		}
	}
}

func TestPromote(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	state := passtest.RoundTrip(t, decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0).State)
	passtest.WantPromotion(t, state, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")

	d, name, err := Promote(Inputs{Snapshot: spec.Build(), State: state}, "dev-to-test", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if name != "dev-to-test-2" {
		t.Fatalf("Promote made %q, want dev-to-test-2 (a fresh sequence although dev-to-test-1 promotes the same vector)", name)
	}
	passtest.WantPromotion(t, d.State, "dev-to-test-2", v1alpha1.PromotionWaiting, "acme:v1")
	passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
	if got := d.State.Configs["dev-to-test"].Status.Sequence; got != 2 {
		t.Errorf("config sequence %d, want 2", got)
	}
	if diff := cmp.Diff(passtest.RoundTrip(t, state), state); diff != "" {
		t.Errorf("Promote mutated its input state:\n%s", diff)
	}

	_, _, err = Promote(Inputs{Snapshot: spec.Build(), State: state}, "no-such-config", t0.Add(time.Minute))
	if err == nil || !strings.Contains(err.Error(), "no-such-config") {
		t.Fatalf("Promote of an unknown config: err %v, want one naming the config", err)
	}
}

// TestDecideAdoptsTheVectorAStageRuns: a template's first vector whose
// components are those dev already runs is that vector, not a second one
// under a new version; so there is nothing to promote to dev. Once the
// template changes, a new vector is made and promoted as usual.
func TestDecideAdoptsTheVectorAStageRuns(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	images := []v1alpha1.VectorComponent{
		{Name: "registry.example.com/acme/service-a", Tag: "1.0.1"},
		{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"},
	}
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector, spec.DevImages = "acme:2026.11.3-090000000Z", images
	d := decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, now)

	if got := d.State.Templates["acme"].Status.LatestVector; got != "acme:2026.11.3-090000000Z" {
		t.Fatalf("template acme's latest vector is %q, want dev's acme:2026.11.3-090000000Z", got)
	}
	if n := len(d.State.Vectors); n != 1 {
		t.Errorf("the state holds %d vectors, want only dev's: %v", n, keys.Sorted(d.State.Vectors))
	}
	for name := range d.State.Promotions {
		if strings.HasPrefix(name, "latest-to-dev") {
			t.Errorf("promotion %s was created, but dev already runs the template's components", name)
		}
	}

	spec.ServiceA = "1.0.2"
	d = decide(t, Inputs{Snapshot: spec.Build(), State: passtest.RoundTrip(t, d.State)}, now.Add(time.Minute))
	latest := d.State.Templates["acme"].Status.LatestVector
	if latest == "acme:2026.11.3-090000000Z" || d.State.Vectors[latest] == nil {
		t.Fatalf("after the template changed, latest vector %q: want a new one", latest)
	}
	passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionInProgress, latest)
}

// decide is Decide, checking that it leaves the state it read as it was:
// the decision shares that state's promotions and configs (CloneSharing) and
// must copy one before changing it.
func decide(t *testing.T, in Inputs, now time.Time) Decision {
	t.Helper()
	before, read := in.State.Clone(), snapshotObjects(in.Snapshot)
	d := Decide(in, now)
	if diff := cmp.Diff(before, in.State); diff != "" {
		t.Fatalf("Decide changed the state it read (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(read, snapshotObjects(in.Snapshot)); diff != "" {
		t.Fatalf("Decide changed the snapshot it read (-before +after):\n%s", diff)
	}
	return d
}

// snapshotObjects are copies of a snapshot's objects, by kind and key.
func snapshotObjects(s *source.Snapshot) map[string]any {
	out := map[string]any{}
	for k, v := range s.Landscapes {
		out["Landscape/"+k] = v.DeepCopy()
	}
	for k, v := range s.Stages {
		out["Stage/"+k] = v.DeepCopy()
	}
	for k, v := range s.Templates {
		out["VectorTemplate/"+k] = v.DeepCopy()
	}
	for k, v := range s.Configs {
		out["VectorPromotionConfig/"+k] = v.DeepCopy()
	}
	for k, v := range s.Usages {
		out["StageVersionUsage/"+k] = v.DeepCopy()
	}
	return out
}

// A config removed from the repository while it has problems keeps its
// status (nothing is pruned on a broken snapshot), and the decision still
// derives that status's kstatus conditions: on its own copy, as decide
// checks.
func TestDecideKeepsARemovedConfigOnItsOwnCopy(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	state := passtest.RoundTrip(t, decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0).State)
	removed := state.Configs["dev-to-test"]
	meta.SetStatusCondition(&removed.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: v1alpha1.InvalidSpecReason, Message: "spec.target: required", LastTransitionTime: metav1.NewTime(t0)})
	meta.RemoveStatusCondition(&removed.Status.Conditions, v1alpha1.StalledCondition)
	snap := spec.Build()
	delete(snap.Configs, "dev-to-test")
	snap.Problems = append(snap.Problems, source.Problem{File: "vectorflow/configs.yaml", Reason: "a broken file"})
	d := decide(t, Inputs{Snapshot: snap, State: state}, t0.Add(time.Hour))
	kept := d.State.Configs["dev-to-test"]
	if kept == nil {
		t.Fatal("the removed config's status was pruned on a snapshot with problems")
	}
	if !meta.IsStatusConditionTrue(kept.Status.Conditions, v1alpha1.StalledCondition) {
		t.Errorf("the removed config's status is not Stalled: %+v", kept.Status.Conditions)
	}
}

// TestDecideTakesStatusesFromTheStateOnly: a config the state does not hold
// yet starts from no status, whatever status its snapshot object carries
// (the decoder refuses one in a config file; a snapshot made otherwise must
// not seed a sequence or a promotion history either).
func TestDecideTakesStatusesFromTheStateOnly(t *testing.T) {
	snap := passtest.DefaultSnapshotSpec().Build()
	snap.Configs["latest-to-dev"].Status = v1alpha1.VectorPromotionConfigStatus{Sequence: 7,
		PromotionHistory: []v1alpha1.PromotionRecord{{Vector: "acme:forged", Promotion: "latest-to-dev-7", Sequence: 7,
			State: v1alpha1.PromotionSucceeded, FinishedAt: metav1.NewTime(t0)}}}
	d := decide(t, Inputs{Snapshot: snap, State: reconcilers.NewState()}, t0)
	st := d.State.Configs["latest-to-dev"].Status
	if st.Sequence != 1 || len(st.PromotionHistory) != 0 {
		t.Fatalf("latest-to-dev's decided status has sequence %d and history %+v: want 1 and none", st.Sequence, st.PromotionHistory)
	}
	passtest.WantPromotion(t, d.State, "latest-to-dev-1", v1alpha1.PromotionInProgress, d.State.Templates["acme"].Status.LatestVector)
}

// TestDecideKeepsUnchangedConfigsAsTheStateHoldsThem: a config whose plan
// leaves its status as it was is the state's own object (the codec then
// knows its file unchanged without comparing it), a Stalled one included,
// and a change made after the plans, as kstatus's, is made on a copy: here
// a leftover Stalled condition beside Ready=True goes, and the state read
// keeps it.
func TestDecideKeepsUnchangedConfigsAsTheStateHoldsThem(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	snap := spec.Build()
	stalled := snap.Configs["dev-to-test"].DeepCopy()
	stalled.Name, stalled.Spec.Target.Name = "dev-to-nowhere", "nowhere"
	snap.Configs[stalled.Name] = stalled
	state := passtest.RoundTrip(t, decide(t, Inputs{Snapshot: snap, State: reconcilers.NewState()}, t0).State)
	state = passtest.RoundTrip(t, decide(t, Inputs{Snapshot: snap, State: state}, t0.Add(time.Minute)).State)
	stale := state.Configs["dev-to-test"]
	if !meta.IsStatusConditionTrue(stale.Status.Conditions, v1alpha1.ReadyCondition) {
		t.Fatalf("dev-to-test is not Ready, so it proves nothing: %+v", stale.Status.Conditions)
	}
	stale.Status.Conditions = append(stale.Status.Conditions, metav1.Condition{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.InvalidSpecReason, Message: "left over", LastTransitionTime: metav1.NewTime(t0)})

	d := decide(t, Inputs{Snapshot: snap, State: state}, t0.Add(2*time.Minute))
	kept := 0
	for name, c := range d.State.Configs {
		if name == "dev-to-test" {
			if c == stale || meta.FindStatusCondition(c.Status.Conditions, v1alpha1.StalledCondition) != nil {
				t.Errorf("dev-to-test keeps its leftover Stalled condition: %+v", c.Status.Conditions)
			}
			continue
		}
		if c == state.Configs[name] {
			kept++
		}
	}
	if kept != len(d.State.Configs)-1 {
		t.Errorf("%d of the %d unchanged configs are the state's own objects, want all", kept, len(d.State.Configs)-1)
	}
	if !meta.IsStatusConditionTrue(d.State.Configs["dev-to-nowhere"].Status.Conditions, v1alpha1.StalledCondition) {
		t.Errorf("dev-to-nowhere is not Stalled, so it proves nothing: %+v", d.State.Configs["dev-to-nowhere"].Status.Conditions)
	}
}

// TestDecideDoesNotBelieveAnOverlayNamingAVectorItDoesNotRun: test's
// vectorflow.dev/vector annotation was edited by hand to dev's vector, but
// its images entries still run the old frontend. test does not run acme:v1:
// it reports no vector, so dev-to-test offers acme:v1 to it and
// test-to-prod offers prod nothing test never ran. The same holds once the
// vector is on the state branch, whichever overlay recorded it.
func TestDecideDoesNotBelieveAnOverlayNamingAVectorItDoesNotRun(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector, spec.TestVector, spec.ProdVector = "acme:v1", "acme:v1", "acme:v0"
	spec.DevImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"},
		{Name: "registry.example.com/acme/service-a", Tag: "1.0.1"}}
	spec.TestImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.1.0"},
		{Name: "registry.example.com/acme/service-a", Tag: "1.0.1"}}
	spec.ProdImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.0.0"},
		{Name: "registry.example.com/acme/service-a", Tag: "1.0.0"}}
	state := reconcilers.NewState()
	for pass := 1; pass <= 2; pass++ {
		d := decide(t, Inputs{Snapshot: spec.Build(), State: state}, t0.Add(time.Duration(pass)*time.Minute))
		if v := d.State.Vectors["acme:v1"]; v == nil || v.Spec.Components[0].Tag != "1.2.0" {
			t.Fatalf("pass %d: vector acme:v1 is %+v, want dev's (frontend 1.2.0)", pass, v)
		}
		test := d.State.Stages["test/test"]
		if test.Status.Vector != "" || test.Status.ActiveVector != "" {
			t.Errorf("pass %d: test reports vector %q, active %q; its overlay runs frontend 1.1.0, not acme:v1's 1.2.0",
				pass, test.Status.Vector, test.Status.ActiveVector)
		}
		for name, p := range d.State.Promotions {
			if p.Spec.VectorPromotionConfigName == "test-to-prod" {
				t.Errorf("pass %d: %s promotes %s to prod from test, which never ran it", pass, name, p.Spec.Vector)
			}
		}
		passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
		if pass == 1 && !slices.ContainsFunc(d.Transitions, func(n string) bool {
			return strings.Contains(n, "stage test/test") && strings.Contains(n, "acme:v1") && strings.Contains(n, "1.1.0")
		}) {
			t.Errorf("no transition says why test runs no vector: %q", d.Transitions)
		}
		state = passtest.RoundTrip(t, d.State)
	}
}

// TestDecideBelievesTheRenderOfAnOverlayThatLeavesAComponentToItsBase:
// test's entries match acme:v1, but the shell rendered test's overlay and
// found frontend left to the base at another version (RendersOther). test
// runs no vector, says why, and test-to-prod offers prod nothing.
func TestDecideBelievesTheRenderOfAnOverlayThatLeavesAComponentToItsBase(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector, spec.TestVector, spec.ProdVector = "acme:v1", "acme:v1", "acme:v0"
	v1 := []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"},
		{Name: "registry.example.com/acme/service-a", Tag: "1.0.1"}}
	spec.DevImages, spec.TestImages = v1, v1
	spec.ProdImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.0.0"},
		{Name: "registry.example.com/acme/service-a", Tag: "1.0.0"}}
	const why = "its render does not run it: component registry.example.com/acme/frontend renders nowhere at 1.2.0"
	state := reconcilers.NewState()
	for pass := 1; pass <= 2; pass++ {
		d := decide(t, Inputs{Snapshot: spec.Build(), State: state, RendersOther: map[string]string{"test/test": why}},
			t0.Add(time.Duration(pass)*time.Minute))
		if test := d.State.Stages["test/test"]; test.Status.Vector != "" || test.Status.ActiveVector != "" {
			t.Errorf("pass %d: test reports vector %q, active %q; its render runs another frontend",
				pass, test.Status.Vector, test.Status.ActiveVector)
		}
		if dev := d.State.Stages["dev/dev"]; dev.Status.Vector != "acme:v1" {
			t.Errorf("pass %d: dev reports %q, want acme:v1: only test's render was contradicted", pass, dev.Status.Vector)
		}
		for name, p := range d.State.Promotions {
			if p.Spec.VectorPromotionConfigName == "test-to-prod" {
				t.Errorf("pass %d: %s promotes %s to prod from test, which never ran it", pass, name, p.Spec.Vector)
			}
		}
		if pass == 1 && !slices.ContainsFunc(d.Transitions, func(n string) bool {
			return strings.Contains(n, "stage test/test") && strings.Contains(n, why)
		}) {
			t.Errorf("no transition says why test runs no vector: %q", d.Transitions)
		}
		state = passtest.RoundTrip(t, d.State)
	}
}
