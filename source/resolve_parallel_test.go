package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/render"
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
