package source

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/render"
)

// TestSnapshotKeysAreSorted: a snapshot's config names and stage keys are
// its maps' keys in order, loaded anew or from memory, and still when a
// map was changed by hand after the load.
func TestSnapshotKeysAreSorted(t *testing.T) {
	dir := conflictingRepository(t)
	l := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	want := func(s *Snapshot) map[string][]string {
		return map[string][]string{"configs": slices.Sorted(maps.Keys(s.Configs)), "stages": slices.Sorted(maps.Keys(s.Stages)),
			"resolved": slices.Sorted(maps.Keys(s.StageIndex))}
	}
	got := func(s *Snapshot) map[string][]string {
		return map[string][]string{"configs": s.ConfigNames(), "stages": s.StageKeys(), "resolved": s.ResolvedStageKeys()}
	}
	for _, name := range []string{"loaded", "from memory"} {
		s, err := l.Load(context.Background(), dir, fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Configs) != 3 || len(s.Stages) != 2 || len(s.StageIndex) != 2 {
			t.Fatalf("%s: %d configs, %d stages, %d resolved; want 3, 2, 2", name, len(s.Configs), len(s.Stages), len(s.StageIndex))
		}
		if diff := cmp.Diff(want(s), got(s)); diff != "" {
			t.Errorf("%s: keys (-sorted +snapshot):\n%s", name, diff)
		}
		s.Configs["0-first"] = &v1alpha1.VectorPromotionConfig{}
		delete(s.Stages, "l/a")
		delete(s.StageIndex, "l/b")
		if diff := cmp.Diff(want(s), got(s)); diff != "" {
			t.Errorf("%s, changed by hand: keys (-sorted +snapshot):\n%s", name, diff)
		}
	}
}
