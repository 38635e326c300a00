package source

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/internal/gitpack"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestStoreOffersItsPackedEntries: the objects a run writes are packed,
// each version of a directory a delta of the next; the store offers those
// entries to a push (gitpack.Stored), which copies them into a pack git
// reads strictly, every object as written; an entry damaged on disk is
// refused, not sent.
func TestStoreOffersItsPackedEntries(t *testing.T) {
	open, cacheDir := storeFixture(t)
	repo := open()
	fetchBranch(t, repo)
	s := repo.store.storer
	stored, ok := repo.Storer().(gitpack.Stored)
	if !ok {
		t.Fatalf("the on-disk store (%T) offers no stored entries", repo.Storer())
	}

	// 150 versions of a 500-entry directory, newest first in a push.
	dir := &object.Tree{}
	var common []plumbing.Hash
	for i := range 500 {
		h := storeRaw(t, repo, plumbing.BlobObject, fmt.Appendf(nil, "%s file %d", t.Name(), i))
		dir.Entries = append(dir.Entries, object.TreeEntry{Name: fmt.Sprintf("stage-%05d", i), Mode: filemode.Regular, Hash: h})
		common = append(common, h)
	}
	newerOf, replaced := map[plumbing.Hash]plumbing.Hash{}, map[plumbing.Hash]plumbing.Hash{}
	var versions, blobs []plumbing.Hash
	for v := range 150 {
		blob := storeRaw(t, repo, plumbing.BlobObject, fmt.Appendf(nil, "%s %d", t.Name(), v))
		dir.Entries[v%len(dir.Entries)].Hash = blob
		h := testutil.StoreObject(t, repo.Storer(), dir)
		if len(versions) > 0 {
			newerOf[versions[0]], replaced[h] = h, versions[0]
		}
		versions = append([]plumbing.Hash{h}, versions...)
		blobs = append(blobs, blob)
	}
	s.NoteVersions(replaced)
	if _, ok := stored.StoredEntry(versions[0]); ok {
		t.Fatal("an object only memory holds is offered as stored")
	}
	if err := s.storePending(); err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for _, h := range append(versions, blobs...) {
		base, ok := stored.StoredEntry(h)
		if !ok {
			t.Fatalf("%s, packed, is not offered", h)
		}
		if !base.IsZero() {
			deltas++
			if newerOf[h] != base {
				t.Errorf("%s is offered as a delta of %s, want of its newer version %s", h, base, newerOf[h])
			}
		}
	}
	if deltas < len(versions)/2 {
		t.Errorf("%d of %d versions are offered as deltas, want most", deltas, len(versions))
	}

	// A push of them, with the directory files each version holds.
	objects := append(append(append([]plumbing.Hash{}, versions...), blobs...), common...)
	var pack bytes.Buffer
	if err := gitpack.Write(&pack, repo.Storer(), objects, newerOf); err != nil {
		t.Fatal(err)
	}
	receiver := t.TempDir()
	testutil.Git(t, receiver, nil, "init", "-q", "--bare")
	cmd := exec.Command("git", "--git-dir", receiver, "index-pack", "--strict", "--stdin")
	cmd.Stdin = bytes.NewReader(pack.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git index-pack --strict: %v\n%s", err, out)
	}
	for _, h := range versions[:3] {
		o, err := repo.Storer().EncodedObject(plumbing.TreeObject, h)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := o.Reader()
		var want bytes.Buffer
		want.ReadFrom(r)
		if got := testutil.Git(t, receiver, nil, "cat-file", "tree", h.String()); got != want.String() {
			t.Errorf("tree %s reads back as %d bytes, want %d", h, len(got), want.Len())
		}
	}

	// Damage one entry's last byte on disk: a later process refuses it.
	gitDir := storeGitDirs(t, cacheDir)[0]
	packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
	var damaged plumbing.Hash
	for _, p := range packs {
		idx := strings.TrimSuffix(p, ".pack") + ".idx"
		index, err := readIndex(idx)
		if err != nil {
			t.Fatal(err)
		}
		offset, err := index.FindOffset(versions[7])
		if err != nil {
			continue
		}
		info, _ := os.Stat(p)
		ends, err := entryEnds(index, uint64(info.Size()))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := os.ReadFile(p)
		body[ends[uint64(offset)]-1] ^= 0xff
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		damaged = versions[7]
	}
	if damaged.IsZero() {
		t.Fatal("no pack holds the version to damage")
	}
	later := open().Storer().(gitpack.Stored)
	if _, err := later.AppendStoredEntry(nil, damaged); err == nil || !strings.Contains(err.Error(), "CRC-32") {
		t.Errorf("a damaged entry: err = %v, want one about its CRC-32", err)
	}
}
