package render

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// commitDir commits the files under dir (symlinks as links) into a new
// in-memory go-git repository and returns the commit's tree.
func commitDir(t testing.TB, dir string) repofs.Tree {
	t.Helper()
	wt := memfs.New()
	repo, err := git.Init(memory.NewStorage(), wt)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return wt.Symlink(target, rel)
		case d.IsDir():
			return wt.MkdirAll(rel, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := wt.Create(rel)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		return f.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return commitWorktree(t, repo)
}

func commitWorktree(t testing.TB, repo *git.Repository) repofs.Tree {
	t.Helper()
	w, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "test", Email: "test@example.com", When: time.Unix(1700000000, 0)}
	h, err := w.Commit("fixture", &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	return repofs.GitTree(tree)
}

// file is one entry of a generated fixture: content, or a symlink target.
type file struct {
	content string
	link    string
}

// writeFiles writes a fixture to a new temporary directory.
func writeFiles(t testing.TB, files map[string]file) string {
	t.Helper()
	dir := t.TempDir()
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.link != "" {
			if err := os.Symlink(f.link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// bothTrees writes a fixture to disk and commits it, for tests that must hold for both trees.
func bothTrees(t testing.TB, files map[string]file) (dir string, trees map[string]repofs.Tree) {
	t.Helper()
	dir = writeFiles(t, files)
	return dir, map[string]repofs.Tree{"repofs.DirTree": repofs.DirTree(dir), "repofs.GitTree": commitDir(t, dir)}
}
