package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
)

// TestLoadReusesUnchangedStages: a load takes each stage the last load
// resolved as it was, reading through its own tree, unless something it
// was resolved from changed: its overlay, its path, its landscape. After
// every commit the load is what a new Loader reads.
func TestLoadReusesUnchangedStages(t *testing.T) {
	dir := writeLargeRepository(t, 2, 3)
	commitDir(t, dir)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	step := func(name string, wantReused int) *Snapshot {
		t.Helper()
		before := loader.stagesReused
		snap := loadAndCompare(t, loader, dir)
		if reused := loader.stagesReused - before; reused != wantReused {
			t.Errorf("%s: %d stages reused, want %d", name, reused, wantReused)
		}
		return snap
	}
	step("first load", 0)

	edit(t, dir, "vectorflow/templates.yaml", "version: 1.x", "version: 2.x")
	snap := step("a template bumped", 6)
	for key, ref := range snap.StageIndex {
		if ref.Tree != snap.Tree || ref.Commit != snap.Commit {
			t.Errorf("a reused stage %s reads commit %s, want the load's %s through its tree", key, ref.Commit, snap.Commit)
		}
	}

	edit(t, dir, "overlays/land-00/stage-001/kustomization.yaml", `newTag: "1.0.1"`, `newTag: "1.7.0"`)
	snap = step("an overlay changed", 5)
	if got := snap.StageIndex["land-00/stage-001"].Vector.Images[0].Tag; got != "1.7.0" {
		t.Errorf("the changed overlay reads tag %s, want 1.7.0", got)
	}
	edit(t, dir, "vectorflow/templates.yaml", "version: 2.x", "version: 3.x")
	step("a template bumped after an overlay changed", 6)

	// The configs' file rewritten, every config between the same stages:
	// what they found wrong together is taken, not found again; a config
	// renamed is not the same configs.
	conflictsFound := func(name string, want bool) {
		t.Helper()
		before := loader.conflictsReused
		step(name, 6)
		if found := loader.conflictsReused == before; found != want {
			t.Errorf("%s: the configs' conflicts found again: %v, want %v", name, found, want)
		}
	}
	edit(t, dir, "vectorflow/configs.yaml", "ttlAfterFinished: 12h", "ttlAfterFinished: 24h")
	conflictsFound("the configs rewritten between the same stages", false)
	edit(t, dir, "vectorflow/configs.yaml", "name: land-00-stage-001", "name: land-00-stage-one")
	conflictsFound("a config renamed", true)

	// Two configs promote into one stage: a conflict over unchanged stages.
	edit(t, dir, "vectorflow/configs.yaml", "  target:\n    kind: Stage\n    name: stage-002\n    landscape: land-01", "  target:\n    kind: Stage\n    name: stage-000\n    landscape: land-01")
	before := loader.conflictsReused
	snap = step("a config's target changed", 6)
	if loader.conflictsReused != before {
		t.Errorf("a config's target changed: the configs' conflicts were taken from the load before")
	}
	if len(snap.ConfigConflicts()) == 0 {
		t.Errorf("two configs promoting into one stage do not conflict: %v", snap.Problems)
	}
	edit(t, dir, "vectorflow/templates.yaml", "version: 3.x", "version: 4.x")
	step("a template bumped beside a conflict", 6)

	// A stage moved to another overlay, which was there all along.
	if err := os.CopyFS(filepath.Join(dir, "overlays/land-00/moved"), os.DirFS(filepath.Join(dir, "overlays/land-00/stage-002"))); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "another overlay")
	step("an overlay added beside the stages", 6)
	edit(t, dir, "vectorflow/stages.yaml", "name: stage-002\nspec:\n  landscape: land-00\n  path: stage-002", "name: stage-002\nspec:\n  landscape: land-00\n  path: moved")
	snap = step("a stage's path changed", 5)
	if got := snap.StageIndex["land-00/stage-002"].Overlay; got != "overlays/land-00/moved" {
		t.Errorf("the moved stage's overlay is %s, want overlays/land-00/moved", got)
	}
	edit(t, dir, "vectorflow/landscapes.yaml", "path: overlays/land-01", "path: overlays/land-00")
	step("a landscape moved to another root", 3)
}

// TestLoadSeesOverlaysThroughLinksChange: an overlay reached through a
// link out of its landscape's root changes while the directory holding
// the link does not; the load reads the change.
func TestLoadSeesOverlaysThroughLinksChange(t *testing.T) {
	dir := writeLargeRepository(t, 1, 2)
	overlay := filepath.Join(dir, "overlays/land-00/stage-001")
	if err := os.Rename(overlay, filepath.Join(dir, "shared")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../shared", overlay); err != nil {
		t.Fatal(err)
	}
	commitDir(t, dir)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	loadAndCompare(t, loader, dir)
	edit(t, dir, "shared/kustomization.yaml", `newTag: "1.0.1"`, `newTag: "1.9.0"`)
	snap := loadAndCompare(t, loader, dir)
	if got := snap.StageIndex["land-00/stage-001"].Vector.Images[0].Tag; got != "1.9.0" {
		t.Errorf("the overlay behind the link reads tag %s, want 1.9.0", got)
	}
	if loader.stagesReused != 1 {
		t.Errorf("%d stages reused, want 1: the stage whose overlay is no link", loader.stagesReused)
	}
}

// loadAndCompare loads dir's fixtureBranch with loader and checks the
// snapshot's stages and problems are a new Loader's.
func loadAndCompare(t *testing.T, loader *Loader, dir string) *Snapshot {
	t.Helper()
	snap, err := loader.Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stageIndex(fresh), stageIndex(snap)); diff != "" {
		t.Errorf("the stages differ from a new Loader's (-new +this):\n%s", diff)
	}
	if diff := cmp.Diff(fresh.Problems, snap.Problems); diff != "" {
		t.Errorf("the problems differ from a new Loader's (-new +this):\n%s", diff)
	}
	if diff := cmp.Diff(fresh.ConfigConflicts(), snap.ConfigConflicts()); diff != "" {
		t.Errorf("the configs' conflicts differ from a new Loader's (-new +this):\n%s", diff)
	}
	for what, keys := range map[string][2][]string{
		"config names":        {fresh.ConfigNames(), snap.ConfigNames()},
		"stage keys":          {fresh.StageKeys(), snap.StageKeys()},
		"resolved stage keys": {fresh.ResolvedStageKeys(), snap.ResolvedStageKeys()},
	} {
		if diff := cmp.Diff(keys[0], keys[1]); diff != "" {
			t.Errorf("the %s differ from a new Loader's (-new +this):\n%s", what, diff)
		}
	}
	return snap
}

// edit replaces old by new in dir's file name and commits it.
func edit(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s holds no %q:\n%s", name, old, data)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "edit "+name)
}
