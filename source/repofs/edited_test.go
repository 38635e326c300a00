package repofs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestWithFileReadsAsTheCommitOfTheEdit: the tree WithFile makes answers
// every read and every hash as the commit that makes the same edit does,
// except the hashes of the directories above the file, which it does not
// know and refuses; names through a link read as before the edit, hashes
// included. A link, a directory or a missing file is not edited.
func TestWithFileReadsAsTheCommitOfTheEdit(t *testing.T) {
	const edited = "apps/overlays/dev/kustomization.yaml"
	files := map[string]string{
		edited:                         "resources:\n- ../../base\nimages:\n- name: app\n  newTag: \"1.0.0\"\n",
		"apps/overlays/dev/patch.yaml": "kind: Patch\n",
		"apps/base/kustomization.yaml": "resources:\n- app.yaml\n",
		"apps/base/app.yaml":           "kind: Deployment\n",
		"README.md":                    "readme\n",
	}
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
	for name, content := range files {
		write(name, content)
	}
	if err := os.Symlink("overlays/dev", filepath.Join(dir, "apps", "linked")); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "first")
	content := "resources:\n- ../../base\nimages:\n- name: app\n  newTag: \"2.0.0-a-longer-tag\"\n"
	write(edited, content)
	testutil.Git(t, dir, nil, "commit", "-qam", "promote")
	store := memory.NewStorage()
	local := testutil.CopyGitObjects(t, dir, store)
	repo, err := git.Init(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, after := GitTree(rootAt(t, local, repo, "HEAD~1")), GitTree(rootAt(t, local, repo, "HEAD"))

	view, err := WithFile(before, edited, []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	above := map[string]bool{".": true, "apps": true, "apps/overlays": true, "apps/overlays/dev": true}
	err = fs.WalkDir(after, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // read as the tree it came from holds it: below
		}
		want, werr := after.Stat(name)
		got, gerr := view.Stat(name)
		if werr != nil || gerr != nil || got.Size() != want.Size() || got.IsDir() != want.IsDir() {
			t.Errorf("Stat(%s) = %v, %v; the commit's %v, %v", name, got, gerr, want, werr)
			return nil
		}
		if d.IsDir() {
			wantEntries, _ := after.ReadDir(name)
			gotEntries, err := view.ReadDir(name)
			if err != nil || len(gotEntries) != len(wantEntries) {
				t.Errorf("ReadDir(%s) = %d entries, %v; the commit has %d", name, len(gotEntries), err, len(wantEntries))
			}
			for i := range min(len(gotEntries), len(wantEntries)) {
				gi, _ := gotEntries[i].Info()
				wi, _ := wantEntries[i].Info()
				if gotEntries[i].Name() != wantEntries[i].Name() || gi.Size() != wi.Size() {
					t.Errorf("ReadDir(%s)[%d] = %s of %d bytes; the commit's %s of %d", name, i, gotEntries[i].Name(), gi.Size(), wantEntries[i].Name(), wi.Size())
				}
			}
		} else {
			wantData, _ := after.ReadFile(name)
			gotData, err := view.ReadFile(name)
			if err != nil || string(gotData) != string(wantData) {
				t.Errorf("ReadFile(%s) = %q, %v; the commit's %q", name, gotData, err, wantData)
			}
			f, err := view.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			opened, _ := io.ReadAll(f)
			f.Close()
			if string(opened) != string(wantData) {
				t.Errorf("Open(%s) reads %q; the commit's %q", name, opened, wantData)
			}
		}
		wantHash, _ := after.Hash(name)
		gotHash, err := view.Hash(name)
		switch {
		case above[name] && err == nil:
			t.Errorf("Hash(%s) = %s; a directory above the edit has no known hash", name, gotHash)
		case !above[name] && (err != nil || gotHash != wantHash):
			t.Errorf("Hash(%s) = %s, %v; the commit's %s", name, gotHash, err, wantHash)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Through a link, a name is what the tree it came from holds, read
	// and hashed alike: the edit is only ever seen under its own name.
	linkedData, _ := view.ReadFile("apps/linked/kustomization.yaml")
	linkedHash, _ := view.Hash("apps/linked/kustomization.yaml")
	if oldHash, _ := before.Hash(edited); string(linkedData) != files[edited] || linkedHash != oldHash {
		t.Errorf("through the link: %q hashed %s, want the tree's own %q hashed %s", linkedData, linkedHash, files[edited], oldHash)
	}

	for _, name := range []string{"apps/linked/kustomization.yaml", "apps/overlays/dev", "apps/overlays/test/kustomization.yaml", "../x", "."} {
		if _, err := WithFile(before, name, []byte("x")); err == nil {
			t.Errorf("WithFile(%s) made a tree; want an error", name)
		}
	}
	if _, err := WithFile(DirTree(dir), edited, []byte("x")); err == nil || !strings.Contains(err.Error(), "commit") {
		t.Errorf("WithFile of a tree on disk: err = %v, want one saying it edits a commit's tree only", err)
	}
	if _, err := view.ReadFile("apps/overlays/dev/missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: err = %v, want fs.ErrNotExist", err)
	}
}
