package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// askCounter counts the objects asked whether they are held.
type askCounter struct {
	storage.Storer
	asked  int
	hashes map[plumbing.Hash]bool // the objects asked for, when not nil
}

func (c *askCounter) HasEncodedObject(h plumbing.Hash) error {
	c.asked++
	if c.hashes != nil {
		c.hashes[h] = true
	}
	return c.Storer.HasEncodedObject(h)
}

// packCounter is askCounter over a store that takes fetched packs whole,
// as the store it wraps does.
type packCounter struct{ *askCounter }

func (c packCounter) PackfileWriter() (io.WriteCloser, error) {
	return c.Storer.(storer.PackfileWriter).PackfileWriter()
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

// TestPackedObjectsAreFoundInTheIndexes: whether the store holds a packed
// object is answered from the pack indexes, without looking for it loose
// first (an open() per object, go-git's order), also for a pack fetched
// after the indexes were read; an object in no pack is still not held.
func TestPackedObjectsAreFoundInTheIndexes(t *testing.T) {
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	commitMany := func(round int) {
		for i := range 2 * storeLooseObjects {
			writeFile(t, dir, fmt.Sprintf("apps/s%d/kustomization.yaml", i), fmt.Sprintf("namespace: s%d-%d\n", i, round))
		}
		testutil.Git(t, dir, nil, "add", ".")
		testutil.Git(t, dir, nil, "commit", "-qm", fmt.Sprintf("round %d", round))
	}
	commitMany(1)
	cache := t.TempDir()
	repo, err := OpenCached("file://"+dir, Auth{}, cache)
	if err != nil {
		t.Fatal(err)
	}
	gitDirs, _ := filepath.Glob(filepath.Join(cache, storesDir, "*", storeGitDir))
	if len(gitDirs) != 1 {
		t.Fatalf("want one store in %s, have %v", cache, gitDirs)
	}
	blob := func(tip plumbing.Hash) plumbing.Hash {
		t.Helper()
		c, err := repo.Repo().CommitObject(tip)
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.File("apps/s0/kustomization.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f.Hash
	}
	// Looking for h loose fails other than "not there": its loose
	// directory is a file.
	blockLoose := func(h plumbing.Hash) {
		t.Helper()
		p := filepath.Join(gitDirs[0], "objects", h.String()[:2])
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists: the object was stored loose, not packed", p)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for round := 1; round <= 2; round++ {
		if round == 2 {
			commitMany(2) // a second pack, fetched after the indexes were read
		}
		tip, err := repo.Fetch(context.Background(), "main")
		if err != nil {
			t.Fatal(err)
		}
		h := blob(tip)
		blockLoose(h)
		if err := repo.Storer().HasEncodedObject(h); err != nil {
			t.Errorf("round %d: a packed blob was looked for loose: %v", round, err)
		}
	}
	if err := repo.Storer().HasEncodedObject(plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("an object in no pack: %v, want not found", err)
	}
}

// TestWholeTreesOutliveTheProcess: a process finds the trees whole that an
// earlier one found whole in packs, without a walk; only what a fetch
// brought since is walked. A pack removed by hand, or a loose object, is
// never taken on the earlier process's word.
func TestWholeTreesOutliveTheProcess(t *testing.T) {
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	const dirs = 2 * storeLooseObjects // fetched as a pack, not as loose objects
	for i := range dirs {
		writeFile(t, dir, fmt.Sprintf("apps/overlays/s%d/kustomization.yaml", i), fmt.Sprintf("namespace: s%d\n", i))
	}
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "first")
	cache := t.TempDir()
	blob := func(name string) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "main:"+name)))
	}
	unchanged := blob("apps/overlays/s0/kustomization.yaml")

	// process fetches main as a new process would, and says which
	// objects it asked the store whether it holds.
	process := func() (asked map[plumbing.Hash]bool, err error) {
		t.Helper()
		repo, err := OpenCached("file://"+dir, Auth{}, cache)
		if err != nil {
			t.Fatal(err)
		}
		counting := &askCounter{Storer: repo.repo.Storer, hashes: map[plumbing.Hash]bool{}}
		if repo.repo, err = git.Open(packCounter{counting}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = repo.Fetch(context.Background(), "main")
		return counting.hashes, err
	}
	if asked, err := process(); err != nil || !asked[unchanged] {
		t.Fatalf("the first process (%v): did not ask for every blob", err)
	}
	if asked, err := process(); err != nil || len(asked) > 2 {
		t.Errorf("the next process, nothing fetched (%v): asked for %d objects, want only the tip", err, len(asked))
	}

	// A small fetch is kept loose: its trees are walked by every process
	// until they are packed, the others are not.
	writeFile(t, dir, "apps/overlays/s7/kustomization.yaml", "namespace: seven\n")
	testutil.Git(t, dir, nil, "commit", "-qam", "second")
	changed := blob("apps/overlays/s7/kustomization.yaml")
	for _, which := range []string{"the process that fetched one changed file", "the process after"} {
		asked, err := process()
		if err != nil || !asked[changed] || asked[unchanged] {
			t.Errorf("%s (%v): asked for the changed blob %t, an unchanged one %t; want only the changed one", which, err, asked[changed], asked[unchanged])
		}
	}
	gitDirs, _ := filepath.Glob(filepath.Join(cache, storesDir, "*", storeGitDir))
	if len(gitDirs) != 1 {
		t.Fatalf("want one store in %s, have %v", cache, gitDirs)
	}
	loose := filepath.Join(gitDirs[0], "objects", changed.String()[:2], changed.String()[2:])
	if err := os.Rename(loose, loose+".away"); err != nil {
		t.Fatalf("the changed blob is not loose: %v", err)
	}
	if asked, err := process(); err != nil || !asked[changed] {
		t.Errorf("a loose blob removed by hand (%v): the tree was taken as whole", err)
	}
	// (The store was found not whole, and fetched afresh.)

	// A pack removed by hand voids what was found whole in it.
	if _, err := process(); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(gitDirs[0], "objects", "pack", "pack-*.pack"))
	if len(packs) == 0 {
		t.Fatal("the store has no pack")
	}
	found := func() (trees, commits int) {
		d := &diskStore{dir: filepath.Dir(gitDirs[0])}
		wholeTrees, _ := d.readWholeFile(storeWholeFile, storeWholeFormat, maxWholeTrees, time.Now())
		wholeHistory, _ := d.readWholeFile(storeHistoryFile, storeHistoryFormat, maxWholeHistory, time.Now())
		return len(wholeTrees), len(wholeHistory)
	}
	if trees, commits := found(); trees == 0 || commits == 0 {
		t.Fatalf("the store's packs are there: %d trees and %d commits were taken as whole, want some of each", trees, commits)
	}
	if err := os.Rename(packs[0], packs[0]+".away"); err != nil {
		t.Fatal(err)
	}
	if trees, commits := found(); trees != 0 || commits != 0 {
		t.Errorf("a pack removed by hand: %d trees and %d commits were taken as whole, want none", trees, commits)
	}
}

// TestHoldsHistoryWalksMergesAndFindsEveryHole builds a history with merges
// (a pull request merged twice over, and a long first-parent line) and
// checks that the walk finds every commit of it and fails for a hole
// anywhere: on the first-parent line, on a merged side,
// and at the root.
func TestHoldsHistoryWalksMergesAndFindsEveryHole(t *testing.T) {
	mem := memory.NewStorage()
	commit := func(msg string, parents ...plumbing.Hash) plumbing.Hash {
		t.Helper()
		sig := object.Signature{Name: "a", Email: "a@example.com", When: time.Unix(0, 0).UTC()}
		return testutil.StoreObject(t, mem, &object.Commit{Message: msg, Author: sig, Committer: sig, ParentHashes: parents})
	}
	root := commit("root")
	line := []plumbing.Hash{root}
	for i := range 5000 { // deeper than a recursive walk would like
		line = append(line, commit(fmt.Sprint("line ", i), line[len(line)-1]))
	}
	side := commit("side", line[10])
	sideTwo := commit("side two", side)
	merge := commit("merge", line[len(line)-1], sideTwo)
	again := commit("merge again", merge, side)
	tip := commit("tip", again)
	all := append(slices.Clone(line), side, sideTwo, merge, again, tip)

	repo, err := git.Init(mem, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &diskStore{history: map[plumbing.Hash]bool{}}
	packed, err := d.holdsHistory(repo, tip)
	if err != nil {
		t.Fatalf("a whole history: %v", err)
	}
	if len(d.history) != len(all) {
		t.Errorf("the walk found %d commits whole, want the %d of the history", len(d.history), len(all))
	}
	for _, h := range all {
		if _, whole := d.history[h]; !whole {
			t.Errorf("commit %s is not found whole", h)
		}
	}
	if packed != 0 {
		t.Errorf("%d commits are noted as packed in a store without packs", packed)
	}

	for name, hole := range map[string]plumbing.Hash{"first-parent line": line[2500], "merged side": side, "root": root} {
		t.Run(name, func(t *testing.T) {
			holey := memory.NewStorage()
			for h, o := range mem.Objects {
				if h != hole {
					if _, err := holey.SetEncodedObject(o); err != nil {
						t.Fatal(err)
					}
				}
			}
			repo, err := git.Init(holey, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := &diskStore{history: map[plumbing.Hash]bool{}}
			_, err = d.holdsHistory(repo, tip)
			if !errors.Is(err, plumbing.ErrObjectNotFound) || !strings.Contains(err.Error(), hole.String()) {
				t.Fatalf("holdsHistory = %v, want object not found naming %s", err, hole)
			}
			if _, whole := d.history[tip]; whole {
				t.Errorf("the tip is noted whole though its history is not")
			}
		})
	}
}

// BenchmarkHoldsHistory: the first walk of a history of 10,000 commits, as
// a process makes once per store (later processes read the packed ones
// from storeHistoryFile), and the walk after one new commit, as every
// fetch that brings one makes.
func BenchmarkHoldsHistory(b *testing.B) {
	mem := memory.NewStorage()
	var tip plumbing.Hash
	sig := object.Signature{Name: "vectorflow", Email: "vectorflow@example.com", When: time.Unix(0, 0).UTC()}
	commit := func(parents ...plumbing.Hash) plumbing.Hash {
		return testutil.StoreObject(b, mem, &object.Commit{Message: "vectorflow: a state commit\n", Author: sig, Committer: sig, ParentHashes: parents})
	}
	tip = commit()
	for range 9999 {
		tip = commit(tip)
	}
	repo, err := git.Init(mem, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			d := &diskStore{history: map[plumbing.Hash]bool{}}
			if _, err := d.holdsHistory(repo, tip); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-new", func(b *testing.B) {
		d := &diskStore{history: map[plumbing.Hash]bool{}}
		if _, err := d.holdsHistory(repo, tip); err != nil {
			b.Fatal(err)
		}
		next := commit(tip)
		for b.Loop() {
			delete(d.history, next)
			if _, err := d.holdsHistory(repo, next); err != nil {
				b.Fatal(err)
			}
		}
	})
}
