package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// t0 is when the first decision of every scenario is made.
var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// TestDecide walks the promotion lifecycle one decision at a time over
// hand-built snapshots: each step decides from the state the previous one
// produced, at an injected time.
func TestDecide(t *testing.T) {
	type step struct {
		snap  func(*snapshotSpec)
		in    func(*pass.Inputs)
		at    time.Duration // after t0
		check func(t *testing.T, d pass.Decision)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "a new template vector makes a Ready promotion that starts in the same decision",
			steps: []step{{
				check: func(t *testing.T, d pass.Decision) {
					ref := "acme:" + reconcilers.VectorVersion(t0)
					if got := d.State.Templates["acme"].Status.LatestVector; got != ref {
						t.Fatalf("latestVector %q, want %q", got, ref)
					}
					v := d.State.Vectors[ref]
					if v == nil {
						t.Fatalf("no vector %s in the state; have %v", ref, sortedKeys(d.State.Vectors))
					}
					want := []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"},
						{Name: "registry.example.com/acme/service-a", Tag: "1.0.1"}}
					if diff := cmp.Diff(want, v.Spec.Components); diff != "" {
						t.Errorf("vector components (-want +got):\n%s", diff)
					}
					wantPromotion(t, d, "latest-to-dev-1", v1alpha1.PromotionInProgress, ref)
					if diff := cmp.Diff([]string{"latest-to-dev-1"}, d.Start); diff != "" {
						t.Errorf("Start (-want +got):\n%s", diff)
					}
				},
			}},
		},
		{
			name: "a stage source drift makes a Waiting promotion that does not start",
			steps: []step{{
				snap: func(s *snapshotSpec) { s.devVector = "acme:v1" },
				check: func(t *testing.T, d pass.Decision) {
					wantPromotion(t, d, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
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
				{snap: func(s *snapshotSpec) { s.devVector = "acme:v1" }},
				{
					snap: func(s *snapshotSpec) { s.devVector = "acme:v1" },
					in: func(in *pass.Inputs) {
						in.Approvals = map[string]pass.ApprovalCount{"dev-to-test-1": pass.ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0.Add(30 * time.Second)), Commit: "c1"}}}}
					},
					at: time.Minute,
					check: func(t *testing.T, d pass.Decision) {
						p := wantPromotion(t, d, "dev-to-test-1", v1alpha1.PromotionInProgress, "acme:v1")
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
				{snap: func(s *snapshotSpec) { s.devVector = "acme:v1" }},
				{
					snap: func(s *snapshotSpec) { s.devVector = "acme:v1" },
					in: func(in *pass.Inputs) {
						in.Approvals = map[string]pass.ApprovalCount{"dev-to-test-1": {Needed: 1, Refusals: []string{"signed by mallory, who is not an approver"}}}
					},
					at: time.Minute,
					check: func(t *testing.T, d pass.Decision) {
						p := wantPromotion(t, d, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
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
					in: func(in *pass.Inputs) {
						in.Results = map[string]reconcilers.Result{"latest-to-dev-1": {Outcome: reconcilers.OutcomeSucceeded, Commit: "0123abcd"}}
					},
					at: time.Minute,
					check: func(t *testing.T, d pass.Decision) {
						p := wantPromotion(t, d, "latest-to-dev-1", v1alpha1.PromotionSucceeded, "")
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
					check: func(t *testing.T, d pass.Decision) {
						wantPromotion(t, d, "latest-to-dev-1", v1alpha1.PromotionInProgress, "")
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
					snap: func(s *snapshotSpec) { s.serviceA = "1.0.2" },
					at:   time.Minute,
					check: func(t *testing.T, d pass.Decision) {
						wantPromotion(t, d, "latest-to-dev-1", v1alpha1.PromotionInProgress, "")
						wantPromotion(t, d, "latest-to-dev-2", v1alpha1.PromotionReady, "acme:"+reconcilers.VectorVersion(t0.Add(time.Minute)))
						if slices.Contains(d.Start, "latest-to-dev-2") {
							t.Errorf("Start %v: a second promotion of the config started while one runs", d.Start)
						}
					},
				},
				{
					snap: func(s *snapshotSpec) { s.serviceA = "1.0.2" },
					at:   reconcilers.ExecutionDeadline + 2*time.Minute,
					check: func(t *testing.T, d pass.Decision) {
						p := wantPromotion(t, d, "latest-to-dev-1", v1alpha1.PromotionFailed, "")
						if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c == nil ||
							c.Reason != v1alpha1.PromotionTimedOutReason {
							t.Errorf("Succeeded condition %+v, want PromotionTimedOut", c)
						}
						wantPromotion(t, d, "latest-to-dev-2", v1alpha1.PromotionInProgress, "")
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
				{snap: func(s *snapshotSpec) { s.devVector = "acme:v1" }},
				{
					snap: func(s *snapshotSpec) { s.devVector = "acme:v1"; s.withoutConfig = "dev-to-test" },
					at:   time.Minute,
					check: func(t *testing.T, d pass.Decision) {
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
				{snap: func(s *snapshotSpec) { s.devVector = "acme:v1" }},
				{
					snap: func(s *snapshotSpec) {
						s.devVector = "acme:v1"
						s.withoutConfig, s.withoutStage = "dev-to-test", "test/test"
						s.problems = []source.Problem{{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig",
							Name: "dev-to-test", Reason: "does not decode"}}
					},
					at: time.Minute,
					check: func(t *testing.T, d pass.Decision) {
						wantPromotion(t, d, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
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
					snap: func(s *snapshotSpec) { s.withoutStage = "test/test" },
					at:   time.Minute,
					check: func(t *testing.T, d pass.Decision) {
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
				snap: func(s *snapshotSpec) {
					s.devVector = "acme:2026.11.3-090000000Z"
					s.devImages = []v1alpha1.VectorComponent{
						{Name: "registry.example.com/acme/service-b", Tag: "1.0.0"},
						{Name: "registry.example.com/acme/frontend", Image: "ghcr.io/acme/frontend", Tag: "1.2.0"},
						{Name: "registry.example.com/acme/service-a", Digest: "sha256:" + strings.Repeat("ab", 32)},
					}
				},
				check: func(t *testing.T, d pass.Decision) {
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
				spec := defaultSnapshotSpec()
				if s.snap != nil {
					s.snap(&spec)
				}
				in := pass.Inputs{Snapshot: spec.build(), State: state}
				if s.in != nil {
					s.in(&in)
				}
				d := pass.Decide(in, t0.Add(s.at))
				if s.check != nil {
					t.Run(fmt.Sprintf("step %d", i+1), func(t *testing.T) { s.check(t, d) })
				}
				state = roundTrip(t, d.State)
			}
		})
	}
}

// TestDecideDoesNotMutateItsInputs decides over a state holding every kind
// of object, with verdicts and results, and compares the inputs with deep
// copies taken before.
func TestDecideDoesNotMutateItsInputs(t *testing.T) {
	spec := defaultSnapshotSpec()
	spec.devVector = "acme:v1"
	state := pass.Decide(pass.Inputs{Snapshot: spec.build(), State: reconcilers.NewState()}, t0).State
	state.Approvals[reconcilers.LegacyApprovalPath("dev-to-test-1")] = &reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind,
		Promotion: "dev-to-test-1", Vector: "acme:v1", ApprovedAt: metav1.NewTime(t0)}
	spec.serviceA = "1.0.2"
	snap := spec.build()
	in := pass.Inputs{
		Snapshot: snap, State: state,
		Approvals: map[string]pass.ApprovalCount{"dev-to-test-1": pass.ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0), Commit: "c1"}}}},
		Results:   map[string]reconcilers.Result{"latest-to-dev-1": {Outcome: reconcilers.OutcomeSucceeded, Commit: "c0ffee"}},
	}
	before := state.Clone()
	configs := map[string]*v1alpha1.VectorPromotionConfig{}
	for k, v := range snap.Configs {
		configs[k] = v.DeepCopy()
	}
	for _, at := range []time.Duration{time.Minute, 2 * reconcilers.ExecutionDeadline} {
		d := pass.Decide(in, t0.Add(at))
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
	spec := defaultSnapshotSpec()
	spec.devVector, spec.testVector, spec.prodVector = "acme:v1", "acme:v0", "acme:v0"
	spec.devImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "1.2.0"}}
	// test and prod name the same vector with different images (edited by
	// hand): which one is recorded must not depend on iteration order.
	spec.testImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "0.9.0"}}
	spec.prodImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: "0.8.0"}}
	in := pass.Inputs{Snapshot: spec.build(), State: reconcilers.NewState()}
	first := pass.Decide(in, t0)
	for i := 0; i < 50; i++ {
		if diff := cmp.Diff(first, pass.Decide(in, t0)); diff != "" {
			t.Fatalf("decision %d differs from the first (-first +again):\n%s", i+2, diff)
		}
	}
}

func TestPromote(t *testing.T) {
	spec := defaultSnapshotSpec()
	spec.devVector = "acme:v1"
	state := roundTrip(t, pass.Decide(pass.Inputs{Snapshot: spec.build(), State: reconcilers.NewState()}, t0).State)
	wantPromotion(t, pass.Decision{State: state}, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")

	d, name, err := pass.Promote(pass.Inputs{Snapshot: spec.build(), State: state}, "dev-to-test", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if name != "dev-to-test-2" {
		t.Fatalf("Promote made %q, want dev-to-test-2 (a fresh sequence although dev-to-test-1 promotes the same vector)", name)
	}
	wantPromotion(t, d, "dev-to-test-2", v1alpha1.PromotionWaiting, "acme:v1")
	wantPromotion(t, d, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
	if got := d.State.Configs["dev-to-test"].Status.Sequence; got != 2 {
		t.Errorf("config sequence %d, want 2", got)
	}
	if diff := cmp.Diff(roundTrip(t, state), state); diff != "" {
		t.Errorf("Promote mutated its input state:\n%s", diff)
	}

	_, _, err = pass.Promote(pass.Inputs{Snapshot: spec.build(), State: state}, "no-such-config", t0.Add(time.Minute))
	if err == nil || !strings.Contains(err.Error(), "no-such-config") {
		t.Fatalf("Promote of an unknown config: err %v, want one naming the config", err)
	}
}

// wantPromotion fails unless the decision holds promotion name in state
// want (and promoting vector, when given).
func wantPromotion(t *testing.T, d pass.Decision, name string, want v1alpha1.PromotionState, vector string) *v1alpha1.VectorPromotion {
	t.Helper()
	p := d.State.Promotions[name]
	if p == nil {
		t.Fatalf("no promotion %s; have %v", name, sortedKeys(d.State.Promotions))
	}
	if p.Status.State != want || reconcilers.DeriveState(p) != want {
		t.Fatalf("%s is %s (derived %s), want %s; conditions %+v", name, p.Status.State, reconcilers.DeriveState(p), want, p.Status.Conditions)
	}
	if vector != "" && p.Spec.Vector != vector {
		t.Fatalf("%s promotes %s, want %s", name, p.Spec.Vector, vector)
	}
	return p
}

// roundTrip passes a state through the state branch's files, as the next
// pass would read it.
func roundTrip(t *testing.T, s *reconcilers.State) *reconcilers.State {
	t.Helper()
	files, err := reconcilers.EncodeState(s.Clone())
	if err != nil {
		t.Fatal(err)
	}
	out, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return out
}

// snapshotSpec describes the quickstart's shape: a template acme,
// landscapes and stages dev, test and prod, and configs latest-to-dev
// (template to dev), dev-to-test and test-to-prod (stage to stage,
// approval required).
type snapshotSpec struct {
	serviceA                          string
	devVector, testVector, prodVector string
	devImages, testImages, prodImages []v1alpha1.VectorComponent
	withoutConfig, withoutStage       string
	problems                          []source.Problem
}

func defaultSnapshotSpec() snapshotSpec { return snapshotSpec{serviceA: "1.0.1"} }

func (s snapshotSpec) build() *source.Snapshot {
	snap := &source.Snapshot{
		URL: "https://git.example.com/acme.git", Branch: "main", Commit: strings.Repeat("1", 40), ConfigPath: "vectorflow",
		Landscapes: map[string]*v1alpha1.Landscape{},
		Stages:     map[string]*v1alpha1.Stage{},
		Templates:  map[string]*v1alpha1.VectorTemplate{},
		Configs:    map[string]*v1alpha1.VectorPromotionConfig{},
		StageIndex: map[string]source.StageRef{},
		Problems:   s.problems,
	}
	snap.Templates["acme"] = &v1alpha1.VectorTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorTemplateKind},
		ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: v1alpha1.VectorTemplateSpec{Components: []v1alpha1.ComponentSpec{
			{Name: "registry.example.com/acme/service-a", Version: s.serviceA},
			{Name: "registry.example.com/acme/frontend", Version: "1.2.0"},
		}},
	}
	stageOverlays := map[string]struct {
		vector string
		images []v1alpha1.VectorComponent
	}{"dev": {s.devVector, s.devImages}, "test": {s.testVector, s.testImages}, "prod": {s.prodVector, s.prodImages}}
	for name, o := range stageOverlays {
		snap.Landscapes[name] = &v1alpha1.Landscape{ObjectMeta: metav1.ObjectMeta{Name: name}}
		key := source.StageKey(name, name)
		if key == s.withoutStage {
			continue
		}
		overlay := "apps/overlays/" + name
		snap.Stages[key] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageSpec{Landscape: name, Path: overlay}}
		snap.StageIndex[key] = source.StageRef{Landscape: name, Name: name, URL: snap.URL, Branch: snap.Branch,
			Commit: snap.Commit, Overlay: overlay, OverlayHash: "hash-" + name,
			Vector: overlays.StageVector{Vector: o.vector, Images: o.images}}
	}
	configs := []*v1alpha1.VectorPromotionConfig{
		newConfig("latest-to-dev", v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"}, "dev"),
		newConfig("dev-to-test", v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "dev", Landscape: "dev"}, "test"),
		newConfig("test-to-prod", v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "test", Landscape: "test"}, "prod"),
	}
	for _, c := range configs {
		if c.Name != s.withoutConfig {
			snap.Configs[c.Name] = c
		}
	}
	return snap
}

func newConfig(name string, src v1alpha1.SourceReference, target string) *v1alpha1.VectorPromotionConfig {
	c := &v1alpha1.VectorPromotionConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorPromotionConfigKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.VectorPromotionConfigSpec{Source: src,
			Target: v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: target, Landscape: target}},
	}
	c.Default()
	return c
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
	spec := defaultSnapshotSpec()
	spec.devVector, spec.devImages = "acme:2026.11.3-090000000Z", images
	d := pass.Decide(pass.Inputs{Snapshot: spec.build(), State: reconcilers.NewState()}, now)

	if got := d.State.Templates["acme"].Status.LatestVector; got != "acme:2026.11.3-090000000Z" {
		t.Fatalf("template acme's latest vector is %q, want dev's acme:2026.11.3-090000000Z", got)
	}
	if n := len(d.State.Vectors); n != 1 {
		t.Errorf("the state holds %d vectors, want only dev's: %v", n, sortedKeys(d.State.Vectors))
	}
	for name := range d.State.Promotions {
		if strings.HasPrefix(name, "latest-to-dev") {
			t.Errorf("promotion %s was created, but dev already runs the template's components", name)
		}
	}

	spec.serviceA = "1.0.2"
	d = pass.Decide(pass.Inputs{Snapshot: spec.build(), State: roundTrip(t, d.State)}, now.Add(time.Minute))
	latest := d.State.Templates["acme"].Status.LatestVector
	if latest == "acme:2026.11.3-090000000Z" || d.State.Vectors[latest] == nil {
		t.Fatalf("after the template changed, latest vector %q: want a new one", latest)
	}
	wantPromotion(t, d, "latest-to-dev-1", v1alpha1.PromotionInProgress, latest)
}
