package source

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// stateBranch is the branch fetched along in these tests, as the
// controller fetches its state branch.
const stateBranch = "vectorflow/state"

// pushStateFile commits file with content on the state branch of the
// server's repository name (an orphan branch the first time) and returns
// the commit.
func pushStateFile(t *testing.T, srv *testutil.GitServer, name, file, content string) string {
	t.Helper()
	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "-q", srv.BarePath(name), ".")
	if _, err := testutil.GitE(work, nil, "checkout", "-q", stateBranch); err != nil {
		testutil.Git(t, work, nil, "checkout", "-q", "--orphan", stateBranch)
		testutil.Git(t, work, nil, "rm", "-rfq", ".")
	}
	path := filepath.Join(work, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, work, nil, "add", "-A")
	testutil.Git(t, work, nil, "commit", "-qm", "write "+file)
	testutil.Git(t, work, nil, "push", "-q", "origin", stateBranch)
	return strings.TrimSpace(testutil.Git(t, work, nil, "rev-parse", "HEAD"))
}

// testLog writes the store's warnings (a cache found unreadable and
// replaced) to the test's log, beside a failure they explain.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// readAllFiles reads every file of commit from repo's store.
func readAllFiles(repo *Repository, commit plumbing.Hash) error {
	c, err := repo.Repo().CommitObject(commit)
	if err != nil {
		return err
	}
	files, err := c.Files()
	if err != nil {
		return err
	}
	return files.ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		defer r.Close()
		_, err = io.Copy(io.Discard, r)
		return err
	})
}

// fetchState opens the store under cacheDir as a new process would, fetches
// the config branch with the state branch along, and returns the state
// branch's tip.
func fetchState(t *testing.T, srv *testutil.GitServer, cacheDir string) (*Repository, plumbing.Hash, error) {
	t.Helper()
	repo, err := openCached(srv.HTTPURL("config"), Auth{Username: srv.Username, Password: srv.Password}, cacheDir, testLog{t}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	repo.FetchAlso(stateBranch)
	if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
		return repo, plumbing.ZeroHash, err
	}
	ref, err := repo.Repo().Reference(plumbing.NewRemoteReferenceName("origin", stateBranch), true)
	if err != nil {
		t.Fatalf("the state branch was not fetched along: %v", err)
	}
	return repo, ref.Hash(), nil
}

// TestCachedStoreRepairsABranchFetchedAlong: a store holding the tip of a
// branch fetched along (the state branch) without every object below it is
// repaired by the next fetch, as the branch asked for is. The server sends
// nothing for a tip the store announces, so a store left that way by a
// process killed mid-write failed every later pass, and every later
// process, with "object not found".
func TestCachedStoreRepairsABranchFetchedAlong(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	content := "status of " + t.Name() + "\n"
	pushStateFile(t, srv, "config", "configs/dev-to-test.yaml", content)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	if _, _, err := fetchState(t, srv, cacheDir); err != nil {
		t.Fatal(err)
	}

	gitDir := storeGitDirs(t, cacheDir)[0]
	blob := loosePath(gitDir, plumbing.ComputeHash(plumbing.BlobObject, []byte(content)))
	if err := os.Remove(blob); err != nil {
		t.Fatalf("the state file's blob was not stored loose: %v", err)
	}

	repo, tip, err := fetchState(t, srv, cacheDir)
	if err != nil {
		t.Fatalf("fetch over a store missing a blob of the state branch: %v", err)
	}
	if err := readAllFiles(repo, tip); err != nil {
		t.Fatalf("the state branch's tip %s does not read after the fetch: %v", tip, err)
	}
}

// TestCachedStoreStoresAFetchsCommitsLast: a small fetch is stored one
// object at a time, and git sends commits first, newest first. A process
// stopped in the middle (here: an object that cannot be stored) must not
// leave a commit on disk without the objects below it or without its
// parent, or the next fetch takes the tip for held and asks the server for
// nothing.
func TestCachedStoreStoresAFetchsCommitsLast(t *testing.T) {
	tests := []struct {
		name string
		// blocked is the object whose store fails, of the two commits
		// fetched together and the content of the newer one's file.
		blocked func(parent, tip plumbing.Hash, content string) plumbing.Hash
	}{
		{name: "a blob below the tip", blocked: func(_, _ plumbing.Hash, content string) plumbing.Hash {
			return plumbing.ComputeHash(plumbing.BlobObject, []byte(content))
		}},
		{name: "the tip's parent", blocked: func(parent, _ plumbing.Hash, _ string) plumbing.Hash { return parent }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testutil.StartGitServer(t)
			srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
			pushStateFile(t, srv, "config", "configs/dev-to-test.yaml", "first\n")
			cacheDir := filepath.Join(t.TempDir(), "cache")
			if _, _, err := fetchState(t, srv, cacheDir); err != nil {
				t.Fatal(err)
			}
			gitDir := storeGitDirs(t, cacheDir)[0]

			// Two commits, fetched together, until the object to block
			// falls in a directory of loose objects the store does not
			// have yet, which a plain file then takes the place of.
			var tip plumbing.Hash
			var fanout string
			tries := 0
			for i := 0; ; i++ {
				tries++
				parent := plumbing.NewHash(pushStateFile(t, srv, "config", "configs/prod.yaml", fmt.Sprintf("try %d\n", i)))
				content := fmt.Sprintf("second, try %d\n", i)
				tip = plumbing.NewHash(pushStateFile(t, srv, "config", "configs/dev-to-test.yaml", content))
				fanout = filepath.Dir(loosePath(gitDir, tt.blocked(parent, tip, content)))
				if _, err := os.Stat(fanout); os.IsNotExist(err) {
					break
				}
			}
			if err := os.WriteFile(fanout, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := fetchState(t, srv, cacheDir); err == nil {
				loose, packed := storedObjects(t, gitDir)
				now := "gone"
				if info, err := os.Stat(fanout); err == nil {
					now = info.Mode().String()
				}
				t.Fatalf("the fetch stored an object where a file blocks its directory (%s, now %s), after %d tries, with %d objects loose and %d packed: the test proves nothing",
					fanout, now, tries, loose, packed)
			}
			if _, err := os.Stat(loosePath(gitDir, tip)); err == nil {
				t.Errorf("the fetch that failed stored commit %s without what it needs", tip)
			}

			if err := os.Remove(fanout); err != nil {
				t.Fatal(err)
			}
			repo, got, err := fetchState(t, srv, cacheDir)
			if err != nil {
				t.Fatal(err)
			}
			if got != tip {
				t.Fatalf("the state branch was fetched at %s, want %s", got, tip)
			}
			if err := readAllFiles(repo, got); err != nil {
				t.Fatalf("the state branch's tip does not read after the fetch: %v", err)
			}
			history, err := repo.Repo().Log(&git.LogOptions{From: got})
			if err == nil {
				err = history.ForEach(func(*object.Commit) error { return nil })
			}
			if err != nil {
				t.Fatalf("the state branch's history does not read after the fetch: %v", err)
			}
		})
	}
}

// encoded is o encoded, as a store is given it.
func encoded(t *testing.T, o interface {
	Encode(plumbing.EncodedObject) error
}) *plumbing.MemoryObject {
	t.Helper()
	m := &plumbing.MemoryObject{}
	if err := o.Encode(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStorePendingStoresCommitsLast: the writer's own fetch (a branch
// moved under it) hands its store a pack's objects in the pack's order,
// commits first and newest first, and they are held pending until a
// reference names one. Stored loose, one file each, a process stopped in
// the middle (here: an object that cannot be stored) must leave no commit
// on disk without the objects below it or without its parent.
func TestStorePendingStoresCommitsLast(t *testing.T) {
	tests := []struct {
		name string
		// blocked is the object whose store fails, of a parent and a
		// child commit and the blob below the child.
		blocked func(parent, child, blob plumbing.Hash) plumbing.Hash
	}{
		{name: "a blob below the child", blocked: func(_, _, blob plumbing.Hash) plumbing.Hash { return blob }},
		{name: "the child's parent", blocked: func(parent, _, _ plumbing.Hash) plumbing.Hash { return parent }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, cacheDir := storeFixture(t)
			repo := open()
			base := fetchBranch(t, repo)
			gitDir := storeGitDirs(t, cacheDir)[0]
			sig := object.Signature{Name: "vectorflow", Email: "vectorflow@example.com", When: time.Unix(1700000000, 0)}

			var objects []*plumbing.MemoryObject // in a pack's order
			var child plumbing.Hash
			var fanout string
			for i := 0; ; i++ {
				blob := &plumbing.MemoryObject{}
				blob.SetType(plumbing.BlobObject)
				blob.Write(fmt.Appendf(nil, "blob of %s, try %d\n", t.Name(), i))
				tree := encoded(t, &object.Tree{Entries: []object.TreeEntry{{Name: "file", Mode: filemode.Regular, Hash: blob.Hash()}}})
				parent := encoded(t, &object.Commit{Author: sig, Committer: sig, Message: "parent\n", TreeHash: tree.Hash(), ParentHashes: []plumbing.Hash{base}})
				c := encoded(t, &object.Commit{Author: sig, Committer: sig, Message: "child\n", TreeHash: tree.Hash(), ParentHashes: []plumbing.Hash{parent.Hash()}})
				fanout = filepath.Dir(loosePath(gitDir, tt.blocked(parent.Hash(), c.Hash(), blob.Hash())))
				if _, err := os.Stat(fanout); os.IsNotExist(err) {
					objects, child = []*plumbing.MemoryObject{c, parent, tree, blob}, c.Hash()
					break
				}
			}
			for _, o := range objects {
				if _, err := repo.Storer().SetEncodedObject(o); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(fanout, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := repo.store.storer.storePending(); err == nil {
				t.Fatal("the store stored an object where a file blocks its directory: the test proves nothing")
			}
			if _, err := os.Stat(loosePath(gitDir, child)); err == nil {
				t.Errorf("the store that failed stored commit %s without what it needs", child)
			}

			if err := os.Remove(fanout); err != nil {
				t.Fatal(err)
			}
			storePending(t, repo)
			if out, err := exec.Command("git", "--git-dir", gitDir, "fsck", "--no-dangling", child.String()).CombinedOutput(); err != nil {
				t.Fatalf("the objects held pending are not whole once stored: %v\n%s", err, out)
			}
		})
	}
}
