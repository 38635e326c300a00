package repofs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestDirTreeThroughALinkedRoot: a folder given by a symbolic link to it
// (a checkout under a linked home or /tmp) reads as the folder itself.
func TestDirTreeThroughALinkedRoot(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	testutil.WriteFiles(t, real, map[string]string{"apps/kustomization.yaml": "resources: []\n"})
	linked := filepath.Join(dir, "linked")
	if err := os.Symlink(real, linked); err != nil {
		t.Fatal(err)
	}
	want, got := DirTree(real), DirTree(linked)
	info, err := got.Stat(".")
	if err != nil || !info.IsDir() {
		t.Fatalf("Stat(.) through a linked root: %v, %v; want a directory", info, err)
	}
	entries, err := got.ReadDir(".")
	if err != nil || len(entries) != 1 || entries[0].Name() != "apps" {
		t.Fatalf("ReadDir(.) through a linked root: %v, %v; want apps", entries, err)
	}
	if data, err := got.ReadFile("apps/kustomization.yaml"); err != nil || string(data) != "resources: []\n" {
		t.Fatalf("ReadFile through a linked root: %q, %v", data, err)
	}
	wantHash, _ := want.Hash(".")
	if gotHash, err := got.Hash("."); err != nil || gotHash != wantHash {
		t.Fatalf("Hash(.) through a linked root: %s, %v; the folder's is %s", gotHash, err, wantHash)
	}
}

// TestDirTreeNeverReadsThroughALinkMadeSince: a tree remembers what it
// found at each name, so a file swapped for a link out of the tree after
// the tree first looked at it must still not be read through the link.
func TestDirTreeNeverReadsThroughALinkMadeSince(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	testutil.WriteFiles(t, root, map[string]string{"apps/app.yaml": "kind: ConfigMap\n"})
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("password: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tree := DirTree(root)
	if _, err := tree.Stat("apps/app.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.ReadDir("apps"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "apps", "app.yaml")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, file); err != nil {
		t.Fatal(err)
	}
	if data, err := tree.ReadFile("apps/app.yaml"); err == nil {
		t.Fatalf("read %q through a link out of the tree", data)
	}
	secretHash := plumbing.ComputeHash(plumbing.BlobObject, []byte("password: hunter2\n")).String()
	if h, err := tree.Hash("apps/app.yaml"); err == nil && h == secretHash {
		t.Fatal("hashed the content of a file out of the tree, through a link")
	}
	apps := filepath.Join(root, "apps")
	if err := os.RemoveAll(apps); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, apps); err != nil {
		t.Fatal(err)
	}
	if entries, err := tree.ReadDir("apps"); err == nil {
		t.Fatalf("listed %v through a link out of the tree", entries)
	}
}

// TestDirTreeEscapesAreRefused: a link out of the tree is refused however
// often the names on its way were looked at before.
func TestDirTreeEscapesAreRefused(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	testutil.WriteFiles(t, root, map[string]string{"apps/app.yaml": "kind: ConfigMap\n"})
	if err := os.Symlink("../../secret", filepath.Join(root, "apps", "out")); err != nil {
		t.Fatal(err)
	}
	tree := DirTree(root)
	for range 2 {
		if _, err := tree.Stat("apps/app.yaml"); err != nil {
			t.Fatal(err)
		}
		var escape *EscapeError
		if _, err := tree.ReadFile("apps/out"); !errors.As(err, &escape) {
			t.Fatalf("ReadFile through a link out of the tree: %v, want an escape error", err)
		}
		if _, err := tree.Stat("apps/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat of a missing file: %v, want not exist", err)
		}
	}
}
