package source

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
)

// conflictingRepository has three configs on two stages: a-to-b and b-to-a
// close a cycle, and b-to-a shares stage a with to-a.
func conflictingRepository(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	config := func(name, source, target string) string {
		return "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: " + name +
			"\nspec:\n  approval:\n    required: false\n  source:\n" + source + "  target:\n    kind: Stage\n    name: " + target + "\n    landscape: l\n"
	}
	stage := func(name string) string {
		return "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name + "\nspec:\n  landscape: l\n  path: overlays/" + name + "\n"
	}
	files := map[string]string{
		"vectorflow/objects.yaml": "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: l\nspec: {}\n" +
			"---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: app\nspec:\n  components:\n    - name: ghcr.io/acme/app\n      version: 1.0.0\n" +
			stage("a") + stage("b"),
		"vectorflow/configs.yaml": config("to-a", "    kind: VectorTemplate\n    name: app\n", "a") +
			config("a-to-b", "    kind: Stage\n    name: a\n    landscape: l\n", "b") +
			config("b-to-a", "    kind: Stage\n    name: b\n    landscape: l\n", "a"),
		"overlays/a/kustomization.yaml": "resources: []\n",
		"overlays/b/kustomization.yaml": "resources: []\n",
	}
	testutil.WriteFiles(t, dir, files)
	commitDir(t, dir)
	return dir
}

// TestSnapshotKnowsItsConfigConflicts: the conflicts a load finds between
// configs are the snapshot's, worded as a config's status says them (by
// name), the same as working them out afresh, in a snapshot loaded anew and
// in one a Loader hands out again from memory; the load's problems name
// the files as well.
func TestSnapshotKnowsItsConfigConflicts(t *testing.T) {
	dir := conflictingRepository(t)
	l := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	first, err := l.Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	configs := make([]*v1alpha1.VectorPromotionConfig, 0, len(first.Configs))
	for _, c := range first.Configs {
		configs = append(configs, c)
	}
	for name, errs := range v1alpha1.ValidateConfigsAt(configs, nil, first.OverlayOf) {
		for _, e := range errs {
			want[name] = append(want[name], e.Error())
		}
	}
	if len(want) != 3 || len(want["b-to-a"]) != 2 {
		t.Fatalf("the repository's configs conflict as %v, want a cycle and a shared stage", want)
	}
	for _, s := range []struct {
		name string
		snap *Snapshot
	}{{"loaded", first}, {"from memory", again}} {
		if diff := cmp.Diff(want, s.snap.ConfigConflicts()); diff != "" {
			t.Errorf("%s: conflicts (-afresh +snapshot):\n%s", s.name, diff)
		}
	}
	shared := 0
	for _, p := range first.Problems {
		if p.Kind == v1alpha1.VectorPromotionConfigKind && strings.Contains(p.Reason, "is also the target of") {
			shared++
			if !strings.Contains(p.Reason, "(vectorflow/configs.yaml)") {
				t.Errorf("problem %s does not name the other config's file", p)
			}
		}
	}
	if shared != 2 {
		t.Errorf("%d problems of a shared stage, want 2: %v", shared, first.Problems)
	}

	// A snapshot made by hand works its conflicts out each time it is asked.
	byHand := &Snapshot{Configs: maps.Clone(first.Configs), StageIndex: first.StageIndex}
	if diff := cmp.Diff(want, byHand.ConfigConflicts()); diff != "" {
		t.Errorf("made by hand: conflicts (-afresh +snapshot):\n%s", diff)
	}
	delete(byHand.Configs, "b-to-a")
	if got := byHand.ConfigConflicts(); len(got) != 0 {
		t.Errorf("made by hand, without b-to-a: conflicts %v, want none", got)
	}
}
