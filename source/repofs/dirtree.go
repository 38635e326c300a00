package repofs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// DirTree reads a directory on disk as it is (for pre-merge checks of a plain folder).
// Its hashes are the git object hashes the same content would have once
// committed (empty directories omitted, as git does), so a folder and the
// commit made from it share cache entries.
func DirTree(root string) Tree {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	// A root reached through a link is the folder it names: the tree's
	// own links are what resolve checks.
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	return &dirTree{root: root, seen: map[string]entry{}}
}

type dirTree struct {
	root string
	// seen remembers what lstat found at each name resolve walked
	// through: every overlay's build looks up the same directories again
	// (apps, apps/base, apps/overlays), and validating 1,000 overlays made
	// 217,000 lstat calls and took 15 % longer. A tree is made for one
	// load, so it answers as the directory was when first looked at.
	// Files are still opened afresh, and not through a symbolic link made
	// since (openNoFollow).
	mu   sync.Mutex
	seen map[string]entry
}

// entry is what lstat found at a name, and a link's target.
type entry struct {
	info   fs.FileInfo
	target string // set for a symbolic link
	err    error
}

func (t *dirTree) Open(name string) (fs.File, error) { return openFromTree(t, name) }

func (t *dirTree) Stat(name string) (fs.FileInfo, error) {
	resolved, err := t.resolveName("stat", name)
	if err != nil {
		return nil, err
	}
	e := t.lstat(resolved)
	if e.err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: e.err}
	}
	return fileInfo{name: baseName(name), size: e.info.Size(), mode: e.info.Mode()}, nil
}

// lstat is what lstat finds at the tree's name, first time looked at.
func (t *dirTree) lstat(name string) entry {
	t.mu.Lock()
	e, ok := t.seen[name]
	t.mu.Unlock()
	if ok {
		return e
	}
	full := t.root
	if name != "." {
		full = filepath.Join(t.root, filepath.FromSlash(name))
	}
	e.info, e.err = os.Lstat(full)
	switch {
	case e.err != nil:
		e.info, e.err = nil, unwrapPath(e.err)
	case e.info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		e.target, e.err = filepath.ToSlash(target), err
	}
	t.mu.Lock()
	t.seen[name] = e
	t.mu.Unlock()
	return e
}

// openNoFollow opens the file at full, a path resolve found no symbolic
// link on, refusing one made at its end since: a link is read as a link,
// never followed out of the tree.
func openNoFollow(full string) (*os.File, error) {
	return os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

func (t *dirTree) ReadFile(name string) ([]byte, error) {
	full, err := t.resolve("read", name)
	if err != nil {
		return nil, err
	}
	f, err := openNoFollow(full)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: unwrapPath(err)}
	}
	defer f.Close()
	// Sized by the file, as os.ReadFile does: a large file is not read
	// into buffers doubled a dozen times.
	var data bytes.Buffer
	if info, err := f.Stat(); err == nil && info.Size() < 1<<30 {
		data.Grow(int(info.Size()) + bytes.MinRead)
	}
	if _, err := data.ReadFrom(f); err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: unwrapPath(err)}
	}
	return data.Bytes(), nil
}

func (t *dirTree) ReadDir(name string) ([]fs.DirEntry, error) {
	full, err := t.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	dir, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPath(err)}
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPath(err)}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]fs.DirEntry, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: e.Name(), size: info.Size(), mode: info.Mode()}))
	}
	return out, nil
}

func (t *dirTree) Hash(name string) (string, error) {
	full, err := t.resolve("hash", name)
	if err != nil {
		return "", err
	}
	info, err := os.Lstat(full)
	if err != nil {
		return "", &fs.PathError{Op: "hash", Path: name, Err: unwrapPath(err)}
	}
	h, _, err := gitHash(full, info)
	if err != nil {
		return "", &fs.PathError{Op: "hash", Path: name, Err: err}
	}
	return h.String(), nil
}

// resolve follows symlinks inside the root and returns the OS path.
func (t *dirTree) resolve(op, name string) (string, error) {
	resolved, err := t.resolveName(op, name)
	if err != nil {
		return "", err
	}
	return filepath.Join(t.root, filepath.FromSlash(resolved)), nil
}

// resolveName follows symlinks inside the root and returns the tree's
// name for name with none left on it.
func (t *dirTree) resolveName(op, name string) (string, error) {
	return resolveLinks(op, name, func(p string) (string, bool, error) {
		e := t.lstat(p)
		return e.target, e.err == nil && e.info.Mode()&fs.ModeSymlink != 0, e.err
	})
}

// gitHash computes the git object hash of a file, link or directory; empty
// says the directory holds no files (git would not record it).
func gitHash(full string, info fs.FileInfo) (h plumbing.Hash, empty bool, err error) {
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return h, false, err
		}
		return plumbing.ComputeHash(plumbing.BlobObject, []byte(filepath.ToSlash(target))), false, nil
	case info.IsDir():
		return gitTreeHash(full)
	default:
		// Streamed: a huge file costs time to hash, never memory.
		f, err := openNoFollow(full)
		if err != nil {
			return h, false, err
		}
		defer f.Close()
		hasher := plumbing.NewHasher(plumbing.BlobObject, info.Size())
		if _, err := io.CopyN(hasher, f, info.Size()); err != nil {
			return h, false, err
		}
		return hasher.Sum(), false, nil
	}
}

func gitTreeHash(full string) (plumbing.Hash, bool, error) {
	entries, err := os.ReadDir(full)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	var tree object.Tree
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		h, empty, err := gitHash(filepath.Join(full, e.Name()), info)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			continue
		}
		mode := filemode.Regular
		switch {
		case info.IsDir():
			mode = filemode.Dir
		case info.Mode()&fs.ModeSymlink != 0:
			mode = filemode.Symlink
		case info.Mode()&0o111 != 0:
			mode = filemode.Executable
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: e.Name(), Mode: mode, Hash: h})
	}
	// git orders a directory as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(tree.Entries, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	obj := &plumbing.MemoryObject{}
	if err := tree.Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	return obj.Hash(), len(tree.Entries) == 0, nil
}

// unwrapPath strips *fs.PathError so callers re-wrap with the tree-relative
// name. A path through a file does not exist, as in a git tree.
func unwrapPath(err error) error {
	if errors.Is(err, syscall.ENOTDIR) {
		return fs.ErrNotExist
	}
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
