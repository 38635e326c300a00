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
