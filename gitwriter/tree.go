package gitwriter

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/vectorflow-dev/vectorflow/internal/keys"
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
	return newTreeCache(s).edit(root, change, edits)
}

// edit is editTree with the trees it reads and writes kept in c, so the
// next edit of a batch (the next commit, built on this one's root) decodes
// none of them again.
func (c *treeCache) edit(root plumbing.Hash, change string, edits []FileEdit) (plumbing.Hash, []FileDiff, error) {
	c.written = c.written[:0]
	clear(c.replaced)
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
			if d.Old, d.Existed, err = c.readFile(root, p); err != nil {
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
	newRoot, _, err := c.writeTree(root, changes)
	if err != nil {
		return plumbing.ZeroHash, nil, &EditError{Change: change, Path: strings.Join(order, ", "), Err: err}
	}
	return newRoot, diffs, nil
}

// treeCache holds decoded trees by hash. go-git decodes a tree on every
// lookup through it, so reading n files of one wide directory (a state
// commit writing a record per stage, a batch of promotion commits each
// into its own overlay) cost n decodes of that directory; with the cache
// each directory is decoded once, and a tree this process wrote is never
// decoded at all. A tree's hash names its content, so an entry never goes
// stale; the cache only bounds its size.
type treeCache struct {
	s     storer.EncodedObjectStorer
	trees map[plumbing.Hash]*cachedTree
	// entries counts the entries held, to bound memory.
	entries int
	// written are the trees and blobs the last edit wrote: what its tree
	// holds that the tree it edited does not. replaced names, for each of
	// them that took the place of another at the same path, the one it
	// replaced: nearly the same content, which a push sends as a delta.
	written  []plumbing.Hash
	replaced map[plumbing.Hash]plumbing.Hash
}

// cachedTree is a tree's entries in git order (a directory sorts as if its
// name ended in "/"), names unique.
type cachedTree struct {
	entries []object.TreeEntry
}

// maxCachedEntries bounds a treeCache: about 100 bytes an entry, so 50 MB
// at most. A batch holds far fewer (the trees on the paths it edits): the
// bound only matters to a process writing to many parts of a huge tree.
const maxCachedEntries = 500_000

func newTreeCache(s storer.EncodedObjectStorer) *treeCache {
	return &treeCache{s: s, trees: map[plumbing.Hash]*cachedTree{}, replaced: map[plumbing.Hash]plumbing.Hash{}}
}

// tree returns the decoded tree h.
func (c *treeCache) tree(h plumbing.Hash) (*cachedTree, error) {
	if t, ok := c.trees[h]; ok {
		return t, nil
	}
	t, err := object.GetTree(c.s, h)
	if err != nil {
		return nil, err
	}
	ct := &cachedTree{entries: normalEntries(t.Entries)}
	c.put(h, ct)
	return ct, nil
}

func (c *treeCache) put(h plumbing.Hash, t *cachedTree) {
	if _, ok := c.trees[h]; ok {
		return
	}
	if c.entries+len(t.entries) > maxCachedEntries {
		c.trees, c.entries = map[plumbing.Hash]*cachedTree{}, 0
	}
	c.trees[h] = t
	c.entries += len(t.entries)
}

// drop forgets h, a tree an edit just replaced by a new version: the next
// commit builds on the new one.
func (c *treeCache) drop(h plumbing.Hash) {
	if t, ok := c.trees[h]; ok {
		c.entries -= len(t.entries)
		delete(c.trees, h)
	}
}

// normalEntries are entries in git order with unique names, as rewriting
// the tree writes them (the later of two entries of one name wins): a tree
// git wrote already is, and is returned as it is.
func normalEntries(entries []object.TreeEntry) []object.TreeEntry {
	ordered := true
	for i := 1; i < len(entries) && ordered; i++ {
		ordered = entrySortKey(entries[i-1]) < entrySortKey(entries[i])
	}
	if ordered {
		return entries
	}
	byName := map[string]object.TreeEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	out := make([]object.TreeEntry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// entrySortKey is where git sorts an entry: a directory as if its name
// ended in "/".
func entrySortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func sortEntries(entries []object.TreeEntry) {
	sort.Slice(entries, func(i, j int) bool { return entrySortKey(entries[i]) < entrySortKey(entries[j]) })
}

// find returns the index of the entry called name, by binary search: as a
// file it sorts at name, as a directory at name + "/".
func (t *cachedTree) find(name string) (int, bool) {
	for _, key := range [2]string{name, name + "/"} {
		i := sort.Search(len(t.entries), func(i int) bool { return entrySortKey(t.entries[i]) >= key })
		if i < len(t.entries) && t.entries[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// writeTree rewrites the tree h (zero when absent) with changes keyed by
// paths relative to it, and reports whether the result is empty so an
// emptied directory disappears as it does in git. Each tree on the changed
// paths is rewritten once, however many changes it holds; the others are
// kept by hash.
func (c *treeCache) writeTree(h plumbing.Hash, changes map[string]*FileDiff) (plumbing.Hash, bool, error) {
	var entries []object.TreeEntry
	if !h.IsZero() {
		t, err := c.tree(h)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("read tree %s: %w", h, err)
		}
		entries = make([]object.TreeEntry, len(t.entries), len(t.entries)+len(changes))
		copy(entries, t.entries)
	}
	base := &cachedTree{entries: entries}
	removed := map[int]bool{}
	added := map[string]int{}
	// index is where the entry called name is in entries.
	index := func(name string) (int, bool) {
		if i, ok := added[name]; ok {
			return i, true
		}
		if i, ok := base.find(name); ok && !removed[i] {
			return i, true
		}
		return 0, false
	}
	lookup := func(name string) (object.TreeEntry, bool) {
		if i, ok := index(name); ok {
			return entries[i], true
		}
		return object.TreeEntry{}, false
	}
	// set replaces or adds the entry called name; a replaced entry keeps
	// its place (a name never turns from file to directory here).
	set := func(name string, e object.TreeEntry) {
		if i, ok := index(name); ok {
			entries[i] = e
			return
		}
		added[name] = len(entries)
		entries = append(entries, e)
	}
	remove := func(name string) {
		if i, ok := index(name); ok {
			removed[i] = true
			delete(added, name)
		}
	}

	sub := map[string]map[string]*FileDiff{}
	for _, p := range sortedPaths(changes) {
		d := changes[p]
		dir, rest, nested := strings.Cut(p, "/")
		if nested {
			if sub[dir] == nil {
				sub[dir] = map[string]*FileDiff{}
			}
			sub[dir][rest] = d
			continue
		}
		old, had := lookup(p)
		if had && old.Mode == filemode.Dir {
			return plumbing.ZeroHash, false, fmt.Errorf("%s is a directory, not a file", d.Path)
		}
		if d.Removed {
			remove(p)
			continue
		}
		blob, err := writeBlob(c.s, d.New)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		c.written = append(c.written, blob)
		if had && old.Hash != blob {
			c.replaced[blob] = old.Hash
		}
		mode := filemode.Regular
		if had && old.Mode == filemode.Executable {
			mode = old.Mode
		}
		set(p, object.TreeEntry{Name: p, Mode: mode, Hash: blob})
	}
	for _, dir := range keys.Sorted(sub) {
		old, had := lookup(dir)
		oldHash := plumbing.ZeroHash
		if had {
			if old.Mode != filemode.Dir {
				return plumbing.ZeroHash, false, fmt.Errorf("%s is a file, not a directory", dir)
			}
			oldHash = old.Hash
		}
		subtree, empty, err := c.writeTree(oldHash, sub[dir])
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			remove(dir)
			continue
		}
		set(dir, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: subtree})
	}

	if len(removed) > 0 {
		kept := entries[:0]
		for i, e := range entries {
			if !removed[i] {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	if len(added) > 0 {
		sortEntries(entries)
	}
	nh, err := writeTreeObject(c.s, entries)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	c.written = append(c.written, nh)
	if !h.IsZero() && nh != h {
		c.replaced[nh] = h
	}
	if nh != h {
		c.drop(h)
		c.put(nh, &cachedTree{entries: entries})
	}
	return nh, len(entries) == 0, nil
}

// writeTreeObject stores a tree of entries (in git order), encoded as
// go-git's Tree.Encode does, in one write: Encode's many small writes grow
// the stored object's buffer to up to twice its size, and a batch of
// promotion commits stores a wide directory once per commit.
func writeTreeObject(s storer.EncodedObjectStorer, entries []object.TreeEntry) (plumbing.Hash, error) {
	size := 0
	for _, e := range entries {
		size += len("100644 ") + len(e.Name) + 1 + len(e.Hash)
	}
	b := make([]byte, 0, size)
	for _, e := range entries {
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, 0)
		b = append(b, e.Hash[:]...)
	}
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.TreeObject)
	obj.SetSize(int64(len(b)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(b); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

func sortedPaths(m map[string]*FileDiff) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
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

// readFile returns the content of p in the tree root; a missing file (or
// a missing tree) is not an error, a directory at p is.
func (c *treeCache) readFile(root plumbing.Hash, p string) ([]byte, bool, error) {
	if root.IsZero() {
		return nil, false, nil
	}
	t, err := c.tree(root)
	if err != nil {
		return nil, false, fmt.Errorf("read tree %s: %w", root, err)
	}
	parts := strings.Split(p, "/")
	for i, name := range parts[:len(parts)-1] {
		j, ok := t.find(name)
		if !ok {
			return nil, false, nil
		}
		e := t.entries[j]
		dir := strings.Join(parts[:i+1], "/")
		if e.Mode != filemode.Dir {
			return nil, false, fmt.Errorf("%s is a file, not a directory", dir)
		}
		if t, err = c.tree(e.Hash); err != nil {
			return nil, false, fmt.Errorf("read tree %s: %w", dir, err)
		}
	}
	j, ok := t.find(parts[len(parts)-1])
	if !ok {
		return nil, false, nil
	}
	e := t.entries[j]
	if !e.Mode.IsFile() {
		return nil, false, fmt.Errorf("%s is not a regular file", p)
	}
	blob, err := object.GetBlob(c.s, e.Hash)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	r, err := blob.Reader()
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
