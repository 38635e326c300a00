package pass

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// wideSnapshot is the quickstart's snapshot with a chain of n more stages
// in landscape apps, fed by template acme: stage i runs acme:v(i%3), so
// most configs see their source offer a vector their target does not run.
func wideSnapshot(n int) *source.Snapshot {
	snap := passtest.DefaultSnapshotSpec().Build()
	snap.Landscapes["apps"] = &v1alpha1.Landscape{}
	snap.Landscapes["apps"].Name = "apps"
	from := v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"}
	for i := range n {
		stage := fmt.Sprintf("s%04d", i)
		key := source.StageKey("apps", stage)
		overlay := "apps/overlays/" + stage
		snap.Stages[key] = &v1alpha1.Stage{Spec: v1alpha1.StageSpec{Landscape: "apps", Path: overlay}}
		snap.Stages[key].Name = stage
		snap.StageIndex[key] = source.StageRef{Landscape: "apps", Name: stage, URL: snap.URL, Branch: snap.Branch,
			Commit: snap.Commit, Overlay: overlay, OverlayHash: "hash-" + stage,
			Vector: overlays.StageVector{Vector: fmt.Sprintf("acme:v%d", i%3),
				Images: []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Tag: fmt.Sprintf("1.%d.0", i%3)}}}}
		c := passtest.NewConfig("to-"+stage, from, stage)
		c.Spec.Target.Landscape = "apps"
		snap.Configs[c.Name] = c
		from = v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Landscape: "apps", Name: stage}
	}
	return snap
}

// TestDecideIsTheSameOnEveryCore: the configs' plans are made on every
// core, and the decision must be the one a single core makes, in the same
// order (run it with -race too).
func TestDecideIsTheSameOnEveryCore(t *testing.T) {
	in := Inputs{Snapshot: wideSnapshot(300), State: reconcilers.NewState()}
	decideOn := func(cores int) Decision {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cores))
		return decide(t, in, t0)
	}
	one := decideOn(1)
	if len(one.Transitions) < 300 {
		t.Fatalf("the decision made %d transitions, too few to tell an order: %v", len(one.Transitions), one.Transitions)
	}
	for _, cores := range []int{2, 4} {
		if diff := cmp.Diff(one, decideOn(cores), cmpopts.IgnoreUnexported(Decision{})); diff != "" {
			t.Errorf("on %d cores the decision differs from one core's (-one +many):\n%s", cores, diff)
		}
	}
}

// BenchmarkDecideWide is a decision over a settled chain of 1,000 and
// 10,000 stages (the state the first decision wrote, read back): what every
// pass that changed anything pays.
func BenchmarkDecideWide(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := wideSnapshot(n)
			first := Decide(Inputs{Snapshot: snap, State: reconcilers.NewState()}, t0)
			files, err := reconcilers.EncodeState(first.State)
			if err != nil {
				b.Fatal(err)
			}
			state, errs := reconcilers.DecodeState(files)
			if len(errs) > 0 {
				b.Fatal(errs)
			}
			in := Inputs{Snapshot: snap, State: state}
			for b.Loop() {
				Decide(in, t0)
			}
		})
	}
}

// BenchmarkRunningVectors is what checking every stage's overlay against
// the vector it names costs a decision over a settled chain of 10,000
// stages.
func BenchmarkRunningVectors(b *testing.B) {
	snap := wideSnapshot(10000)
	state := Decide(Inputs{Snapshot: snap, State: reconcilers.NewState()}, t0).State
	for b.Loop() {
		if running, why := RunningVectors(snap, state.Vectors, nil); running != snap || why != nil {
			b.Fatalf("stages of a settled chain cleared: %v", why)
		}
	}
}
