package repofs

import (
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestUnlinked: a path is unlinked when no directory on it, nor itself,
// is a symbolic link; a link on the way, a missing name or a tree on disk
// is not.
func TestUnlinked(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"apps/overlays/dev/kustomization.yaml", "elsewhere/prod/kustomization.yaml"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("resources: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"apps/overlays/prod": "../../elsewhere/prod", "apps/linked": "overlays"} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "first")
	store := memory.NewStorage()
	local := testutil.CopyGitObjects(t, dir, store)
	repo, err := git.Init(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := GitTree(rootAt(t, local, repo, "HEAD"))
	for name, want := range map[string]bool{
		".":                                     true,
		"apps/overlays/dev":                     true,
		"apps/overlays/dev/kustomization.yaml":  true,
		"apps/overlays/prod":                    false, // a link
		"apps/overlays/prod/kustomization.yaml": false,
		"apps/linked/dev":                       false, // through a link
		"apps/overlays/test":                    false, // missing
	} {
		for _, tr := range []Tree{tree, LimitTree(tree, Limits{})} {
			if got := Unlinked(tr, name); got != want {
				t.Errorf("Unlinked(%T, %q) = %v, want %v", tr, name, got, want)
			}
		}
	}
	if Unlinked(DirTree(dir), "apps/overlays/dev") {
		t.Error("a tree on disk may change under its reader: it is never unlinked")
	}
}
