package source

import (
	"fmt"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// askCounter counts the objects asked whether they are held.
type askCounter struct {
	storage.Storer
	asked int
}

func (c *askCounter) HasEncodedObject(h plumbing.Hash) error {
	c.asked++
	return c.Storer.HasEncodedObject(h)
}

// TestHoldsWholeWalksOnlyChangedTrees: once a commit is found whole, the
// next commit, which changes one file of many directories, costs a look at
// the trees it changed, not at every object; a store missing a blob of a
// changed tree is still found not whole.
func TestHoldsWholeWalksOnlyChangedTrees(t *testing.T) {
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	const dirs = 200
	for i := range dirs {
		writeFile(t, dir, fmt.Sprintf("apps/overlays/s%d/kustomization.yaml", i), fmt.Sprintf("namespace: s%d\n", i))
	}
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "first")
	writeFile(t, dir, "apps/overlays/s7/kustomization.yaml", "namespace: seven\n")
	testutil.Git(t, dir, nil, "commit", "-qam", "second")

	counting := &askCounter{Storer: memory.NewStorage()}
	local := testutil.CopyGitObjects(t, dir, counting)
	repo, err := git.Init(counting, nil)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(rev string) plumbing.Hash {
		h, err := local.ResolveRevision(plumbing.Revision(rev))
		if err != nil {
			t.Fatal(err)
		}
		return *h
	}

	d := &diskStore{}
	if err := d.holdsWhole(repo, commit("main~1")); err != nil {
		t.Fatal(err)
	}
	if counting.asked < dirs {
		t.Fatalf("the first commit: asked for %d objects, want every blob (%d)", counting.asked, dirs)
	}
	counting.asked = 0
	if err := d.holdsWhole(repo, commit("main")); err != nil {
		t.Fatal(err)
	}
	if counting.asked > 1 {
		t.Errorf("the next commit changed one file: asked for %d objects, want only the changed blob", counting.asked)
	}

	// A changed tree whose new blob is missing is not whole.
	writeFile(t, dir, "apps/overlays/s8/kustomization.yaml", "namespace: eight\n")
	testutil.Git(t, dir, nil, "commit", "-qam", "third")
	third, err := local.CommitObject(commit("main"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []plumbing.Hash{third.Hash, third.TreeHash} {
		o, err := local.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := counting.SetEncodedObject(o); err != nil {
			t.Fatal(err)
		}
	}
	tree, _ := third.Tree()
	for _, p := range []string{"apps", "apps/overlays", "apps/overlays/s8"} {
		e, err := tree.FindEntry(p)
		if err != nil {
			t.Fatal(err)
		}
		o, err := local.Storer.EncodedObject(plumbing.AnyObject, e.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := counting.SetEncodedObject(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.holdsWhole(repo, third.Hash); err == nil {
		t.Error("a commit whose changed blob is missing was found whole")
	}
}
