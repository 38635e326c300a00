package source

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// BenchmarkStoreVectors writes the vectors of 10,000 overlays after a load
// that read one of them anew (a promotion's commit): what a pass over a
// changed commit pays to keep the vectors for the next process.
func BenchmarkStoreVectors(b *testing.B) {
	disk := newConfigDisk(b.TempDir(), DefaultConfigPath, repofs.Limits{})
	vectors := map[string]vectorResult{}
	for i := range 10000 {
		vectors[fmt.Sprintf("%040d:%040d", i, i)] = vectorResult{vector: overlays.StageVector{
			Vector: fmt.Sprintf("app:1.%d.0", i),
			Images: []v1alpha1.VectorComponent{{Name: "ghcr.io/acme/service-a", Tag: fmt.Sprintf("1.%d.0", i)}},
		}}
	}
	disk.storeVectors("repo", vectors, nil)
	vectors, _ = disk.loadVectors("repo")
	if len(vectors) != 10000 {
		b.Fatalf("%d vectors read back, want 10000", len(vectors))
	}
	for b.Loop() {
		vectors["fresh"] = vectorResult{vector: overlays.StageVector{Vector: "app:2.0.0"}}
		disk.storeVectors("repo", vectors, nil)
	}
}

// TestStoreVectorsChecksWhatItHasNotKept: a vector read anew is written only
// if its JSON gives it back exactly (invalid UTF-8 does not), and is then
// kept, as is every vector read back from disk; one that does not come back
// is never kept, so it is checked, and left out, again.
func TestStoreVectorsChecksWhatItHasNotKept(t *testing.T) {
	disk := newConfigDisk(t.TempDir(), DefaultConfigPath, repofs.Limits{})
	good := overlays.StageVector{Vector: "app:1.0.0", Images: []v1alpha1.VectorComponent{{Name: "ghcr.io/acme/a", Tag: "1.0.0"}}}
	bad := overlays.StageVector{Vector: "app:\xff"}
	vectors := map[string]vectorResult{"good": {vector: good}, "bad": {vector: bad}}
	for round := range 2 {
		markKept(vectors, disk.storeVectors("repo", vectors, nil))
		if !vectors["good"].kept || vectors["bad"].kept {
			t.Fatalf("round %d: kept good %v, bad %v; want good only", round, vectors["good"].kept, vectors["bad"].kept)
		}
		back, _ := disk.loadVectors("repo")
		if len(back) != 1 || !back["good"].kept || !reflect.DeepEqual(back["good"].vector, good) {
			t.Fatalf("round %d: read back %+v, want the good vector only, kept", round, back)
		}
	}
}
