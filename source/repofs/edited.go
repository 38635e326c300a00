package repofs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// WithFile is tree as it reads once the file name holds content: what a
// commit that edits name alone will hold, readable before the commit
// exists, so that its overlay can be built ahead. name must be a file of
// tree found without following a link.
//
// Every answer about a name comes whole from the edit or whole from tree,
// so a hash always identifies what is read under its name: name has the
// git blob hash of content, and the directories above it, whose hashes
// the edit changes, have none (Hash fails, and a cache of builds keeps
// nothing it cannot check). A name reached through a link reads, and
// hashes, as tree holds it: only the commit would show the edit there,
// and a build that read it so is kept under those older hashes.
func WithFile(tree Tree, name string, content []byte) (Tree, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: "edit", Path: name, Err: fs.ErrInvalid}
	}
	if !Unlinked(tree, name) {
		return nil, &fs.PathError{Op: "edit", Path: name, Err: errors.New("not a file of a commit's tree reached without a link")}
	}
	info, err := tree.Stat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "edit", Path: name, Err: errors.New("not a regular file")}
	}
	return &editedTree{Tree: tree, name: name, content: content,
		info: sizedInfo{FileInfo: info, size: int64(len(content))},
		hash: plumbing.ComputeHash(plumbing.BlobObject, content).String()}, nil
}

type editedTree struct {
	Tree
	name    string
	content []byte
	info    fs.FileInfo
	hash    string
}

// above says whether dir is a directory that holds the edited file.
func (t *editedTree) above(dir string) bool {
	return dir == "." || strings.HasPrefix(t.name, dir+"/")
}

func (t *editedTree) Open(name string) (fs.File, error) { return openFromTree(t, name) }

func (t *editedTree) ReadFile(name string) ([]byte, error) {
	if name == t.name {
		return append([]byte(nil), t.content...), nil
	}
	return t.Tree.ReadFile(name)
}

func (t *editedTree) Stat(name string) (fs.FileInfo, error) {
	if name == t.name {
		return t.info, nil
	}
	return t.Tree.Stat(name)
}

func (t *editedTree) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := t.Tree.ReadDir(name)
	if err != nil || name != path.Dir(t.name) {
		return entries, err
	}
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = e
		if e.Name() == path.Base(t.name) {
			out[i] = fs.FileInfoToDirEntry(t.info)
		}
	}
	return out, nil
}

func (t *editedTree) Hash(name string) (string, error) {
	switch {
	case name == t.name:
		return t.hash, nil
	case t.above(name):
		return "", &fs.PathError{Op: "hash", Path: name, Err: fmt.Errorf("holds %s, edited in memory", t.name)}
	}
	return t.Tree.Hash(name)
}

// sizedInfo is a file's info with the size of its edited content.
type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (i sizedInfo) Size() int64 { return i.size }
