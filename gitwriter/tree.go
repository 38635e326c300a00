package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// FileEdit is a semantic edit of one file, re-applied to the file as it is on
// the branch tip each time a push is retried, so a concurrent writer's change
// to the same file is kept, not overwritten.
type FileEdit struct {
	// Path is slash-separated and relative to the repository root.
	Path string
	// Edit gets the current content (nil, false when the file does not exist)
	// and returns the new content, or remove to delete the file. An error is
	// terminal: the whole change is dropped.
	Edit func(old []byte, exists bool) (content []byte, remove bool, err error)
}

// FileDiff is what one FileEdit did, for building a commit message.
type FileDiff struct {
	Path    string
	Old     []byte
	New     []byte
	Existed bool
	Removed bool
}

// SetFile is the FileEdit that writes content (nil removes the file): the
// edit for state files, which are whole objects.
func SetFile(p string, content []byte) FileEdit {
	return FileEdit{Path: p, Edit: func([]byte, bool) ([]byte, bool, error) {
		return content, content == nil, nil
	}}
}

// editTree applies edits to the tree root (zero for an empty repository),
// writes the new blobs and trees to s and returns the new root. Only the
// trees on the edited paths are rewritten; nothing is checked out.
func editTree(s storer.EncodedObjectStorer, root plumbing.Hash, change string, edits []FileEdit) (plumbing.Hash, []FileDiff, error) {
	var tree *object.Tree
	if !root.IsZero() {
		t, err := object.GetTree(s, root)
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("read tree %s: %w", root, err)
		}
		tree = t
	}

	pending := map[string]*FileDiff{}
	present := map[string]bool{}
	var order []string
	for _, e := range edits {
		p, err := cleanPath(e.Path)
		if err != nil {
			return plumbing.ZeroHash, nil, &EditError{Change: change, Path: e.Path, Err: err}
		}
		d, seen := pending[p]
		if !seen {
			d = &FileDiff{Path: p}
			if d.Old, d.Existed, err = readFile(tree, p); err != nil {
				return plumbing.ZeroHash, nil, &EditError{Change: change, Path: p, Err: err}
			}
			d.New = d.Old
			pending[p] = d
			present[p] = d.Existed
			order = append(order, p)
		}
		content, remove, err := e.Edit(d.New, present[p])
		if err != nil {
			return plumbing.ZeroHash, nil, &EditError{Change: change, Path: p, Err: err}
		}
		d.New, d.Removed, present[p] = content, remove, !remove
		if remove {
			d.New = nil
		}
	}

	changes := map[string]*FileDiff{}
	diffs := make([]FileDiff, 0, len(order))
	for _, p := range order {
		d := pending[p]
		diffs = append(diffs, *d)
		if d.Removed && !d.Existed || !d.Removed && d.Existed && bytes.Equal(d.Old, d.New) {
			continue
		}
		changes[p] = d
	}
	if len(changes) == 0 {
		return root, diffs, nil
	}
	newRoot, _, err := writeTree(s, tree, changes)
	if err != nil {
		return plumbing.ZeroHash, nil, &EditError{Change: change, Path: strings.Join(order, ", "), Err: err}
	}
	return newRoot, diffs, nil
}

// writeTree rewrites tree (nil when absent) with changes keyed by paths
// relative to it, and reports whether the result is empty so an emptied
// directory disappears as it does in git.
func writeTree(s storer.EncodedObjectStorer, tree *object.Tree, changes map[string]*FileDiff) (plumbing.Hash, bool, error) {
	entries := map[string]object.TreeEntry{}
	if tree != nil {
		for _, e := range tree.Entries {
			entries[e.Name] = e
		}
	}
	sub := map[string]map[string]*FileDiff{}
	for p, d := range changes {
		dir, rest, nested := strings.Cut(p, "/")
		if nested {
			if sub[dir] == nil {
				sub[dir] = map[string]*FileDiff{}
			}
			sub[dir][rest] = d
			continue
		}
		old, had := entries[p]
		if had && old.Mode == filemode.Dir {
			return plumbing.ZeroHash, false, fmt.Errorf("%s is a directory, not a file", d.Path)
		}
		if d.Removed {
			delete(entries, p)
			continue
		}
		blob, err := writeBlob(s, d.New)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		mode := filemode.Regular
		if had && old.Mode == filemode.Executable {
			mode = old.Mode
		}
		entries[p] = object.TreeEntry{Name: p, Mode: mode, Hash: blob}
	}
	for dir, c := range sub {
		var subtree *object.Tree
		if e, had := entries[dir]; had {
			if e.Mode != filemode.Dir {
				return plumbing.ZeroHash, false, fmt.Errorf("%s is a file, not a directory", dir)
			}
			t, err := object.GetTree(s, e.Hash)
			if err != nil {
				return plumbing.ZeroHash, false, fmt.Errorf("read tree %s: %w", dir, err)
			}
			subtree = t
		}
		h, empty, err := writeTree(s, subtree, c)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			delete(entries, dir)
			continue
		}
		entries[dir] = object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h}
	}

	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(entries))}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// Git sorts a directory as if its name ended in "/".
	sortKey := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return sortKey(t.Entries[i]) < sortKey(t.Entries[j]) })
	obj := s.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, err := s.SetEncodedObject(obj)
	return h, len(t.Entries) == 0, err
}

func writeBlob(s storer.EncodedObjectStorer, content []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// readFile returns the content of p in tree; a missing file (or a missing
// tree) is not an error, a directory at p is.
func readFile(tree *object.Tree, p string) ([]byte, bool, error) {
	if tree == nil {
		return nil, false, nil
	}
	// go-git cannot tell a file on the way from a missing directory; walk
	// the parents so the error says which.
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		e, err := tree.FindEntry(dir)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if e.Mode != filemode.Dir {
			return nil, false, fmt.Errorf("%s is a file, not a directory", dir)
		}
	}
	e, err := tree.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !e.Mode.IsFile() {
		return nil, false, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := tree.TreeEntryFile(e)
	if err != nil {
		return nil, false, err
	}
	r, err := f.Reader()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return b, true, err
}

// readTreeFiles returns every file under prefix ("" for all) in tree.
func readTreeFiles(tree *object.Tree, prefix string) (map[string][]byte, error) {
	files := map[string][]byte{}
	if tree == nil {
		return files, nil
	}
	prefix = strings.Trim(prefix, "/")
	err := tree.Files().ForEach(func(f *object.File) error {
		if prefix != "" && f.Name != prefix && !strings.HasPrefix(f.Name, prefix+"/") {
			return nil
		}
		s, err := f.Contents()
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Name, err)
		}
		files[f.Name] = []byte(s)
		return nil
	})
	return files, err
}

func cleanPath(p string) (string, error) {
	c := path.Clean(strings.TrimPrefix(p, "./"))
	if p == "" || c == "." || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q must be relative to the repository root and inside it", p)
	}
	return c, nil
}
