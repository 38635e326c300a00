package gitwriter

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/keys"
)

func TestEditTree(t *testing.T) {
	base := map[string][]byte{
		"README.md":                             []byte("readme\n"),
		"apps/overlays/dev/kustomization.yaml":  []byte("dev\n"),
		"apps/overlays/prod/kustomization.yaml": []byte("prod\n"),
		"state/vectors/a.yaml":                  []byte("a\n"),
	}
	appendLine := func(p, line string) FileEdit {
		return FileEdit{Path: p, Edit: func(old []byte, exists bool) ([]byte, bool, error) {
			if !exists {
				return nil, false, errors.New("file does not exist")
			}
			return append(append([]byte{}, old...), line...), false, nil
		}}
	}
	tests := []struct {
		name    string
		edits   []FileEdit
		want    map[string][]byte
		same    bool
		wantErr string
	}{{
		name:  "edit a nested file, siblings untouched",
		edits: []FileEdit{appendLine("apps/overlays/dev/kustomization.yaml", "x\n")},
		want: map[string][]byte{"README.md": []byte("readme\n"), "apps/overlays/dev/kustomization.yaml": []byte("dev\nx\n"),
			"apps/overlays/prod/kustomization.yaml": []byte("prod\n"), "state/vectors/a.yaml": []byte("a\n")},
	}, {
		name: "create in a new directory, remove the last file of another",
		edits: []FileEdit{SetFile("state/promotions/p-1.yaml", []byte("p\n")), SetFile("state/vectors/a.yaml", nil),
			SetFile("./README.md", []byte("new\n"))},
		want: map[string][]byte{"README.md": []byte("new\n"), "apps/overlays/dev/kustomization.yaml": []byte("dev\n"),
			"apps/overlays/prod/kustomization.yaml": []byte("prod\n"), "state/promotions/p-1.yaml": []byte("p\n")},
	}, {
		name:  "two edits of one file compose",
		edits: []FileEdit{appendLine("README.md", "1\n"), appendLine("README.md", "2\n")},
		want: map[string][]byte{"README.md": []byte("readme\n1\n2\n"), "apps/overlays/dev/kustomization.yaml": []byte("dev\n"),
			"apps/overlays/prod/kustomization.yaml": []byte("prod\n"), "state/vectors/a.yaml": []byte("a\n")},
	}, {
		name:  "an edit that writes the same bytes changes nothing",
		edits: []FileEdit{SetFile("README.md", []byte("readme\n")), SetFile("absent.yaml", nil)},
		same:  true,
	}, {
		name:    "missing file the edit needs",
		edits:   []FileEdit{appendLine("apps/overlays/qa/kustomization.yaml", "x\n")},
		wantErr: `change "c": edit apps/overlays/qa/kustomization.yaml: file does not exist`,
	}, {
		name:    "path escaping the repository",
		edits:   []FileEdit{SetFile("../x", []byte("x"))},
		wantErr: `change "c": edit ../x: path "../x" must be relative to the repository root and inside it`,
	}, {
		name:    "a file where a directory is",
		edits:   []FileEdit{SetFile("apps/overlays", []byte("x"))},
		wantErr: `change "c": edit apps/overlays: apps/overlays is not a regular file`,
	}, {
		name:    "a directory under a file",
		edits:   []FileEdit{SetFile("README.md/x", []byte("x"))},
		wantErr: `change "c": edit README.md/x: README.md is a file, not a directory`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := memory.NewStorage()
			root, _, err := editTree(s, plumbing.ZeroHash, "seed", filesEdits(base))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := editTree(s, root, "c", tt.edits)
			if tt.wantErr != "" {
				var ee *EditError
				if err == nil || !errors.As(err, &ee) {
					t.Fatalf("want an EditError, got %v", err)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.same {
				if got != root {
					t.Errorf("tree changed to %s, want unchanged %s", got, root)
				}
				return
			}
			tree, err := object.GetTree(s, got)
			if err != nil {
				t.Fatal(err)
			}
			files, err := readTreeFiles(tree, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

func filesEdits(files map[string][]byte) []FileEdit {
	var edits []FileEdit
	for p, c := range files {
		edits = append(edits, SetFile(p, c))
	}
	return edits
}

// treeCountingStorer counts the tree objects read from a storer, by hash.
type treeCountingStorer struct {
	storer.EncodedObjectStorer
	treeReads map[plumbing.Hash]int
}

func (s *treeCountingStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if t == plumbing.TreeObject || t == plumbing.AnyObject {
		if o, err := s.EncodedObjectStorer.EncodedObject(plumbing.AnyObject, h); err == nil && o.Type() == plumbing.TreeObject {
			s.treeReads[h]++
		}
	}
	return s.EncodedObjectStorer.EncodedObject(t, h)
}

// wideRepository is n stage overlays side by side under apps/, the shape
// of a monorepo, and a state directory with a record per stage.
func wideRepository(n int) map[string][]byte {
	files := map[string][]byte{"README.md": []byte("readme\n")}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("apps/app%03d/overlays/dev/kustomization.yaml", i)] = []byte(fmt.Sprintf("app %d\n", i))
		files[fmt.Sprintf("stages/dev/app%03d.yaml", i)] = []byte(fmt.Sprintf("stage %d\n", i))
	}
	return files
}

// TestEditTreeReadsEachTreeOnce: a state commit writes a record per stage,
// all in one wide directory, and one edit reads each of them; the wide
// directory must be decoded once, not once per file (quadratic in the
// number of stages).
func TestEditTreeReadsEachTreeOnce(t *testing.T) {
	const n = 200
	mem := memory.NewStorage()
	root, _, err := editTree(mem, plumbing.ZeroHash, "seed", filesEdits(wideRepository(n)))
	if err != nil {
		t.Fatal(err)
	}
	s := &treeCountingStorer{EncodedObjectStorer: mem, treeReads: map[plumbing.Hash]int{}}
	var edits []FileEdit
	for i := 0; i < n; i++ {
		edits = append(edits, SetFile(fmt.Sprintf("stages/dev/app%03d.yaml", i), []byte(fmt.Sprintf("stage %d, now ready\n", i))))
	}
	if _, _, err := editTree(s, root, "state", edits); err != nil {
		t.Fatal(err)
	}
	for h, reads := range s.treeReads {
		if reads > 1 {
			t.Errorf("tree %s was read %d times, want once", h, reads)
		}
	}
}

// TestBatchOfCommitsReadsEachTreeOnce: commits built one on the other, each
// promoting one overlay of a wide apps/ directory, as a cold pass writes
// one per application, decode no tree twice, and the trees they wrote
// themselves not at all.
func TestBatchOfCommitsReadsEachTreeOnce(t *testing.T) {
	const n = 100
	mem := memory.NewStorage()
	root, _, err := editTree(mem, plumbing.ZeroHash, "seed", filesEdits(wideRepository(n)))
	if err != nil {
		t.Fatal(err)
	}
	s := &treeCountingStorer{EncodedObjectStorer: mem, treeReads: map[plumbing.Hash]int{}}
	c := newTreeCache(s)
	want := wideRepository(n)
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("apps/app%03d/overlays/dev/kustomization.yaml", i)
		content := []byte(fmt.Sprintf("app %d at v2\n", i))
		want[p] = content
		if root, _, err = c.edit(root, fmt.Sprintf("promote-%d", i), []FileEdit{SetFile(p, content)}); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for h, reads := range s.treeReads {
		total += reads
		if reads > 1 {
			t.Errorf("tree %s was read %d times, want once", h, reads)
		}
	}
	// The root and apps/ once, then each application's three directories.
	if limit := 2 + 3*n; total > limit {
		t.Errorf("%d tree reads for %d commits, want at most %d", total, n, limit)
	}
	if got := treeFiles(t, mem, root); !cmp.Equal(want, got) {
		t.Errorf("files after the batch (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestEditTreeIsTheTreeBuiltFromScratch: whatever the edits (new files in
// new directories, removals that empty a directory, edits of wide
// directories), the edited tree is the very tree git would build from the
// resulting files, so commits are the same as before trees were cached.
func TestEditTreeIsTheTreeBuiltFromScratch(t *testing.T) {
	rnd := rand.New(rand.NewPCG(17, 17))
	dirs := []string{"", "a", "a/b", "a/b/c", "apps/x/overlays/dev", "apps/y/overlays/dev", "apps/y/overlays/prod", "z"}
	names := []string{"k.yaml", "a", "a.yaml", "b-", "b", "z"}
	randomPath := func() string {
		return path.Join(dirs[rnd.IntN(len(dirs))], names[rnd.IntN(len(names))])
	}
	for round := 0; round < 300; round++ {
		files := map[string][]byte{}
		for i := rnd.IntN(20); i > 0; i-- {
			files[randomPath()] = []byte(fmt.Sprint(rnd.IntN(3)))
		}
		// A name is either a file or a directory: drop the files that
		// are directories of others.
		for p := range files {
			for q := range files {
				if strings.HasPrefix(q, p+"/") {
					delete(files, p)
				}
			}
		}
		s := memory.NewStorage()
		c := newTreeCache(s)
		root, _, err := c.edit(plumbing.ZeroHash, "seed", filesEdits(files))
		if err != nil {
			t.Fatal(err)
		}
		for commit := 0; commit < 3; commit++ {
			var edits []FileEdit
			// An edit reads the tree it starts from: a path must be a
			// file (or nothing) there and in the result.
			before := maps.Clone(files)
			for i := rnd.IntN(6); i > 0; i-- {
				p := randomPath()
				conflict := false
				for _, m := range []map[string][]byte{before, files} {
					for q := range m {
						conflict = conflict || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/")
					}
				}
				if conflict {
					continue
				}
				if _, ok := files[p]; ok && rnd.IntN(2) == 0 {
					delete(files, p)
					edits = append(edits, SetFile(p, nil))
					continue
				}
				files[p] = []byte(fmt.Sprint(rnd.IntN(3)))
				edits = append(edits, SetFile(p, files[p]))
			}
			if root, _, err = c.edit(root, "c", edits); err != nil {
				t.Fatal(err)
			}
			want := plumbing.ZeroHash
			if len(files) > 0 {
				if want, err = scratchTree(s, files); err != nil {
					t.Fatal(err)
				}
			}
			if root != want && !(len(files) == 0 && isEmptyTree(t, s, root)) {
				t.Fatalf("round %d commit %d: tree %s, built from scratch %s; files %v", round, commit, root, want, keys.Sorted(files))
			}
		}
	}
}

// scratchTree builds the tree of files the plain way: every directory's
// entries collected, sorted as git sorts them, written bottom-up.
func scratchTree(s storer.EncodedObjectStorer, files map[string][]byte) (plumbing.Hash, error) {
	children := map[string]map[string]bool{}
	for p := range files {
		for dir, name := path.Dir(p), path.Base(p); ; dir, name = path.Dir(dir), path.Base(dir) {
			if children[dir] == nil {
				children[dir] = map[string]bool{}
			}
			children[dir][name] = true
			if dir == "." {
				break
			}
		}
	}
	var build func(dir string) (plumbing.Hash, error)
	build = func(dir string) (plumbing.Hash, error) {
		t := &object.Tree{}
		for name := range children[dir] {
			p := path.Join(dir, name)
			if content, ok := files[p]; ok {
				h, err := writeBlob(s, content)
				if err != nil {
					return plumbing.ZeroHash, err
				}
				t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
				continue
			}
			h, err := build(p)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		sort.Slice(t.Entries, func(i, j int) bool {
			key := func(e object.TreeEntry) string {
				if e.Mode == filemode.Dir {
					return e.Name + "/"
				}
				return e.Name
			}
			return key(t.Entries[i]) < key(t.Entries[j])
		})
		obj := s.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return s.SetEncodedObject(obj)
	}
	return build(".")
}

func isEmptyTree(t *testing.T, s storer.EncodedObjectStorer, h plumbing.Hash) bool {
	t.Helper()
	tree, err := object.GetTree(s, h)
	return err == nil && len(tree.Entries) == 0
}

func treeFiles(t *testing.T, s storer.EncodedObjectStorer, root plumbing.Hash) map[string][]byte {
	t.Helper()
	tree, err := object.GetTree(s, root)
	if err != nil {
		t.Fatal(err)
	}
	files, err := readTreeFiles(tree, "")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestWriteTreeObjectIsGitsEncoding: trees are stored as go-git encodes
// them, whatever the modes and names.
func TestWriteTreeObjectIsGitsEncoding(t *testing.T) {
	s := memory.NewStorage()
	blob, err := writeBlob(s, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	entries := []object.TreeEntry{
		{Name: ".hidden", Mode: filemode.Regular, Hash: blob},
		{Name: "a", Mode: filemode.Dir, Hash: blob},
		{Name: "link", Mode: filemode.Symlink, Hash: blob},
		{Name: "run.sh", Mode: filemode.Executable, Hash: blob},
		{Name: "sub", Mode: filemode.Submodule, Hash: blob},
		{Name: "日本", Mode: filemode.Deprecated, Hash: blob},
	}
	for n := 0; n <= len(entries); n++ {
		want := s.NewEncodedObject()
		if err := (&object.Tree{Entries: entries[:n]}).Encode(want); err != nil {
			t.Fatal(err)
		}
		got, err := writeTreeObject(s, entries[:n])
		if err != nil {
			t.Fatal(err)
		}
		if got != want.Hash() {
			t.Errorf("%d entries: tree %s, go-git encodes %s", n, got, want.Hash())
		}
	}
}
