package source

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// wideTree is a tree of n entries, as a directory of n overlays or a state
// branch's directory of n config statuses is: 10,000 entries make about
// 340 KB. salt makes each tree a new object.
func wideTree(n int, salt string) *object.Tree {
	t := &object.Tree{Entries: make([]object.TreeEntry, n)}
	for i := range t.Entries {
		t.Entries[i] = object.TreeEntry{Name: fmt.Sprintf("stage-%05d", i), Mode: filemode.Dir,
			Hash: plumbing.ComputeHash(plumbing.BlobObject, []byte(salt+fmt.Sprint(i)))}
	}
	return t
}

// TestStoreWritesLooseObjectsAtBestSpeed: the objects a process writes
// into its on-disk store are loose files git reads: a tree stored without
// compression (core.looseCompression 0), since half of it is hashes,
// which do not compress (a promotion in a repository of 10,000 stages
// rewrites trees of 300 to 500 KB, each 5 ms to deflate at best speed for
// a quarter fewer bytes, 1 ms stored); anything else deflated at zlib's
// fastest level, as git deflates its own loose objects (its default, 1).
// Writing an object twice keeps one file.
func TestStoreWritesLooseObjectsAtBestSpeed(t *testing.T) {
	open, _ := storeFixture(t)
	repo := open()
	tree := wideTree(2000, t.Name())
	h := testutil.StoreObject(t, repo.Storer(), tree)
	if again := testutil.StoreObject(t, repo.Storer(), tree); again != h {
		t.Fatalf("the same tree stored twice is %s, then %s", h, again)
	}
	storePending(t, repo)
	gitDir := repo.store.gitDir()
	file := loosePath(gitDir, h)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the tree is not a loose object: %v", err)
	}
	// RFC 1950: the top two bits of the second byte are the level class,
	// 0 for the fastest.
	if level := data[1] >> 6; level != 0 {
		t.Errorf("the loose object is deflated at level class %d, want 0 (best speed)", level)
	}
	z, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the loose object does not inflate: %v", err)
	}
	var encoded plumbing.MemoryObject
	if err := tree.Encode(&encoded); err != nil {
		t.Fatal(err)
	}
	if len(data) < int(encoded.Size()) {
		t.Errorf("the tree's loose file is %d bytes for %d of content: deflated, want it stored", len(data), encoded.Size())
	}
	out, err := exec.Command("git", "--git-dir", gitDir, "cat-file", "-t", h.String()).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "tree" {
		t.Fatalf("git cat-file -t %s: %v: %s", h, err, out)
	}
	text := bytes.Repeat([]byte("status:\n  phase: Succeeded\n"), 2000)
	blob := testutil.StoreBlob(t, repo.Storer(), text)
	storePending(t, repo)
	data, err = os.ReadFile(loosePath(gitDir, blob))
	if err != nil {
		t.Fatalf("the blob is not a loose object: %v", err)
	}
	if level := data[1] >> 6; level != 0 || len(data) > len(text)/2 {
		t.Errorf("a blob of %d bytes of text is a loose file of %d at level class %d, want it deflated at best speed", len(text), len(data), level)
	}
	if out, err := exec.Command("git", "--git-dir", gitDir, "cat-file", "blob", blob.String()).Output(); err != nil || !bytes.Equal(out, text) {
		t.Fatalf("git cat-file blob %s: %v (%d bytes)", blob, err, len(out))
	}
	if out, err := exec.Command("git", "--git-dir", gitDir, "fsck", "--no-dangling", "--connectivity-only").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	got, err := repo.Repo().TreeObject(h)
	if err != nil {
		t.Fatalf("go-git reads the tree back: %v", err)
	}
	if len(got.Entries) != len(tree.Entries) || got.Entries[1999] != tree.Entries[1999] {
		t.Fatalf("the tree read back has %d entries", len(got.Entries))
	}
	temporaries, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "tmp_*"))
	if len(temporaries) > 0 {
		t.Fatalf("temporary files left: %v", temporaries)
	}
}

// TestStoreKeepsWhatItWroteInMemory: an object the store wrote is read back
// from memory (a push packs the trees a commit just wrote), the same as
// from disk; one over the size the store holds whole is read from disk.
// The test swaps each loose file for another valid one after the write:
// what a read returns says where it came from.
func TestStoreKeepsWhatItWroteInMemory(t *testing.T) {
	open, _ := storeFixture(t)
	repo := open()
	store := func(content []byte) plumbing.Hash {
		t.Helper()
		h := storeRaw(t, repo, plumbing.BlobObject, content)
		if want := plumbing.ComputeHash(plumbing.BlobObject, content); h != want {
			t.Fatalf("stored as %s, want %s", h, want)
		}
		storePending(t, repo)
		return h
	}
	// replace makes the loose file of h hold other, still a valid object.
	replace := func(h plumbing.Hash, other []byte) {
		t.Helper()
		var b bytes.Buffer
		z := zlib.NewWriter(&b)
		fmt.Fprintf(z, "blob %d\x00", len(other))
		z.Write(other)
		z.Close()
		file := loosePath(repo.store.gitDir(), h)
		if err := os.Chmod(file, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b.Bytes(), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	read := func(h plumbing.Hash) []byte {
		t.Helper()
		o, err := repo.Storer().EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatal(err)
		}
		if o.Type() != plumbing.BlobObject {
			t.Fatalf("read %s back as a %s", h, o.Type())
		}
		return must(io.ReadAll(must(o.Reader())))
	}

	small := bytes.Repeat([]byte("small "), 1000)
	h := store(small)
	replace(h, []byte("not what was written"))
	if got := read(h); !bytes.Equal(got, small) {
		t.Errorf("the object just written was read from disk (%d bytes), not from memory", len(got))
	}
	if o, err := repo.Storer().EncodedObject(plumbing.BlobObject, h); err != nil || o.Hash() != h || o.Size() != int64(len(small)) {
		t.Errorf("the object kept in memory reads as %v", err)
	}
	// Held in memory, it is read without opening its file: go-git opens a
	// loose object's file before it looks in its cache.
	if err := os.Remove(loosePath(repo.store.gitDir(), h)); err != nil {
		t.Fatal(err)
	}
	if o, err := repo.Storer().EncodedObject(plumbing.AnyObject, h); err != nil || o.Size() != int64(len(small)) {
		t.Errorf("the object kept in memory was looked for on disk: %v", err)
	}
	if _, err := repo.Storer().EncodedObject(plumbing.TreeObject, h); err != plumbing.ErrObjectNotFound {
		t.Errorf("the blob kept in memory, asked for as a tree: %v, want %v", err, plumbing.ErrObjectNotFound)
	}

	large := bytes.Repeat([]byte("large "), storeLargeObject/6+1)
	h = store(large)
	replace(h, []byte("read from disk"))
	if got := read(h); string(got) != "read from disk" {
		t.Errorf("an object of %d bytes, over the %d the store holds whole, was kept in memory", len(large), storeLargeObject)
	}
}

// TestStoreReadsLooseObjectsOfAnotherProcess: loose objects another
// process wrote read back whole and typed, and one whose file holds
// other content reads as what it is, never under the name it was asked
// for.
func TestStoreReadsLooseObjectsOfAnotherProcess(t *testing.T) {
	open, _ := storeFixture(t)
	writer := open()
	tree := wideTree(2000, t.Name())
	h := testutil.StoreObject(t, writer.Storer(), tree)
	damaged := testutil.StoreBlob(t, writer.Storer(), []byte("what the name says"))
	file := loosePath(writer.store.gitDir(), damaged)
	other := loosePath(writer.store.gitDir(), testutil.StoreBlob(t, writer.Storer(), []byte("other content")))
	storePending(t, writer)
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, must(os.ReadFile(other)), 0o444); err != nil {
		t.Fatal(err)
	}

	reader := open()
	got, err := reader.Repo().TreeObject(h)
	if err != nil {
		t.Fatalf("another process's loose tree: %v", err)
	}
	if len(got.Entries) != len(tree.Entries) || got.Entries[1999] != tree.Entries[1999] {
		t.Fatalf("the tree read back has %d entries", len(got.Entries))
	}
	if _, err := reader.Storer().EncodedObject(plumbing.BlobObject, h); err != plumbing.ErrObjectNotFound {
		t.Errorf("a tree asked for as a blob: %v, want %v", err, plumbing.ErrObjectNotFound)
	}
	if _, err := reader.Storer().EncodedObject(plumbing.AnyObject, plumbing.ComputeHash(plumbing.BlobObject, []byte("never written"))); err != plumbing.ErrObjectNotFound {
		t.Errorf("an object nobody wrote: %v, want %v", err, plumbing.ErrObjectNotFound)
	}
	if o, err := reader.Storer().EncodedObject(plumbing.AnyObject, damaged); err == nil && o.Hash() == damaged {
		t.Errorf("a loose file holding other content was read as %s", damaged)
	}
}

// BenchmarkStoreWriteWideTree stores a tree of 10,000 entries (340 KB), the
// size of a directory of 10,000 overlays, into an on-disk store: what every
// commit a promotion writes there costs per wide directory it changes.
func BenchmarkStoreWriteWideTree(b *testing.B) { benchmarkStoreWideTree(b, false) }

// BenchmarkStoreWriteThenReadWideTree stores a wide tree and reads it back,
// as the push that sends it and the next pass's read of the state branch do.
func BenchmarkStoreWriteThenReadWideTree(b *testing.B) { benchmarkStoreWideTree(b, true) }

func benchmarkStoreWideTree(b *testing.B, readBack bool) {
	repo, err := OpenCached("http://127.0.0.1:1/unused.git", Auth{}, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var encoded plumbing.MemoryObject
	if err := wideTree(10_000, b.Name()).Encode(&encoded); err != nil {
		b.Fatal(err)
	}
	content, err := io.ReadAll(must(encoded.Reader()))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		i++
		// A new last entry's hash: a new object each time.
		binary.BigEndian.PutUint64(content[len(content)-8:], i)
		h := storeRaw(b, repo, plumbing.TreeObject, content)
		if !readBack {
			continue
		}
		read, err := repo.Storer().EncodedObject(plumbing.TreeObject, h)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := io.ReadAll(must(read.Reader())); err != nil || !bytes.Equal(got, content) {
			b.Fatalf("the tree read back differs (%v)", err)
		}
	}
}

// storeRaw stores content as an object of type typ in repo's store.
func storeRaw(tb testing.TB, repo *Repository, typ plumbing.ObjectType, content []byte) plumbing.Hash {
	tb.Helper()
	o := repo.Storer().NewEncodedObject()
	o.SetType(typ)
	o.SetSize(int64(len(content)))
	w, _ := o.Writer()
	w.Write(content)
	w.Close()
	h, err := repo.Storer().SetEncodedObject(o)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestStoreWritesLooseObjectsIntoAnEmptiedStore: a store whose objects
// directory was removed by hand under a running process (the cache is
// only a cache) still takes the objects the writer stores.
func TestStoreWritesLooseObjectsIntoAnEmptiedStore(t *testing.T) {
	open, _ := storeFixture(t)
	repo := open()
	objects := filepath.Join(repo.store.gitDir(), "objects")
	if err := os.RemoveAll(objects); err != nil {
		t.Fatal(err)
	}
	h := testutil.StoreObject(t, repo.Storer(), wideTree(10, t.Name()))
	if _, err := repo.Repo().TreeObject(h); err != nil {
		t.Fatalf("the tree stored does not read back: %v", err)
	}
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("open files cannot be counted here: %v", err)
	}
	return len(entries)
}

// TestStoreReadsLooseObjectsWithoutLeavingFilesOpen: reading the size of
// loose objects, and packing them, closes every file it opens. go-git's
// reader of a loose object's size leaves the file to the garbage
// collector to close, and a first run at 10,000 stages writes 43,000
// objects: compacting them between two collections ran out of file
// descriptors (20,000 here), and the store was left loose for the next
// process to pack (6 s of its warm run).
func TestStoreReadsLooseObjectsWithoutLeavingFilesOpen(t *testing.T) {
	open, _ := storeFixture(t)
	repo := open()
	fetchBranch(t, repo)
	blobs := writeLooseBlobs(t, repo, 300)
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no finalizer closes a file meanwhile
	runtime.GC()
	before := openFiles(t)
	for _, h := range blobs {
		if _, err := repo.Storer().EncodedObjectSize(h); err != nil {
			t.Fatal(err)
		}
	}
	if after := openFiles(t); after > before+10 {
		t.Errorf("reading the size of %d loose objects left %d files open", len(blobs), after-before)
	}
	before = openFiles(t)
	repo.store.writtenLimit = 100
	if err := repo.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, packed := storedObjects(t, repo.store.gitDir()); packed < len(blobs) {
		t.Fatalf("%d objects packed, want the %d blobs", packed, len(blobs))
	}
	if after := openFiles(t); after > before+10 {
		t.Errorf("packing %d loose objects left %d files open", len(blobs), after-before)
	}
}

// TestStoreKeepsSmallFetchesLooseAtBestSpeed: the objects of a small
// fetched pack, stored loose as git's unpackLimit does, are deflated at
// best speed too.
func TestStoreKeepsSmallFetchesLooseAtBestSpeed(t *testing.T) {
	open, _ := storeFixture(t)
	repo := open()
	fetchBranch(t, repo)
	files, err := filepath.Glob(filepath.Join(repo.store.gitDir(), "objects", "??", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the small fetch left no loose object (%v)", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if level := data[1] >> 6; level != 0 {
			t.Fatalf("%s is deflated at level class %d, want 0 (best speed)", file, level)
		}
	}
	if written := repo.store.storer.written.Load(); written != 0 {
		t.Errorf("a fetch counts %d objects as written by the process", written)
	}
}

// BenchmarkStoreReadLooseTrees reads back 100 loose trees of 2,000 entries
// that another process wrote (none in memory): what a push or compaction
// at the end of a chain of automatic stages does with the versions of
// the directories each hop rewrote.
func BenchmarkStoreReadLooseTrees(b *testing.B) {
	cache := b.TempDir()
	open := func() *Repository {
		repo, err := OpenCached("http://127.0.0.1:1/unused.git", Auth{}, cache)
		if err != nil {
			b.Fatal(err)
		}
		return repo
	}
	writer := open()
	trees := make([]plumbing.Hash, 100)
	for i := range trees {
		trees[i] = testutil.StoreObject(b, writer.Storer(), wideTree(2000, fmt.Sprint(b.Name(), i)))
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		reader := open()
		b.StartTimer()
		for _, h := range trees {
			o, err := reader.Storer().EncodedObject(plumbing.TreeObject, h)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, must(o.Reader())); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// storePending stores what repo's store holds pending, as it does before a
// reference names an object.
func storePending(t *testing.T, repo *Repository) {
	t.Helper()
	if err := repo.store.storer.storePending(); err != nil {
		t.Fatal(err)
	}
}
