package repofs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Tree is a read-only file tree rooted at a repository root: a commit's tree
// or a directory on disk. Names are slash-separated, relative to the root, clean.
//
// Symbolic links are followed while they stay inside the root, the way a
// checkout would see them; a link that leaves the root (absolute, or through
// "..") fails with an *EscapeError wrapping ErrSymlinkEscape.
type Tree interface {
	fs.ReadDirFS
	fs.ReadFileFS
	fs.StatFS
	// Hash identifies the content of the file or directory at name: the git
	// object hash for commit trees, a content hash for disk trees. Equal
	// hashes mean equal content. "." is the root.
	Hash(name string) (string, error)
}

// maxLinkHops bounds symlink resolution, as the kernel does (ELOOP).
const maxLinkHops = 40

// linkFunc reports whether name (whose parents contain no links) is a
// symbolic link and, if so, its target.
type linkFunc func(name string) (target string, isLink bool, err error)

// resolveLinks returns name with every symlink along it replaced by its
// target, refusing targets that leave the root.
func resolveLinks(op, name string, link linkFunc) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return ".", nil
	}
	parts := strings.Split(name, "/")
	resolved := "."
	hops := 0
	for i := 0; i < len(parts); i++ {
		p := path.Join(resolved, parts[i])
		if p == "." {
			continue
		}
		target, isLink, err := link(p)
		if err != nil {
			return "", &fs.PathError{Op: op, Path: name, Err: err}
		}
		if !isLink {
			resolved = p
			continue
		}
		hops++
		if hops > maxLinkHops {
			return "", &fs.PathError{Op: op, Path: name, Err: errors.New("too many levels of symbolic links")}
		}
		if path.IsAbs(target) || strings.HasPrefix(target, `\`) || (len(target) > 1 && target[1] == ':') {
			return "", &EscapeError{Ref: p, Target: target, Kind: ErrSymlinkEscape}
		}
		joined := path.Join(path.Dir(p), target)
		if joined == ".." || strings.HasPrefix(joined, "../") {
			return "", &EscapeError{Ref: p, Target: target, Kind: ErrSymlinkEscape}
		}
		rest := parts[i+1:]
		parts = append(strings.Split(joined, "/"), rest...)
		resolved = "."
		i = -1
	}
	return resolved, nil
}

// fileInfo is the fs.FileInfo of a tree entry.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }

// openFromTree implements fs.FS.Open over a tree's Stat, ReadFile and ReadDir,
// so both trees share one notion of an open file.
func openFromTree(t Tree, name string) (fs.File, error) {
	info, err := t.Stat(name)
	if err != nil {
		return nil, rename(err, "open")
	}
	if info.IsDir() {
		entries, err := t.ReadDir(name)
		if err != nil {
			return nil, rename(err, "open")
		}
		return &openDir{info: info, entries: entries}, nil
	}
	data, err := t.ReadFile(name)
	if err != nil {
		return nil, rename(err, "open")
	}
	return &openFile{info: info, r: bytes.NewReader(data)}, nil
}

func rename(err error, op string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: pe.Path, Err: pe.Err}
	}
	return err
}

type openFile struct {
	info fs.FileInfo
	r    *bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *openFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *openFile) Close() error               { return nil }

// ReadAt and Seek let callers treat the file like an *os.File.
func (f *openFile) ReadAt(b []byte, off int64) (int, error) { return f.r.ReadAt(b, off) }
func (f *openFile) Seek(off int64, whence int) (int64, error) {
	return f.r.Seek(off, whence)
}

type openDir struct {
	info    fs.FileInfo
	entries []fs.DirEntry
	pos     int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *openDir) Close() error { return nil }

func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.pos:]
	if n <= 0 {
		d.pos = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.pos += n
	return rest[:n], nil
}

func baseName(name string) string {
	if name == "." {
		return "."
	}
	return path.Base(name)
}

func notDir(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("not a directory: %w", fs.ErrInvalid)}
}
