package controller

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// writeTree stores the tree of the files under dir ("" for the root).
func writeTree(t *testing.T, s *countingStore, files map[string]string, dir string) plumbing.Hash {
	t.Helper()
	var entries []object.TreeEntry
	subdirs := map[string]bool{}
	for name, content := range files {
		rel, ok := strings.CutPrefix(name, dir)
		if !ok {
			continue
		}
		if first, _, nested := strings.Cut(rel, "/"); nested {
			subdirs[first] = true
			continue
		}
		entries = append(entries, object.TreeEntry{Name: rel, Mode: filemode.Regular, Hash: testutil.StoreBlob(t, s, []byte(content))})
	}
	for sub := range subdirs {
		entries = append(entries, object.TreeEntry{Name: sub, Mode: filemode.Dir, Hash: writeTree(t, s, files, dir+sub+"/")})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return testutil.StoreObject(t, s, &object.Tree{Entries: entries})
}

// writeCommit stores a commit of the files.
func writeCommit(t *testing.T, s *countingStore, files map[string]string) plumbing.Hash {
	t.Helper()
	sig := object.Signature{Name: "t", When: time.Unix(0, 0)}
	return testutil.StoreObject(t, s, &object.Commit{TreeHash: writeTree(t, s, files, ""), Author: sig, Committer: sig})
}

// countingStore counts the objects read from a store.
type countingStore struct {
	*memory.Storage
	reads int
}

func (s *countingStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	s.reads++
	return s.Storage.EncodedObject(t, h)
}

// TestStateFilesReadOnlyWhatChanged: a pass over an unchanged state branch
// reads no object (an on-disk store inflates each one), a new commit reads
// its trees and only the blobs it changed, and what read returns is the
// commit's content and the caller's to change.
func TestStateFilesReadOnlyWhatChanged(t *testing.T) {
	s := &countingStore{Storage: memory.NewStorage()}
	commit := func(files map[string]string) plumbing.Hash { return writeCommit(t, s, files) }
	first := map[string]string{"stages/dev/a.yaml": "a: 1\n", "stages/dev/b.yaml": "b: 1\n", "configs/c.yaml": "c: 1\n"}
	second := map[string]string{"stages/dev/a.yaml": "a: 2\n", "stages/dev/b.yaml": "b: 1\n", "configs/c.yaml": "c: 1\n"}
	c1, c2 := commit(first), commit(second)
	var m stateFiles
	want := func(files map[string]string) map[string][]byte {
		out := map[string][]byte{}
		for k, v := range files {
			out[k] = []byte(v)
		}
		return out
	}

	s.reads = 0
	got, err := m.read(s, c1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want(first), got); diff != "" {
		t.Errorf("first read (-want +got):\n%s", diff)
	}
	got["configs/c.yaml"] = []byte("changed by the caller")

	s.reads = 0
	got, err = m.read(s, c1)
	if err != nil {
		t.Fatal(err)
	}
	if s.reads != 0 {
		t.Errorf("reading the same commit again read %d objects, want none", s.reads)
	}
	if diff := cmp.Diff(want(first), got); diff != "" {
		t.Errorf("second read of the same commit (-want +got):\n%s", diff)
	}

	s.reads = 0
	got, err = m.read(s, c2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want(second), got); diff != "" {
		t.Errorf("read of the next commit (-want +got):\n%s", diff)
	}
	// The commit, its root tree, stages and stages/dev, and the one blob
	// that changed: configs is the tree read before, so it is not read.
	if s.reads != 5 {
		t.Errorf("reading a commit that changed one file read %d objects, want 5 (commit, 3 trees, 1 blob)", s.reads)
	}

	// A directory gone, one new, one unchanged under a changed parent.
	third := map[string]string{"stages/dev/a.yaml": "a: 2\n", "stages/dev/b.yaml": "b: 1\n", "stages/test/t.yaml": "t: 1\n", "usages/u.yaml": "u: 1\n"}
	s.reads = 0
	got, err = m.read(s, commit(third))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want(third), got); diff != "" {
		t.Errorf("read of the third commit (-want +got):\n%s", diff)
	}
	// The commit, root, stages, stages/test, usages and their 2 blobs.
	if s.reads != 7 {
		t.Errorf("reading the third commit read %d objects, want 7 (commit, 4 trees, 2 blobs)", s.reads)
	}
}

// TestStateFilesSeeded: files remembered by an earlier process are taken
// only where their content hashes to the commit's blob; a remembered file
// that was altered is read from the store.
func TestStateFilesSeeded(t *testing.T) {
	s := &countingStore{Storage: memory.NewStorage()}
	files := map[string]string{"stages/dev/a.yaml": "a: 1\n", "configs/c.yaml": "c: 1\n"}
	commit := writeCommit(t, s, files)
	var m stateFiles
	m.seed(map[string][]byte{"stages/dev/a.yaml": []byte("a: 1\n"), "configs/c.yaml": []byte("c: forged\n")})
	s.reads = 0
	got, err := m.read(s, commit)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"stages/dev/a.yaml": []byte("a: 1\n"), "configs/c.yaml": []byte("c: 1\n")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read after a seed (-want +got):\n%s", diff)
	}
	// The commit, 4 trees, and the one blob the seed had wrong.
	if s.reads != 6 {
		t.Errorf("read %d objects, want 6 (commit, 4 trees, 1 blob)", s.reads)
	}
}

// TestStateFilesFollowEveryChange: reading one commit after another gives
// each commit's files exactly, whatever changed between them (a directory
// replaced by a file of its name and back, a nested directory gone, the
// first or last entries of a directory gone), and a read that fails
// half-way (a blob missing from the store) leaves nothing of that commit
// behind for the next read.
func TestStateFilesFollowEveryChange(t *testing.T) {
	s := &countingStore{Storage: memory.NewStorage()}
	commits := []map[string]string{
		{"stages/dev/a.yaml": "a: 1\n", "stages/dev/deep/d.yaml": "d: 1\n", "configs/c.yaml": "c: 1\n"},
		{"stages/dev": "now a file\n", "configs/c.yaml/x.yaml": "x: 1\n", "configs/b.yaml": "b: 1\n"},
		{"stages/dev/a.yaml": "a: 2\n", "configs/c.yaml": "c: 2\n"},
		{},
		{"stages/dev/a.yaml": "a: 1\n", "stages/dev/deep/d.yaml": "d: 1\n", "configs/c.yaml": "c: 1\n"},
		// The last entries of a directory gone, then the first.
		{"stages/dev/a.yaml": "a: 1\n", "configs/c.yaml": "c: 1\n"},
		{"stages/dev/a.yaml": "a: 1\n", "configs/c.yaml": "c: 1\n", "configs/d.yaml": "d: 1\n"},
		{"stages/dev/a.yaml": "a: 1\n", "configs/c.yaml": "c: 1\n"},
		{"stages/dev/a.yaml": "a: 1\n", "configs/d.yaml": "d: 1\n"},
	}
	var m stateFiles
	read := func(files map[string]string) {
		t.Helper()
		got, err := m.read(s, writeCommit(t, s, files))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{}
		for k, v := range files {
			want[k] = []byte(v)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("read of %v (-want +got):\n%s", files, diff)
		}
	}
	for _, files := range commits {
		read(files)
	}

	// A commit naming a blob the store does not hold, beside changes that
	// are read before it fails.
	missing := plumbing.NewHash("1111111111111111111111111111111111111111")
	good := testutil.StoreBlob(t, s, []byte("a: 9\n"))
	dev := testutil.StoreObject(t, s, &object.Tree{Entries: []object.TreeEntry{
		{Name: "a.yaml", Mode: filemode.Regular, Hash: good}, {Name: "a0.yaml", Mode: filemode.Regular, Hash: good},
		{Name: "b.yaml", Mode: filemode.Regular, Hash: missing}}})
	stages := testutil.StoreObject(t, s, &object.Tree{Entries: []object.TreeEntry{{Name: "dev", Mode: filemode.Dir, Hash: dev}}})
	root := testutil.StoreObject(t, s, &object.Tree{Entries: []object.TreeEntry{{Name: "stages", Mode: filemode.Dir, Hash: stages}}})
	sig := object.Signature{Name: "t", When: time.Unix(0, 0)}
	broken := testutil.StoreObject(t, s, &object.Commit{TreeHash: root, Author: sig, Committer: sig})
	if _, err := m.read(s, broken); err == nil {
		t.Fatal("reading a commit whose blob is missing succeeded")
	}
	for _, files := range commits {
		read(files)
	}
}
