package repofs

import "github.com/go-git/go-git/v5/plumbing/filemode"

// Immutable reports whether tree is a commit's tree (GitTree), or LimitTree
// of one: what is read from it never changes, so a reader may remember it.
// A directory on disk, or any other wrapper, is not.
func Immutable(tree Tree) bool {
	switch t := tree.(type) {
	case *gitTree:
		return true
	case *limitTree:
		return Immutable(t.Tree)
	}
	return false
}

// Unlinked reports whether name is found in tree without following a
// link: no directory on its path, nor name itself, is a symbolic link. Then
// what name holds is the content of the directories it is under, which
// a link could take from elsewhere. Only a commit's tree (or LimitTree of
// one) answers; for any other it is false.
func Unlinked(tree Tree, name string) bool {
	switch t := tree.(type) {
	case *gitTree:
		e, err := t.lookup(name)
		return err == nil && e.entry.Mode != filemode.Symlink
	case *limitTree:
		return Unlinked(t.Tree, name)
	}
	return false
}
