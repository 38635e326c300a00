package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// TestSetDepthsRefusesAHoleInTheStateBranch: the depth of a hold record
// orders the records made at the same instant, so a walk that stopped at a
// commit the store lacks would leave the older records at depth 0, newest
// of all. It must fail instead (the store's next fetch repairs it).
func TestSetDepthsRefusesAHoleInTheStateBranch(t *testing.T) {
	mem := memory.NewStorage()
	var line []plumbing.Hash
	for i := range 4 {
		sig := object.Signature{Name: "vectorflow", Email: "vectorflow@example.com", When: time.Unix(int64(i), 0).UTC()}
		c := &object.Commit{Message: "vectorflow: state", Author: sig, Committer: sig, TreeHash: plumbing.ZeroHash}
		if i > 0 {
			c.ParentHashes = []plumbing.Hash{line[i-1]}
		}
		line = append(line, testutil.StoreObject(t, mem, c))
	}
	tip := line[3]
	verdicts := []reconcilers.HoldVerdict{{Path: "holds/a", Commit: line[0].String()}, {Path: "holds/b", Commit: line[2].String()}}
	if err := setDepths(mem, tip, verdicts); err != nil {
		t.Fatal(err)
	}
	if verdicts[0].Depth != 3 || verdicts[1].Depth != 1 {
		t.Fatalf("depths %d and %d, want 3 and 1", verdicts[0].Depth, verdicts[1].Depth)
	}

	holey := &testutil.LackingStorer{EncodedObjectStorer: mem, Lacks: line[1]}
	verdicts = []reconcilers.HoldVerdict{{Path: "holds/a", Commit: line[0].String()}, {Path: "holds/b", Commit: line[2].String()}}
	if err := setDepths(holey, tip, verdicts); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("setDepths over a missing commit = %v (depths %d, %d), want object not found", err, verdicts[0].Depth, verdicts[1].Depth)
	}
}
