package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/internal/gitpack"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// writeLooseBlobs stores n blobs loose in repo's store, as a small fetch
// and the writer's few objects of a pass are stored, counted as written.
func writeLooseBlobs(t *testing.T, repo *Repository, n int) []plumbing.Hash {
	t.Helper()
	hashes := make([]plumbing.Hash, n)
	for i := range n {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		o.Write(fmt.Appendf(nil, "blob %d of %s\n", i, t.Name()))
		h, err := repo.store.storer.storeLoose(o)
		if err != nil {
			t.Fatal(err)
		}
		repo.store.storer.written.Add(1)
		hashes[i] = h
	}
	return hashes
}

// writeBlobs stores n new blobs (of salt) in repo's store as the writer
// does.
func writeBlobs(t *testing.T, repo *Repository, n int, salt string) []plumbing.Hash {
	t.Helper()
	hashes := make([]plumbing.Hash, n)
	for i := range n {
		hashes[i] = testutil.StoreBlob(t, repo.Storer(), fmt.Appendf(nil, "blob %d of %s %s\n", i, t.Name(), salt))
	}
	return hashes
}

// storeFixture serves testdata/good over HTTP; open opens a Repository
// over one cache directory, as a new process does.
func storeFixture(t *testing.T) (open func() *Repository, cacheDir string) {
	t.Helper()
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	cacheDir = t.TempDir()
	return func() *Repository {
		t.Helper()
		repo, err := OpenCached(srv.HTTPURL("config"), Auth{Username: srv.Username, Password: srv.Password}, cacheDir)
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}, cacheDir
}

// fetchBranch fetches the fixture's branch into repo's store.
func fetchBranch(t *testing.T, repo *Repository) plumbing.Hash {
	t.Helper()
	tip, err := repo.Fetch(context.Background(), fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

func readsAll(t *testing.T, repo *Repository, hashes []plumbing.Hash) {
	t.Helper()
	for _, h := range hashes {
		if _, err := repo.Storer().EncodedObject(plumbing.BlobObject, h); err != nil {
			t.Fatalf("object %s does not read: %v", h, err)
		}
	}
}

// findsAll checks that repo's store has and can size every object of
// hashes.
func findsAll(t *testing.T, repo *Repository, hashes []plumbing.Hash) {
	t.Helper()
	for _, h := range hashes {
		if err := repo.Storer().HasEncodedObject(h); err != nil {
			t.Fatalf("the store does not find %s: %v", h, err)
		}
		if _, err := repo.Storer().EncodedObjectSize(h); err != nil {
			t.Fatalf("the store cannot size %s: %v", h, err)
		}
	}
}

// TestStorePacksLooseObjects: a fetch into a store with many loose objects
// (the writer's) packs them and removes the loose copies old enough; every
// object still reads, in this process and in the next.
func TestStorePacksLooseObjects(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	fetchBranch(t, repo)
	gitDir := storeGitDirs(t, cacheDir)[0]
	_, packedBefore := storedObjects(t, gitDir)
	blobs := writeLooseBlobs(t, repo, 3000) // about 12 in each of the 256 directories

	// Below the limit, and too young to remove: nothing moves (whoever
	// wrote them: TestStorePacksARunsManyWritesForTheNextProcess).
	repo.store.looseLimit, repo.store.writtenLimit = 100, math.MaxInt64
	fetchBranch(t, repo)
	if loose, packed := storedObjects(t, gitDir); packed != packedBefore || loose < len(blobs) {
		t.Fatalf("under the limit: %d loose and %d packed objects, want the %d blobs loose and %d packed", loose, packed, len(blobs), packedBefore)
	}

	// Over it: packed, the loose copies kept while young.
	repo.store.looseLimit = 1
	fetchBranch(t, repo)
	loose, packed := storedObjects(t, gitDir)
	if packed < packedBefore+len(blobs) || loose < len(blobs) {
		t.Fatalf("over the limit: %d loose and %d packed objects, want the %d blobs packed and still loose", loose, packed, len(blobs))
	}
	readsAll(t, repo, blobs)

	// Old enough: the loose copies go.
	repo.store.looseAge = 0
	fetchBranch(t, repo)
	if loose, _ := storedObjects(t, gitDir); loose != 0 {
		t.Errorf("%d objects are still loose, want none", loose)
	}
	readsAll(t, repo, blobs)
	readsAll(t, open(), blobs)
	if err := checkStore(gitDir); err != nil {
		t.Errorf("the store is unreadable after the compaction: %v", err)
	}

	// Packed and their loose copies removed by one compaction: go-git's
	// own lookups in this process find them in the packs it just wrote.
	t.Run("at once", func(t *testing.T) {
		more := writeLooseBlobs(t, repo, 300)
		fetchBranch(t, repo)
		if loose, _ := storedObjects(t, gitDir); loose != 0 {
			t.Fatalf("%d objects are still loose, want none", loose)
		}
		for _, h := range more {
			if _, err := repo.store.storer.fs.EncodedObject(plumbing.BlobObject, h); err != nil {
				t.Fatalf("object %s does not read from the pack this process just wrote: %v", h, err)
			}
		}
	})
}

// TestStorePacksVersionsAsDeltas: versions of a file the writer noted as
// replacing one another are packed as deltas of the newest (git reads the
// pack and its chains), and each reads back as it was written, in this
// process and the next, once the loose copies are gone.
func TestStorePacksVersionsAsDeltas(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	fetchBranch(t, repo)
	gitDir := storeGitDirs(t, cacheDir)[0]
	const versions = 80
	var lines []byte
	for i := range 400 {
		lines = fmt.Appendf(lines, "stage%04d: Succeeded\n", i)
	}
	contents := map[plumbing.Hash][]byte{}
	var hashes []plumbing.Hash
	newer := plumbing.ZeroHash
	for v := versions; v > 0; v-- {
		content := fmt.Appendf(slices.Clone(lines), "sequence: %d\n", v)
		h := testutil.StoreBlob(t, repo.Storer(), content)
		contents[h] = content
		hashes = append(hashes, h)
		if !newer.IsZero() {
			repo.Storer().(VersionNoter).NoteVersions(map[plumbing.Hash]plumbing.Hash{newer: h})
		}
		newer = h
	}
	// Stored as a reference would store them (fewer than a pack's worth:
	// loose); unrelated blobs spread the versions over the order of the
	// loose objects.
	if err := repo.store.storer.storePending(); err != nil {
		t.Fatal(err)
	}
	blobs := writeLooseBlobs(t, repo, 300)
	repo.store.looseLimit, repo.store.looseAge = 1, 0
	fetchBranch(t, repo)
	if loose, _ := storedObjects(t, gitDir); loose != 0 {
		t.Fatalf("%d objects are still loose, want none", loose)
	}
	deltas := 0
	idxs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	for _, idx := range idxs {
		for _, line := range strings.Split(testutil.Git(t, gitDir, nil, "verify-pack", "-v", idx), "\n") {
			var length, count int
			if _, err := fmt.Sscanf(line, "chain length = %d: %d object", &length, &count); err == nil {
				deltas += count
			}
		}
	}
	if want := versions - 1 - versions/(gitpack.MaxDepth+1); deltas < want {
		t.Errorf("%d objects packed as deltas, want the %d older versions but one in %d", deltas, want, gitpack.MaxDepth+1)
	}
	for _, r := range []*Repository{repo, open()} {
		for _, h := range hashes {
			o, err := r.Storer().EncodedObject(plumbing.BlobObject, h)
			if err != nil {
				t.Fatalf("version %s does not read: %v", h, err)
			}
			rd, _ := o.Reader()
			got, _ := io.ReadAll(rd)
			rd.Close()
			if !bytes.Equal(got, contents[h]) {
				t.Fatalf("version %s reads back as %d other bytes", h, len(got))
			}
		}
		readsAll(t, r, blobs)
	}
	if err := checkStore(gitDir); err != nil {
		t.Errorf("the store is unreadable after the compaction: %v", err)
	}
}

// TestStoreReadersFindObjectsPackedElsewhere: a Repository that read the
// store before another one (another process, or the web view's reader)
// packed its loose objects and removed them finds them in the new pack.
func TestStoreReadersFindObjectsPackedElsewhere(t *testing.T) {
	open, cacheDir := storeFixture(t)
	reader := open()
	tip := fetchBranch(t, reader)
	blobs := writeLooseBlobs(t, reader, 50)
	readsAll(t, reader, blobs) // the reader's indexes are read now

	packer := open()
	packer.store.looseLimit, packer.store.looseAge = -1, 0
	fetchBranch(t, packer)
	if loose, _ := storedObjects(t, storeGitDirs(t, cacheDir)[0]); loose != 0 {
		t.Fatalf("%d objects are still loose, want none", loose)
	}
	readsAll(t, reader, blobs)
	findsAll(t, reader, blobs)
	if _, err := reader.Repo().CommitObject(tip); err != nil {
		t.Errorf("the fetched commit does not read: %v", err)
	}
}

// TestStoreRemovesLeftTemporaries: a temporary pack or object file a
// stopped process left goes at a fetch once it is an hour old; a young one,
// maybe still being written by another process, stays.
func TestStoreRemovesLeftTemporaries(t *testing.T) {
	open, _ := storeFixture(t)
	repo := open()
	fetchBranch(t, repo)
	packDir := filepath.Join(repo.store.gitDir(), "objects", "pack")
	left := func(name string, age time.Duration) string {
		p := filepath.Join(packDir, name)
		if err := os.WriteFile(p, []byte("torn"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldPack, oldObject := left("tmp_pack_123", 2*time.Hour), left("tmp_obj_456", 2*time.Hour)
	// An index whose pack never took its name: a writer stopped between
	// the two renames.
	orphan := left("pack-"+strings.Repeat("ab", 20)+".idx", 2*time.Hour)
	young := left("tmp_obj_789", time.Minute)
	youngIndex := left("pack-"+strings.Repeat("cd", 20)+".idx", time.Minute)
	fetchBranch(t, repo)
	for _, gone := range []string{oldPack, oldObject, orphan} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there (err %v)", filepath.Base(gone), err)
		}
	}
	for _, kept := range []string{young, youngIndex} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("a young file was removed: %v", err)
		}
	}
	if _, err := repo.Repo().CommitObject(fetchBranch(t, repo)); err != nil {
		t.Errorf("the store does not read after the orphan index went: %v", err)
	}
}

// commitWrittenTree commits, as the writer does, a child of parent whose tree
// adds a directory of n new blobs to parent's, and sets the tracking ref
// to it, as the next fetch does.
func commitWrittenTree(t *testing.T, repo *Repository, parent plumbing.Hash, n int) plumbing.Hash {
	t.Helper()
	dir := &object.Tree{}
	for i, h := range writeBlobs(t, repo, n, parent.String()) {
		dir.Entries = append(dir.Entries, object.TreeEntry{Name: fmt.Sprintf("blob-%05d", i), Mode: filemode.Regular, Hash: h})
	}
	prev, err := repo.Repo().CommitObject(parent)
	if err != nil {
		t.Fatal(err)
	}
	prevTree, err := prev.Tree()
	if err != nil {
		t.Fatal(err)
	}
	root := &object.Tree{Entries: append(slices.Clone(prevTree.Entries),
		object.TreeEntry{Name: "written-" + t.Name(), Mode: filemode.Dir, Hash: testutil.StoreObject(t, repo.Storer(), dir)})}
	sort.Slice(root.Entries, func(i, j int) bool { return root.Entries[i].Name < root.Entries[j].Name })
	sig := object.Signature{Name: "vectorflow", Email: "vectorflow@example.com", When: time.Unix(1700000000, 0)}
	commit := testutil.StoreObject(t, repo.Storer(), &object.Commit{Author: sig, Committer: sig, Message: "written\n",
		TreeHash: testutil.StoreObject(t, repo.Storer(), root), ParentHashes: []plumbing.Hash{parent}})
	ref := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, fixtureBranch)
	if err := repo.Storer().SetReference(plumbing.NewHashReference(ref, commit)); err != nil {
		t.Fatal(err)
	}
	return commit
}

// TestStorePacksARunsManyWritesForTheNextProcess: a run that wrote its
// commits without fetching packs them when it compacts (Compact) once they
// are many, though far fewer than a fetch waits for, and notes the tip it
// left as held whole by packs: the next process then takes it without
// walking its trees. Loose, each tree holding one of them would be walked
// and each of them opened by every process (50 ms at 1,000 stages after a
// first run's 4,000 objects). A run that wrote a few leaves them loose.
func TestStorePacksARunsManyWritesForTheNextProcess(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	tip := fetchBranch(t, repo)
	gitDir := storeGitDirs(t, cacheDir)[0]
	packsBefore := len(packObjects(t, gitDir))

	few := commitWrittenTree(t, repo, tip, 10)
	if err := repo.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if packs := len(packObjects(t, gitDir)); packs != packsBefore {
		t.Fatalf("a run that wrote %d objects left %d packs, want the %d there were", 13, packs, packsBefore)
	}

	many := commitWrittenTree(t, repo, few, compactWrittenLimit)
	if err := repo.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One pack of what it wrote since the last reference, one of the few
	// it stored loose before.
	if packs := len(packObjects(t, gitDir)); packs != packsBefore+2 {
		t.Fatalf("a run that wrote %d objects left %d packs, want two more than the %d there were", compactWrittenLimit+13, packs, packsBefore)
	}
	if loose, _ := storedObjects(t, gitDir); loose > 0 {
		if unpacked := looseUnpacked(t, repo, gitDir); unpacked > 0 {
			t.Fatalf("%d objects the run wrote are loose and in no pack", unpacked)
		}
	}
	next := open()
	packedTrees, packedHistory := map[plumbing.Hash]bool{}, map[plumbing.Hash]bool{}
	trees, _ := next.store.readWholeFile(storeWholeFile, storeWholeFormat, maxWholeTrees, time.Now())
	for _, h := range trees {
		packedTrees[h] = true
	}
	commits, _ := next.store.readWholeFile(storeHistoryFile, storeHistoryFormat, maxWholeHistory, time.Now())
	for _, h := range commits {
		packedHistory[h] = true
	}
	for _, c := range []plumbing.Hash{few, many} {
		commit, err := next.Repo().CommitObject(c)
		if err != nil {
			t.Fatal(err)
		}
		if !packedTrees[commit.TreeHash] && c == many {
			t.Errorf("the next process walks the tree of the tip the run left (%s): it is not noted as packed", c)
		}
		if !packedHistory[c] && c == many {
			t.Errorf("the next process walks the history of the tip the run left (%s): it is not noted as packed", c)
		}
	}
	if _, err := next.Fetch(context.Background(), fixtureBranch); err != nil {
		t.Fatalf("the next process's fetch: %v", err)
	}
}

// TestStoreFetchesDoNotPackEveryThousandWrites: a running run writes a
// promotion's objects between fetches for as long as it runs, and nothing
// ever merges packs, so what a pass wrote is stored loose and its fetches
// pack on git's count of loose objects only, not on what the process
// wrote (a pack every 25 promotions would make every later lookup go
// through hundreds of indexes); the run's end (Compact) packs what it
// wrote. A pass that wrote a hundred objects or more stores them as one
// pack, as git's unpackLimit does.
func TestStoreFetchesDoNotPackEveryThousandWrites(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	tip := fetchBranch(t, repo)
	gitDir := storeGitDirs(t, cacheDir)[0]
	packsBefore := len(packObjects(t, gitDir))

	const perPass = storeLooseObjects - 4 // with its tree, the root and the commit
	written := 0
	for written <= compactWrittenLimit {
		tip = commitWrittenTree(t, repo, tip, perPass)
		written += perPass + 3
		if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
			t.Fatal(err)
		}
	}
	if packs := len(packObjects(t, gitDir)); packs != packsBefore {
		t.Fatalf("fetches after %d objects written, fewer than %d a pass, left %d packs, want the %d there were", written, storeLooseObjects, packs, packsBefore)
	}
	if err := repo.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if packs := len(packObjects(t, gitDir)); packs != packsBefore+1 {
		t.Fatalf("Compact after %d objects written left %d packs, want one more than the %d there were", written, packs, packsBefore)
	}
	commitWrittenTree(t, repo, tip, storeLooseObjects)
	if packs := len(packObjects(t, gitDir)); packs != packsBefore+2 {
		t.Fatalf("a pass that wrote %d objects left %d packs, want one more than the %d there were", storeLooseObjects+3, packs, packsBefore+1)
	}
}

// looseUnpacked counts the loose objects of gitDir no pack of repo's store
// holds.
func looseUnpacked(t *testing.T, repo *Repository, gitDir string) int {
	t.Helper()
	s := repo.store.storer
	n := 0
	err := repo.store.fs.ForEachObjectHash(func(h plumbing.Hash) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.indexes = nil
		if !s.packed(h) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
