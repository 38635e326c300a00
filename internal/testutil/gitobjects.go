package testutil

import (
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// CopyGitObjects stores every object of the repository git made at dir in
// to, a test's storage of its own (one that counts reads, say), and
// returns the repository at dir to resolve revisions with.
func CopyGitObjects(t testing.TB, dir string, to storer.EncodedObjectStorer) *git.Repository {
	t.Helper()
	local, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := local.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	if err := iter.ForEach(func(o plumbing.EncodedObject) error {
		_, err := to.SetEncodedObject(o)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return local
}

// StoreObject encodes o (a tree, a commit, a tag) into s and returns its
// hash.
func StoreObject(t testing.TB, s storer.EncodedObjectStorer, o interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	t.Helper()
	obj := s.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// StoreBlob stores content as a blob in s and returns its hash.
func StoreBlob(t testing.TB, s storer.EncodedObjectStorer, content []byte) plumbing.Hash {
	t.Helper()
	obj := s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// LackingStorer is a store that lacks one object, as a damaged cache does:
// reading Lacks fails with plumbing.ErrObjectNotFound.
type LackingStorer struct {
	storer.EncodedObjectStorer
	Lacks plumbing.Hash
}

func (s *LackingStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if h == s.Lacks {
		return nil, plumbing.ErrObjectNotFound
	}
	return s.EncodedObjectStorer.EncodedObject(t, h)
}
