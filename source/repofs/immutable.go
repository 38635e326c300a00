package repofs

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
