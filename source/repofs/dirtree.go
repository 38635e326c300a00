package repofs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	return &dirTree{root: root}
}

type dirTree struct{ root string }

func (t *dirTree) Open(name string) (fs.File, error) { return openFromTree(t, name) }

func (t *dirTree) Stat(name string) (fs.FileInfo, error) {
	full, err := t.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	info, err := os.Lstat(full)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: unwrapPath(err)}
	}
	return fileInfo{name: baseName(name), size: info.Size(), mode: info.Mode()}, nil
}

func (t *dirTree) ReadFile(name string) ([]byte, error) {
	full, err := t.resolve("read", name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: unwrapPath(err)}
	}
	return data, nil
}

func (t *dirTree) ReadDir(name string) ([]fs.DirEntry, error) {
	full, err := t.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPath(err)}
	}
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
	resolved, err := resolveLinks(op, name, func(p string) (string, bool, error) {
		full := filepath.Join(t.root, filepath.FromSlash(p))
		info, err := os.Lstat(full)
		if err != nil {
			return "", false, unwrapPath(err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return "", false, nil
		}
		target, err := os.Readlink(full)
		return filepath.ToSlash(target), true, err
	})
	if err != nil {
		return "", err
	}
	return filepath.Join(t.root, filepath.FromSlash(resolved)), nil
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
		f, err := os.Open(full)
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
