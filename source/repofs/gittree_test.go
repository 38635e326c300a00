package repofs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// readCounter counts the objects read from a storage.
type readCounter struct {
	storage.Storer
	reads int
}

func (c *readCounter) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	c.reads++
	return c.Storer.EncodedObject(t, h)
}

// TestGitObjectsDecodeOnlyChangedDirectories: the trees of two commits
// that share GitObjects read from the storage, for the second commit, only
// the directories and blobs it changed, and answer as a tree of their own.
func TestGitObjectsDecodeOnlyChangedDirectories(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const stages = 200
	overlay := func(i int) string { return fmt.Sprintf("apps/overlays/s%d/kustomization.yaml", i) }
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	for i := range stages {
		write(overlay(i), fmt.Sprintf("namespace: s%d\n", i))
	}
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "first")
	write(overlay(7), "namespace: seven, and longer\n")
	testutil.Git(t, dir, nil, "commit", "-qam", "second")

	counting := &readCounter{Storer: memory.NewStorage()}
	local := testutil.CopyGitObjects(t, dir, counting)
	repo, err := git.Init(counting, nil)
	if err != nil {
		t.Fatal(err)
	}
	treeOf := func(objects *GitObjects, rev string) Tree { return objects.Tree(rootAt(t, local, repo, rev)) }
	sizes := func(tree Tree) map[string]int64 {
		out := map[string]int64{}
		for i := range stages {
			info, err := tree.Stat(overlay(i))
			if err != nil {
				t.Fatal(err)
			}
			out[overlay(i)] = info.Size()
		}
		return out
	}

	shared := NewGitObjects()
	sizes(treeOf(shared, "main~1"))
	counting.reads = 0
	got := sizes(treeOf(shared, "main"))
	// The commit; the root, apps, apps/overlays and apps/overlays/s7; and
	// s7's blob.
	if counting.reads > 6 {
		t.Errorf("the second commit read %d objects, want only the commit, the 4 directories and 1 blob it changed", counting.reads)
	}
	counting.reads = 0
	want := sizes(treeOf(NewGitObjects(), "main"))
	if counting.reads < stages {
		t.Fatalf("a tree of its own read %d objects, fewer than its %d blobs: the count above proves nothing", counting.reads, stages)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sizes through shared objects %v, want %v", got, want)
	}
	if got[overlay(7)] != int64(len("namespace: seven, and longer\n")) {
		t.Errorf("the changed overlay's size is %d", got[overlay(7)])
	}

	// What no tree of the last two generations used is dropped: a run of
	// thousands of commits holds about two commits' directories.
	treeOf(shared, "main")
	treeOf(shared, "main")
	if n := len(shared.dirs) + len(shared.lastDirs) + len(shared.sizes) + len(shared.lastSize); n != 0 {
		t.Errorf("two generations that used nothing still hold %d directories and sizes", n)
	}
}

// TestGitTreeReadsSizesOnlyWhenAsked: finding files (Stat, ReadDir) reads
// no blob; a file's size, asked for, is its blob's, read once.
func TestGitTreeReadsSizesOnlyWhenAsked(t *testing.T) {
	counting := &readCounter{Storer: memory.NewStorage()}
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	want := map[string]int64{}
	for i := range 10 {
		name := fmt.Sprintf("s%d.yaml", i)
		content := strings.Repeat("namespace: s\n", i+1)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = int64(len(content))
	}
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "files")
	local := testutil.CopyGitObjects(t, dir, counting)
	repo, err := git.Init(counting, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := GitTree(rootAt(t, local, repo, "main"))

	counting.reads = 0
	entries, err := tree.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var infos []fs.FileInfo
	for _, e := range entries {
		info, err := tree.Stat(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if info.IsDir() {
			t.Errorf("%s is a directory", e.Name())
		}
		infos = append(infos, info)
	}
	if counting.reads != 0 {
		t.Errorf("listing and finding %d files read %d objects, want none", len(entries), counting.reads)
	}
	for _, info := range infos {
		if info.Size() != want[info.Name()] || info.Size() != info.Size() {
			t.Errorf("%s is %d bytes, want %d", info.Name(), info.Size(), want[info.Name()])
		}
	}
	if counting.reads != len(want) {
		t.Errorf("the sizes of %d files read %d objects, want one each", len(want), counting.reads)
	}
}

// rootAt is the root tree of the commit rev names in local, read through
// repo (a store holding the same objects).
func rootAt(t *testing.T, local, repo *git.Repository, rev string) *object.Tree {
	t.Helper()
	h, err := local.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		t.Fatal(err)
	}
	root, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
