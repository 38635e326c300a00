package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// storeGitDirs are the git directories of the stores under cacheDir.
func storeGitDirs(t *testing.T, cacheDir string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(cacheDir, storesDir, "*", storeGitDir))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// looseObjectPath is where a store keeps object h loose.
func looseObjectPath(gitDir, h string) string {
	return filepath.Join(gitDir, "objects", h[:2], h[2:])
}

// packObjects counts the objects of each pack of a store, by pack name.
func packObjects(t *testing.T, gitDir string) map[string]int {
	t.Helper()
	idxs, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, path := range idxs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		idx := idxfile.NewMemoryIndex()
		if err := idxfile.NewDecoder(bytes.NewReader(b)).Decode(idx); err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		n, err := idx.Count()
		if err != nil {
			t.Fatal(err)
		}
		counts[filepath.Base(path)] = int(n)
	}
	return counts
}

// storedObjects counts the objects of a store: loose ones and those of
// its packs.
func storedObjects(t *testing.T, gitDir string) (loose, packed int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(gitDir, "objects", "[0-9a-f][0-9a-f]", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range packObjects(t, gitDir) {
		packed += n
	}
	return len(files), packed
}

// pushManyFiles adds n small files in one commit on the server's branch,
// so a fetch of it is too large to store loose.
func pushManyFiles(t *testing.T, srv *testutil.GitServer, name string, n int) string {
	t.Helper()
	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "--branch", fixtureBranch, srv.BarePath(name), ".")
	for i := 0; i < n; i++ {
		file := filepath.Join(work, "unrelated", fmt.Sprintf("file-%03d.txt", i))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(fmt.Sprintf("file %d of %s\n", i, t.Name())), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, work, nil, "add", "-A")
	testutil.Git(t, work, nil, "commit", "-qm", "add unrelated files")
	testutil.Git(t, work, nil, "push", "-q", "origin", fixtureBranch)
	return strings.TrimSpace(testutil.Git(t, work, nil, "rev-parse", "HEAD"))
}

// TestCachedRepositoryFetchesOnlyNewObjects checks that a Repository opened
// later over the same cache directory (a new process) announces what the
// store holds: its fetch stores only the new commit's objects (loose, as
// they are few), and an unchanged branch stores nothing. A large fetch is
// kept as one pack.
func TestCachedRepositoryFetchesOnlyNewObjects(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	key, passphrase := newSSHKey(t)
	tests := []struct {
		name string
		url  string
		auth Auth
	}{
		{name: "HTTP", url: srv.HTTPURL("config"), auth: Auth{Username: srv.Username, Password: srv.Password}},
		{name: "SSH", url: srv.SSHURL("config"), auth: Auth{SSHPrivateKey: key, SSHPassphrase: passphrase, KnownHosts: srv.KnownHosts}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cacheDir := t.TempDir()
			fetch := func() plumbing.Hash {
				t.Helper()
				repo, err := OpenCached(tt.url, tt.auth, cacheDir)
				if err != nil {
					t.Fatal(err)
				}
				tip, err := repo.Fetch(context.Background(), fixtureBranch)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := repo.Repo().CommitObject(tip); err != nil {
					t.Fatalf("the fetched commit does not read: %v", err)
				}
				return tip
			}
			first := fetch()
			gitDirs := storeGitDirs(t, cacheDir)
			if len(gitDirs) != 1 {
				t.Fatalf("stores under the cache directory: %v, want one", gitDirs)
			}
			loose, packed := storedObjects(t, gitDirs[0])
			if all := countObjects(t, srv.BarePath("config"), first.String()); loose+packed != all {
				t.Fatalf("the first fetch stored %d loose and %d packed objects, want the %d of the commit", loose, packed, all)
			}

			second := pushCommit(t, srv, "config", "apps/overlays/dev/kustomization.yaml", "# touched "+tt.name+"\n")
			if got := fetch(); got.String() != second {
				t.Fatalf("second process fetched %s, want %s", got, second)
			}
			loose2, packed2 := storedObjects(t, gitDirs[0])
			newObjects := countObjects(t, srv.BarePath("config"), first.String()+".."+second)
			if got := loose2 + packed2 - loose - packed; got != newObjects {
				t.Errorf("the second process stored %d objects, want only the %d new ones", got, newObjects)
			}
			if all := countObjects(t, srv.BarePath("config"), second); newObjects >= all {
				t.Fatalf("the test proves nothing: %d new objects of %d (%d)", newObjects, all, i)
			}

			fetch()
			if loose3, packed3 := storedObjects(t, gitDirs[0]); loose3 != loose2 || packed3 != packed2 {
				t.Errorf("a fetch of an unchanged branch stored objects: %d loose and %d packed, had %d and %d", loose3, packed3, loose2, packed2)
			}

			// Objects of a large fetch stay in one pack.
			third := pushManyFiles(t, srv, "config", storeLooseObjects+20)
			packs := packObjects(t, gitDirs[0])
			if got := fetch(); got.String() != third {
				t.Fatalf("third process fetched %s, want %s", got, third)
			}
			newObjects = countObjects(t, srv.BarePath("config"), second+".."+third)
			var fresh []int
			for name, n := range packObjects(t, gitDirs[0]) {
				if _, ok := packs[name]; !ok {
					fresh = append(fresh, n)
				}
			}
			if diff := cmp.Diff([]int{newObjects}, fresh); diff != "" {
				t.Errorf("objects of the packs of a large fetch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCachedRepositoriesFetchConcurrently runs fetches of two branches
// through separate Repositories over one cache directory at once (each
// takes the file lock as a process does); every one must succeed with its
// branch's tip, and the store must stay readable.
func TestCachedRepositoriesFetchConcurrently(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	bare := srv.BarePath("config")
	testutil.Git(t, bare, nil, "branch", "other", fixtureBranch)
	main := pushCommit(t, srv, "config", "apps/overlays/dev/kustomization.yaml", "# main\n")
	other := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "other"))
	cacheDir := t.TempDir()
	url := srv.HTTPURL("config")
	auth := Auth{Username: srv.Username, Password: srv.Password}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		branch, want := fixtureBranch, main
		if i%2 == 1 {
			branch, want = "other", other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo, err := OpenCached(url, auth, cacheDir)
			if err != nil {
				errs <- err
				return
			}
			got, err := repo.Fetch(context.Background(), branch)
			if err != nil {
				errs <- err
				return
			}
			if got.String() != want {
				errs <- &tipError{branch: branch, got: got.String(), want: want}
				return
			}
			if _, err := repo.Repo().CommitObject(got); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := checkStore(storeGitDirs(t, cacheDir)[0]); err != nil {
		t.Errorf("the shared store is unreadable after concurrent fetches: %v", err)
	}
}

type tipError struct{ branch, got, want string }

func (e *tipError) Error() string { return e.branch + " fetched " + e.got + ", want " + e.want }

// TestCachedStoreRecovers damages a store the ways disks and people do and
// checks the next process (or the next pass of this one) still reads the
// right commit, with one warning for an unreadable store.
func TestCachedStoreRecovers(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	pushManyFiles(t, srv, "config", storeLooseObjects+20) // fetched as a pack
	url := srv.HTTPURL("config")
	auth := Auth{Username: srv.Username, Password: srv.Password}
	// later is a commit after want, fetched loose over the pack of want,
	// whose trees it shares.
	var later string

	tests := []struct {
		name string
		// damage breaks the store at gitDir of cacheDir.
		damage func(t *testing.T, cacheDir, gitDir string)
		// sameRepository fetches again with the Repository that fetched
		// before the damage (a running process's next pass).
		sameRepository bool
		warns          bool
	}{
		{name: "truncated pack", warns: true, damage: func(t *testing.T, _, gitDir string) {
			packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
			for _, p := range packs {
				info, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(p, info.Size()/2); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "garbage in the branch's ref", warns: true, damage: func(t *testing.T, _, gitDir string) {
			ref := filepath.Join(gitDir, "refs", "remotes", "origin", fixtureBranch)
			if err := os.WriteFile(ref, []byte("not a hash at all\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "ref to a commit the store does not hold", damage: func(t *testing.T, _, gitDir string) {
			ref := filepath.Join(gitDir, "refs", "remotes", "origin", fixtureBranch)
			if err := os.WriteFile(ref, []byte(strings.Repeat("ab", 20)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "pack removed, its index left", damage: func(t *testing.T, _, gitDir string) {
			packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
			for _, p := range packs {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}, warns: false},
		{name: "pack removed under the loose objects of a later fetch", damage: func(t *testing.T, cacheDir, gitDir string) {
			if later == "" {
				later = pushCommit(t, srv, "config", "apps/overlays/dev/kustomization.yaml", "# later\n")
			}
			repo, err := openCached(url, auth, cacheDir, os.Stderr, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
				t.Fatal(err)
			}
			if loose, _ := storedObjects(t, gitDir); loose == 0 {
				t.Fatal("the later commit was not stored loose: the test proves nothing")
			}
			packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*"))
			for _, p := range packs {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}, warns: true},
		{name: "a parent commit removed, the tip whole", warns: true, damage: func(t *testing.T, cacheDir, gitDir string) {
			// Two small fetches store a commit, then its child, loose. The
			// child's tree does not need the parent's: only a walk of the
			// history finds the parent gone.
			fetch := func() {
				repo, err := openCached(url, auth, cacheDir, os.Stderr, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
					t.Fatal(err)
				}
			}
			parent := pushCommit(t, srv, "config", "apps/overlays/dev/kustomization.yaml", "# parent\n")
			fetch()
			pushCommit(t, srv, "config", "apps/overlays/dev/kustomization.yaml", "# child\n")
			fetch()
			if err := os.Remove(looseObjectPath(gitDir, parent)); err != nil {
				t.Fatalf("the parent commit was not stored loose, so the test proves nothing: %v", err)
			}
		}},
		{name: "cache directory removed under a running process", sameRepository: true, damage: func(t *testing.T, cacheDir, _ string) {
			if err := os.RemoveAll(cacheDir); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "truncated pack under a running process", sameRepository: true, warns: true, damage: func(t *testing.T, _, gitDir string) {
			packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack"))
			for _, p := range packs {
				if err := os.Truncate(p, 100); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cacheDir := filepath.Join(t.TempDir(), "cache")
			var warnings bytes.Buffer
			first, err := openCached(url, auth, cacheDir, &warnings, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := first.Fetch(context.Background(), fixtureBranch); err != nil {
				t.Fatal(err)
			}
			tt.damage(t, cacheDir, storeGitDirs(t, cacheDir)[0])

			repo := first
			if !tt.sameRepository {
				if repo, err = openCached(url, auth, cacheDir, &warnings, time.Now()); err != nil {
					t.Fatalf("open over the damaged store: %v", err)
				}
			}
			got, err := repo.Fetch(context.Background(), fixtureBranch)
			if err != nil {
				t.Fatalf("fetch over the damaged store: %v", err)
			}
			if want := strings.TrimSpace(testutil.Git(t, srv.BarePath("config"), nil, "rev-parse", fixtureBranch)); got.String() != want {
				t.Fatalf("fetched %s, want %s", got, want)
			}
			commit, err := repo.Repo().CommitObject(got)
			if err != nil {
				t.Fatalf("read the commit: %v", err)
			}
			if _, err := commit.Files(); err != nil {
				t.Fatalf("read the commit's files: %v", err)
			}
			// The history too: its readers (the target's ratchet, the
			// holds' order) must not see it end early.
			if err := object.NewCommitPreorderIter(commit, nil, nil).ForEach(func(*object.Commit) error { return nil }); err != nil {
				t.Fatalf("read the history of %s: %v", got, err)
			}
			if err := checkStore(storeGitDirs(t, cacheDir)[0]); err != nil {
				t.Errorf("the store is still unreadable: %v", err)
			}
			lines := strings.Count(warnings.String(), "\n")
			if tt.warns && (lines != 1 || !strings.Contains(warnings.String(), "fetching afresh")) {
				t.Errorf("warnings = %q, want one line saying the store is fetched afresh", warnings.String())
			}
			if !tt.warns && lines > 1 {
				t.Errorf("warnings = %q, want at most one line", warnings.String())
			}
		})
	}
}

// TestCachedStoreKeepsCredentialsOffDisk checks that a URL's credentials
// neither name the store nor are written into it.
func TestCachedStoreKeepsCredentialsOffDisk(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	cacheDir := t.TempDir()
	repo, err := OpenCached(srv.HTTPURLWithCredentials("config"), Auth{}, cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(filepath.Dir(storeGitDirs(t, cacheDir)[0])), storeKey(srv.HTTPURL("config")); got != want {
		t.Errorf("store %s, want %s: the key must not depend on credentials", got, want)
	}
	err = filepath.WalkDir(cacheDir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(srv.Password)) {
			t.Errorf("%s holds the password", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIdleStores(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	got := idleStores(map[string]time.Time{
		"today":           now,
		"a-month-ago":     now.Add(-storeIdleLimit),
		"just-over-limit": now.Add(-storeIdleLimit - time.Second),
		"a-year-ago":      now.AddDate(-1, 0, 0),
	}, now)
	sort.Strings(got)
	if diff := cmp.Diff([]string{"a-year-ago", "just-over-limit"}, got); diff != "" {
		t.Errorf("idle stores (-want +got):\n%s", diff)
	}
}

// TestOpeningTheCacheRemovesIdleStores checks that opening any repository
// removes the stores nobody used for storeIdleLimit, and keeps the others.
func TestOpeningTheCacheRemovesIdleStores(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	cacheDir := t.TempDir()
	now := time.Now()
	idle := filepath.Join(cacheDir, storesDir, "0123456789abcdef")
	recent := filepath.Join(cacheDir, storesDir, "fedcba9876543210")
	for _, dir := range []string{idle, recent} {
		if err := os.MkdirAll(filepath.Join(dir, storeGitDir, "objects"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, storeUsedFile), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-storeIdleLimit - time.Hour)
	if err := os.Chtimes(filepath.Join(idle, storeUsedFile), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := openCached(srv.HTTPURL("config"), Auth{}, cacheDir, os.Stderr, now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(idle); !os.IsNotExist(err) {
		t.Errorf("the idle store is still there (%v)", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the recently used store was removed: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(cacheDir, storesDir))
	if len(entries) != 2 { // recent, and the one just opened
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("stores left: %v, want the recent one and the opened one", names)
	}
}

// TestUnwritableCacheKeepsObjectsInMemory checks that a cache directory
// that cannot be created (a read-only home in a container) costs a warning,
// not the command.
func TestUnwritableCacheKeepsObjectsInMemory(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var warnings bytes.Buffer
	repo, err := openCached(srv.HTTPURL("config"), Auth{Username: srv.Username, Password: srv.Password}, filepath.Join(notADir, "cache"), &warnings, time.Now())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if !strings.Contains(warnings.String(), "keeping") || strings.Count(warnings.String(), "\n") != 1 {
		t.Errorf("warnings = %q, want one line saying the objects stay in memory", warnings.String())
	}
}
