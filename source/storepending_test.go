package source

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestStoreWritesObjectsOnceAReferenceNamesThem: what the writer stores is
// held in memory, readable at once, and reaches the disk only when a
// reference is about to name it (a fetch setting a tracking ref): loose
// when it is a few objects, one pack when many, one pack too once it
// outgrows the memory allowed. No reference on disk ever names an object
// only memory holds: a process that stops first leaves a store git finds
// whole, and its objects to be fetched again.
func TestStoreWritesObjectsOnceAReferenceNamesThem(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	tip := fetchBranch(t, repo)
	gitDir := storeGitDirs(t, cacheDir)[0]
	ref := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, fixtureBranch)
	fsck := func(when string) {
		t.Helper()
		if out, err := exec.Command("git", "--git-dir", gitDir, "fsck", "--connectivity-only", "--no-dangling").CombinedOutput(); err != nil {
			t.Fatalf("%s: git fsck: %v\n%s", when, err, out)
		}
	}
	// commit writes a child of parent adding n new blobs, as the writer
	// does, without setting a reference.
	commit := func(parent plumbing.Hash, n int) (plumbing.Hash, []plumbing.Hash) {
		t.Helper()
		blobs := writeBlobs(t, repo, n, parent.String())
		dir := &object.Tree{}
		for i, h := range blobs {
			dir.Entries = append(dir.Entries, object.TreeEntry{Name: fmt.Sprintf("blob-%05d", i), Mode: filemode.Regular, Hash: h})
		}
		root := &object.Tree{Entries: []object.TreeEntry{{Name: "written", Mode: filemode.Dir, Hash: testutil.StoreObject(t, repo.Storer(), dir)}}}
		sig := object.Signature{Name: "vectorflow", Email: "vectorflow@example.com", When: time.Unix(1700000000, 0)}
		c := testutil.StoreObject(t, repo.Storer(), &object.Commit{Author: sig, Committer: sig, Message: "written\n",
			TreeHash: testutil.StoreObject(t, repo.Storer(), root), ParentHashes: []plumbing.Hash{parent}})
		return c, append(blobs, c)
	}
	onDisk := func(hashes []plumbing.Hash) (loose int) {
		for _, h := range hashes {
			if _, err := os.Stat(loosePath(gitDir, h)); err == nil {
				loose++
			}
		}
		return loose
	}
	setRef := func(c plumbing.Hash) {
		t.Helper()
		if err := repo.Storer().SetReference(plumbing.NewHashReference(ref, c)); err != nil {
			t.Fatal(err)
		}
	}
	packsBefore := len(packObjects(t, gitDir))

	few, written := commit(tip, 5)
	if n := onDisk(written); n > 0 {
		t.Fatalf("%d of the %d objects just written are on disk before any reference names them", n, len(written))
	}
	findsAll(t, repo, written)
	if _, err := repo.Repo().CommitObject(few); err != nil {
		t.Fatalf("the commit just written does not read: %v", err)
	}
	// A process that stops now: the store on disk is whole without them.
	if err := open().Storer().HasEncodedObject(few); err != plumbing.ErrObjectNotFound {
		t.Errorf("another process finds a commit only memory holds: %v", err)
	}
	fsck("objects written, no reference set")

	setRef(few)
	if n := onDisk(written); n != len(written) {
		t.Fatalf("once a reference names them, %d of the %d objects are loose, want all", n, len(written))
	}
	if packs := len(packObjects(t, gitDir)); packs != packsBefore {
		t.Fatalf("%d objects stored as %d packs, want loose", len(written), packs-packsBefore)
	}
	fsck("a few objects stored")
	if _, err := open().Repo().CommitObject(few); err != nil {
		t.Fatalf("the next process does not read the commit: %v", err)
	}

	many, written := commit(few, storeLooseObjects)
	setRef(many)
	if n := onDisk(written); n > 0 {
		t.Fatalf("%d of the %d objects written are loose, want them packed", n, len(written))
	}
	if packs := len(packObjects(t, gitDir)); packs != packsBefore+1 {
		t.Fatalf("%d objects stored as %d packs, want one", len(written), packs-packsBefore)
	}
	fsck("many objects stored")
	for _, h := range written { // from the pack, not only from memory
		if _, err := repo.store.storer.fs.EncodedObject(plumbing.AnyObject, h); err != nil {
			t.Fatalf("object %s does not read from the pack this process just stored: %v", h, err)
		}
	}
	next := open()
	if c, err := next.Repo().CommitObject(many); err != nil {
		t.Fatalf("the next process does not read the commit: %v", err)
	} else if err := next.store.holdsWhole(next.Repo(), c.Hash); err != nil {
		t.Fatalf("the next process does not find the commit whole: %v", err)
	}

	// Over the memory allowed, pending objects are packed at once.
	repo.store.storer.pendingLimit = 64 << 10
	_, written = commit(many, 3000) // some 200 KB
	if packs := len(packObjects(t, gitDir)); packs < packsBefore+2 {
		t.Fatalf("%d objects over the memory allowed left %d new packs, want more than one", len(written), packs-packsBefore)
	}
	if held := repo.store.storer.pendingBytes; held >= repo.store.storer.pendingLimit {
		t.Fatalf("%d bytes held pending, over the %d allowed", held, repo.store.storer.pendingLimit)
	}
	if n := onDisk(written); n > 0 {
		t.Fatalf("%d of the objects written over the memory allowed are loose", n)
	}
	fsck("objects packed over the memory allowed")
}

// BenchmarkStorePendingPack stores what a held run's promotions leave
// pending as one pack: 200 versions of a 1,000-entry directory, each a
// delta of the next, with a new file each, as the commits into the
// directory of 1,000 applications do.
func BenchmarkStorePendingPack(b *testing.B) {
	repo, err := OpenCached("http://127.0.0.1:1/unused.git", Auth{}, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := repo.store.storer
	dir := wideTree(1000, b.Name())
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		round++
		replaced := map[plumbing.Hash]plumbing.Hash{}
		var older plumbing.Hash
		for v := range 200 {
			salt := fmt.Sprintf("%s %d %d", b.Name(), round, v)
			dir.Entries[v%len(dir.Entries)].Hash = storeRaw(b, repo, plumbing.BlobObject, []byte(salt))
			h := testutil.StoreObject(b, repo.Storer(), dir)
			if !older.IsZero() {
				replaced[h] = older // NoteVersions takes newer → older
			}
			older = h
		}
		s.NoteVersions(replaced)
		if err := s.storePending(); err != nil {
			b.Fatal(err)
		}
	}
}
