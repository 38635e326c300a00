package repofs

import (
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// GitTree reads a commit's tree from a go-git object storage (in-memory or on disk).
// Submodule entries are invisible: their content is not part of the tree.
func GitTree(tree *object.Tree) Tree {
	return NewGitObjects().Tree(tree)
}

// GitObjects is what the trees of one object storage's commits share: the
// directories and blob sizes they decoded, by hash, so the tree of a new
// commit decodes only the directories that changed. A hash fixes an
// object's content, so nothing here can go stale. It keeps two
// generations: what the trees since the last Tree call used, and what the
// ones before did, so a run of thousands of commits holds about two
// commits' worth.
type GitObjects struct {
	// mu serialises every go-git call of the trees: go-git decodes a tree
	// object on every lookup, and Tree.FindEntry mutates the tree, which
	// the trees share.
	mu              sync.Mutex
	dirs, lastDirs  map[plumbing.Hash]*gitDir
	sizes, lastSize map[plumbing.Hash]int64
}

// NewGitObjects returns an empty GitObjects; use one per object storage.
func NewGitObjects() *GitObjects {
	return &GitObjects{dirs: map[plumbing.Hash]*gitDir{}, sizes: map[plumbing.Hash]int64{}}
}

// Tree reads a commit's tree, which must come from the object storage o is
// used for. It starts a generation: what no tree since uses is dropped at
// the next call.
func (o *GitObjects) Tree(tree *object.Tree) Tree {
	o.mu.Lock()
	o.lastDirs, o.dirs = o.dirs, map[plumbing.Hash]*gitDir{}
	o.lastSize, o.sizes = o.sizes, map[plumbing.Hash]int64{}
	o.mu.Unlock()
	return &gitTree{root: tree, shared: o, mu: &o.mu}
}

// dir returns a decoded directory by hash; o.mu must be held.
func (o *GitObjects) dir(h plumbing.Hash) (*gitDir, bool) { return generations(o.dirs, o.lastDirs, h) }

// size returns a blob's size by hash; o.mu must be held.
func (o *GitObjects) size(h plumbing.Hash) (int64, bool) { return generations(o.sizes, o.lastSize, h) }

// generations looks h up in this generation, then in the last, carrying
// what it finds there into this one.
func generations[V any](cur, last map[plumbing.Hash]V, h plumbing.Hash) (V, bool) {
	if v, ok := cur[h]; ok {
		return v, true
	}
	v, ok := last[h]
	if ok {
		cur[h] = v
	}
	return v, ok
}

// gitTree memoizes decoded directories and blob sizes in shared, and the
// entries it found by path.
type gitTree struct {
	root    *object.Tree
	shared  *GitObjects
	mu      *sync.Mutex // shared.mu
	entries map[string]gitEntry
}

type gitDir struct {
	tree   *object.Tree
	byName map[string]object.TreeEntry
}

// gitEntry is one resolved tree entry and the directory holding it.
type gitEntry struct {
	name   string
	entry  object.TreeEntry
	parent *gitDir // nil for the root
}

func (t *gitTree) Open(name string) (fs.File, error) { return openFromTree(t, name) }

func (t *gitTree) Stat(name string) (fs.FileInfo, error) {
	e, err := t.find("stat", name)
	if err != nil {
		return nil, err
	}
	return t.info(e), nil
}

func (t *gitTree) ReadFile(name string) ([]byte, error) {
	e, err := t.find("read", name)
	if err != nil {
		return nil, err
	}
	if e.entry.Mode == filemode.Dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.blob(e)
}

func (t *gitTree) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := t.find("readdir", name)
	if err != nil {
		return nil, err
	}
	if e.entry.Mode != filemode.Dir {
		return nil, notDir("readdir", name)
	}
	t.mu.Lock()
	d, err := t.dir(e)
	t.mu.Unlock()
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	out := make([]fs.DirEntry, 0, len(d.tree.Entries))
	for _, te := range d.tree.Entries {
		if te.Mode == filemode.Submodule {
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(t.info(gitEntry{name: te.Name, entry: te, parent: d})))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (t *gitTree) Hash(name string) (string, error) {
	e, err := t.find("hash", name)
	if err != nil {
		return "", err
	}
	return e.entry.Hash.String(), nil
}

// find resolves symlinks in name and returns its entry.
func (t *gitTree) find(op, name string) (gitEntry, error) {
	// Most names hold no link: one walk finds them, as every parent it
	// passes is a directory (lookup refuses any other). Only a name that
	// is not found or ends in a link resolves link by link.
	if fs.ValidPath(name) {
		if e, err := t.lookup(name); err == nil && e.entry.Mode != filemode.Symlink {
			return e, nil
		}
	}
	resolved, err := resolveLinks(op, name, func(p string) (string, bool, error) {
		e, err := t.lookup(p)
		if err != nil || e.entry.Mode != filemode.Symlink {
			return "", false, err
		}
		t.mu.Lock()
		target, err := t.blob(e)
		t.mu.Unlock()
		return string(target), true, err
	})
	if err != nil {
		return gitEntry{}, err
	}
	e, err := t.lookup(resolved)
	if err != nil {
		return gitEntry{}, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return e, nil
}

// lookup walks to name without following links; its parents must be directories.
func (t *gitTree) lookup(name string) (gitEntry, error) {
	if name == "." {
		return t.rootEntry(), nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lookupLocked(name)
}

func (t *gitTree) rootEntry() gitEntry {
	return gitEntry{name: ".", entry: object.TreeEntry{Name: ".", Mode: filemode.Dir, Hash: t.root.Hash}}
}

// lookupLocked is lookup with t.mu held. Every entry found is remembered,
// so resolving links along a path (each prefix in turn) and the thousands
// of overlays under one directory cost one step each.
func (t *gitTree) lookupLocked(name string) (gitEntry, error) {
	if e, ok := t.entries[name]; ok {
		return e, nil
	}
	parent, base := t.rootEntry(), name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		var err error
		if parent, err = t.lookupLocked(name[:i]); err != nil {
			return gitEntry{}, err
		}
		base = name[i+1:]
	}
	if parent.entry.Mode != filemode.Dir {
		return gitEntry{}, fs.ErrNotExist
	}
	d, err := t.dir(parent)
	if err != nil {
		return gitEntry{}, err
	}
	te, ok := d.byName[base]
	if !ok || te.Mode == filemode.Submodule {
		return gitEntry{}, fs.ErrNotExist
	}
	e := gitEntry{name: base, entry: te, parent: d}
	if t.entries == nil {
		t.entries = map[string]gitEntry{}
	}
	t.entries[name] = e
	return e, nil
}

// dir decodes a directory entry once per tree object; t.mu must be held.
func (t *gitTree) dir(e gitEntry) (*gitDir, error) {
	if d, ok := t.shared.dir(e.entry.Hash); ok {
		return d, nil
	}
	tree := t.root
	if e.parent != nil {
		var err error
		if tree, err = e.parent.tree.Tree(e.entry.Name); err != nil {
			return nil, err
		}
	}
	d := &gitDir{tree: tree, byName: make(map[string]object.TreeEntry, len(tree.Entries))}
	for _, te := range tree.Entries {
		d.byName[te.Name] = te
	}
	t.shared.dirs[e.entry.Hash] = d
	return d, nil
}

// blob reads a blob entry; t.mu must be held.
func (t *gitTree) blob(e gitEntry) ([]byte, error) {
	f, err := e.parent.tree.TreeEntryFile(&e.entry)
	if err != nil {
		return nil, err
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func (t *gitTree) info(e gitEntry) fs.FileInfo {
	info := fileInfo{name: e.name}
	switch e.entry.Mode {
	case filemode.Dir:
		info.mode = fs.ModeDir | 0o555
		return info
	case filemode.Symlink:
		info.mode = fs.ModeSymlink | 0o777
	case filemode.Executable:
		info.mode = 0o555
	default:
		info.mode = 0o444
	}
	return &blobInfo{fileInfo: info, tree: t, entry: e}
}

// blobInfo is a file's info that reads its size only when asked: finding
// a file (a kustomization in each of thousands of overlays) or listing a
// directory reads no blob.
type blobInfo struct {
	fileInfo
	tree  *gitTree
	entry gitEntry
}

// Size is 0 for a blob the storage does not hold; reading it fails.
func (i *blobInfo) Size() int64 {
	t, e := i.tree, i.entry
	t.mu.Lock()
	defer t.mu.Unlock()
	if size, ok := t.shared.size(e.entry.Hash); ok {
		return size
	}
	f, err := e.parent.tree.TreeEntryFile(&e.entry)
	if err != nil {
		return 0
	}
	t.shared.sizes[e.entry.Hash] = f.Size
	return f.Size
}
