package repofs

// Immutable reports whether a tree's content can never change: a commit's
// tree (bounded by LimitTree or not), whose hashes name the very objects
// that are read. A directory on disk may change between a read and a
// hash, so what was learnt from it is not kept beyond the process.
func Immutable(t Tree) bool {
	if l, ok := t.(*limitTree); ok {
		t = l.Tree
	}
	_, ok := t.(*gitTree)
	return ok
}
