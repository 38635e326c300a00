package pass

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
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// TestDecideLeavesTheStateItReadAsItWas: a decision shares the objects of
// the state it reads (the codec hands out the same objects every pass, and
// the web view reads them meanwhile), so whatever it changes, stages moving
// to new vectors, their StageVersions and usages following, declared
// usages rewritten and their conditions set, is changed on copies.
func TestDecideLeavesTheStateItReadAsItWas(t *testing.T) {
	snap := wideSnapshot(40)
	read := settledRead(t, snap)
	before := read.Clone()

	// Every fourth stage's overlay moves on; a usage is declared on every
	// third stage's version, and one declared before changes its reason.
	for i := 0; i < 40; i += 4 {
		key := source.StageKey("apps", fmt.Sprintf("s%04d", i))
		ref := snap.StageIndex[key]
		ref.Vector.Vector = fmt.Sprintf("acme:v%d", 10+i)
		snap.StageIndex[key] = ref
	}
	snap.Usages = map[string]*v1alpha1.StageVersionUsage{}
	for i := 0; i < 40; i += 3 {
		stage := fmt.Sprintf("s%04d", i)
		name := "pin-" + stage
		snap.Usages[name] = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageVersionUsageSpec{Reason: "pinned", StageVersionRef: &v1alpha1.LocalObjectReference{
				Name: reconcilers.StageVersionName("apps", stage, snap.StageIndex[source.StageKey("apps", stage)].Vector.Vector)}}}
	}
	d := Decide(Inputs{Snapshot: snap, State: read}, t0.Add(time.Hour))
	if len(d.Transitions) == 0 {
		t.Fatal("the decision changed nothing; the test shows nothing")
	}
	if diff := cmp.Diff(before, read); diff != "" {
		t.Fatalf("the decision changed the state it read (-before +after):\n%s", diff)
	}

	// And again over what it decided, with the declared usages changed and
	// two stages' deployers reporting: one healthy, one failed.
	read, next := d.State, d.State.Clone()
	for _, u := range snap.Usages {
		u.Spec.Reason = "audit"
	}
	reports := map[string][]reconcilers.StageReport{}
	for i, outcome := range []deployments.Outcome{deployments.Healthy, deployments.Failed} {
		key := source.StageKey("apps", fmt.Sprintf("s%04d", 1+i))
		snap.Stages[key].Spec.Deployment = &v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps", Namespace: "flux-system"}
		ref := snap.StageIndex[key]
		reports[key] = []reconcilers.StageReport{{Revision: ref.Commit, Outcome: outcome, At: t0.Add(90 * time.Minute), Vector: ref.Vector.Vector}}
	}
	d = Decide(Inputs{Snapshot: snap, State: read, Reports: reports,
		Positions: func(string, string) (int, bool) { return 1, true }}, t0.Add(2*time.Hour))
	if !slices.ContainsFunc(d.Transitions, func(t string) bool { return strings.Contains(t, "is active") }) {
		t.Fatalf("no report made a vector active: %v", d.Transitions)
	}
	if diff := cmp.Diff(next, read); diff != "" {
		t.Fatalf("the second decision changed the state it read (-before +after):\n%s", diff)
	}

	// And again, with two stages held and one released, the Held
	// condition set and removed.
	read, next = d.State, d.State.Clone()
	holds := []reconcilers.HoldVerdict{}
	for i, stage := range []string{"s0005", "s0006"} {
		holds = append(holds, reconcilers.HoldVerdict{Path: fmt.Sprintf("holds/%d.yaml", i), Signer: "alice", Commit: "c1",
			Record: reconcilers.HoldRecord{Kind: reconcilers.HoldKind, Stage: source.StageKey("apps", stage), Reason: "freeze",
				At: metav1.NewTime(t0.Add(150 * time.Minute))}})
	}
	d = Decide(Inputs{Snapshot: snap, State: read, Holds: holds}, t0.Add(3*time.Hour))
	held := d.State.Stages[source.StageKey("apps", "s0005")]
	if held == nil || meta.FindStatusCondition(held.Status.Conditions, HeldCondition) == nil {
		t.Fatal("the hold set no Held condition; the test shows nothing")
	}
	if diff := cmp.Diff(next, read); diff != "" {
		t.Fatalf("the decision holding stages changed the state it read (-before +after):\n%s", diff)
	}
	read, next = d.State, d.State.Clone()
	d = Decide(Inputs{Snapshot: snap, State: read, Holds: holds[:1]}, t0.Add(4*time.Hour))
	if released := d.State.Stages[source.StageKey("apps", "s0006")]; meta.FindStatusCondition(released.Status.Conditions, HeldCondition) != nil {
		t.Fatal("the release left the Held condition; the test shows nothing")
	}
	if diff := cmp.Diff(next, read); diff != "" {
		t.Fatalf("the decision releasing a stage changed the state it read (-before +after):\n%s", diff)
	}
}

// TestDecideSharesTheStagesItDoesNotChange: a decision over a settled
// state changes no stage, and keeps every stage the state's own object
// (CloneSharing) instead of a copy, which the codec then knows unchanged
// by its pointer. A stage that moves is a copy.
func TestDecideSharesTheStagesItDoesNotChange(t *testing.T) {
	snap := wideSnapshot(40)
	read := settledRead(t, snap)
	moved := source.StageKey("apps", "s0003")
	ref := snap.StageIndex[moved]
	ref.Vector.Vector = "acme:v9"
	snap.StageIndex[moved] = ref
	d := Decide(Inputs{Snapshot: snap, State: read}, t0.Add(time.Hour))
	if len(read.Stages) < 40 {
		t.Fatalf("the state holds %d stages", len(read.Stages))
	}
	for key, st := range read.Stages {
		switch shared := d.State.Stages[key] == st; {
		case key == moved && shared:
			t.Errorf("stage %s moved to a new vector, and the decision changed the state's own object", key)
		case key != moved && !shared:
			t.Errorf("stage %s did not change, and the decision holds a copy of it", key)
		}
	}
}

// settledRead is the state a first decision over snap wrote, read back
// from its files as the codec reads the state branch.
func settledRead(t *testing.T, snap *source.Snapshot) *reconcilers.State {
	t.Helper()
	files, err := reconcilers.EncodeState(Decide(Inputs{Snapshot: snap, State: reconcilers.NewState()}, t0).State)
	if err != nil {
		t.Fatal(err)
	}
	read, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return read
}
