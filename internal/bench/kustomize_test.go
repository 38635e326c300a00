package bench

import (
	"maps"
	"strings"
	"testing"
)

func TestKustomizeAloneBuildsEveryOverlay(t *testing.T) {
	for _, shape := range []Shape{Chain, Apps} {
		repo, err := Generate(shape, 20, []byte("key"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(repo.Overlays) != 20 {
			t.Fatalf("%s: %d overlays listed for 20 stages: %v", shape, len(repo.Overlays), repo.Overlays)
		}
		if took, err := KustomizeAlone(repo, 2); err != nil || took <= 0 {
			t.Errorf("%s: KustomizeAlone = %v, %v; want a time and no error", shape, took, err)
		}
		// A broken overlay is an error naming it, whichever worker builds
		// it: not a time that skipped it.
		broken := repo
		broken.Files = maps.Clone(repo.Files)
		last := repo.Overlays[len(repo.Overlays)-1]
		broken.Files[last+"/kustomization.yaml"] = []byte("resources:\n  - ../../nowhere\n")
		for _, workers := range []int{0, 1, 3} {
			if _, err := KustomizeAlone(broken, workers); err == nil || !strings.Contains(err.Error(), last) {
				t.Errorf("%s, %d workers: KustomizeAlone of a broken overlay: err = %v, want one naming %s", shape, workers, err, last)
			}
		}
	}
}
