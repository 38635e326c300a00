package source

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestColdLoadReadsEveryOverlayOnce: a load with no cache reads the
// vectors of its overlays on every core; each stage gets its own overlay's
// vector, each overlay is read once, and an overlay that does not read is
// reported on its stage alone.
func TestColdLoadReadsEveryOverlayOnce(t *testing.T) {
	dir := writeLargeRepository(t, 2, 100)
	broken := filepath.Join(dir, "overlays", "land-01", "stage-042", "kustomization.yaml")
	if err := os.WriteFile(broken, []byte("images: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commitDir(t, dir)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	snap, err := loader.Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if loader.vectorsRead != 200 {
		t.Errorf("read %d overlays' vectors, want each of the 200 once", loader.vectorsRead)
	}
	if len(snap.StageIndex) != 199 {
		t.Errorf("%d stages resolved, want 199 (all but the broken one)", len(snap.StageIndex))
	}
	for l := range 2 {
		for s := range 100 {
			key := StageKey(fmt.Sprintf("land-%02d", l), fmt.Sprintf("stage-%03d", s))
			ref, ok := snap.StageIndex[key]
			if l == 1 && s == 42 {
				if ok {
					t.Errorf("the broken overlay's stage resolved: %+v", ref.Vector)
				}
				continue
			}
			if want := fmt.Sprintf("app:1.%d.%d", l, s); !ok || ref.Vector.Vector != want {
				t.Errorf("stage %s runs %q, want %q", key, ref.Vector.Vector, want)
			}
		}
	}
	if len(snap.Problems) != 1 || snap.Problems[0].Name != "stage-042" || !strings.Contains(snap.Problems[0].Reason, "cannot read the vector") {
		t.Errorf("problems %+v, want one on stage-042's vector", snap.Problems)
	}
}

// TestReadBudgetRunsOutAtOneOverlay: overlays' vectors parse on every core,
// yet a repository over --max-repository-size is refused at the same
// overlays on every load, as reads one after the other would refuse them.
func TestReadBudgetRunsOutAtOneOverlay(t *testing.T) {
	dir := writeLargeRepository(t, 1, 200)
	var used, overlays int64
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if strings.Contains(p, string(filepath.Separator)+"overlays"+string(filepath.Separator)) {
			overlays += info.Size()
		} else {
			used += info.Size()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	commitDir(t, dir)
	limits := repofs.Limits{MaxRepositorySize: used + overlays/2}
	var first []string
	for run := range 15 {
		loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), Limits: limits})
		snap, err := loader.Load(context.Background(), dir, fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		var refused []string
		for _, p := range snap.Problems {
			if strings.Contains(p.Reason, "--max-repository-size") {
				refused = append(refused, p.Name)
			}
		}
		if len(refused) == 0 || len(refused) == 200 {
			t.Fatalf("load %d refused %d of 200 overlays, want some but not all: %v", run, len(refused), snap.Problems)
		}
		if run == 0 {
			first = refused
		} else if !slices.Equal(refused, first) {
			t.Fatalf("load %d refused %d overlays from %s, load 0 %d from %s", run, len(refused), refused[0], len(first), first[0])
		}
	}
}
