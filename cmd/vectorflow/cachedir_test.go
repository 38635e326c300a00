package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestMain keeps every test of this package, and every vectorflow process
// the tests start (they inherit the environment), out of the user's cache
// directory: objects fetched from test servers go to a directory removed at
// the end.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vectorflow-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Setenv(envCacheDir, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCacheDirectoryHoldsTheFetchedObjects checks where `validate` of a
// served repository keeps what it fetched: under --cache-dir, else under
// $VECTORFLOW_CACHE_DIR, else under the user's cache directory; with
// --cache-dir=none (or the variable set to none) nowhere on disk.
func TestCacheDirectoryHoldsTheFetchedObjects(t *testing.T) {
	isolateCredentials(t)
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, goodFixture, "main", "config")
	tests := []struct {
		name string
		flag string // --cache-dir; "" means not given
		env  string // $VECTORFLOW_CACHE_DIR
		// want is where the stores land: "flag", "env", "user" or "" for
		// nowhere.
		want string
	}{
		{name: "flag", flag: "flag", env: "env", want: "flag"},
		{name: "environment", env: "env", want: "env"},
		{name: "user cache directory", want: "user"},
		{name: "none in the flag", flag: "none", env: "env", want: ""},
		{name: "none in the environment", env: "none", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dirs := map[string]string{"flag": filepath.Join(root, "flag"), "env": filepath.Join(root, "env"), "user": filepath.Join(root, "user")}
			t.Setenv("XDG_CACHE_HOME", dirs["user"])
			t.Setenv("HOME", filepath.Join(root, "home"))
			env := tt.env
			if d, ok := dirs[env]; ok {
				env = d
			}
			t.Setenv(envCacheDir, env)
			args := []string{"--repo", srv.HTTPURLWithCredentials("config")}
			if tt.flag != "" {
				flag := tt.flag
				if d, ok := dirs[flag]; ok {
					flag = d
				}
				args = append(args, "--cache-dir", flag)
			}
			if out, err := runValidate(t, args...); err != nil {
				t.Fatalf("validate: %v\n%s", err, out)
			}
			for name, dir := range dirs {
				wantDir := dir
				if name == "user" {
					wantDir = filepath.Join(dir, "vectorflow")
				}
				// Objects are stored loose or in packs, as fetched.
				loose, _ := filepath.Glob(filepath.Join(wantDir, "repos", "*", "git", "objects", "[0-9a-f][0-9a-f]", "*"))
				packs, _ := filepath.Glob(filepath.Join(wantDir, "repos", "*", "git", "objects", "pack", "*.pack"))
				if got := len(loose)+len(packs) > 0; got != (name == tt.want) {
					t.Errorf("objects under the %s directory: %d loose, packs %v; want some: %v", name, len(loose), packs, name == tt.want)
				}
			}
			if tt.want == "" {
				var files []string
				_ = filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
					if err == nil && !e.IsDir() {
						files = append(files, path)
					}
					return nil
				})
				if len(files) > 0 {
					t.Errorf("--cache-dir=none wrote %v", files)
				}
			}
		})
	}
}

// TestACacheThatLostAPromotionCommitIsFetchedAfresh: a cache that lost a
// commit of the target branch below its tip (a loose object removed by
// hand, a disk's damage) must not shorten the history vectorflow reads:
// that history is the ratchet of every promotion written there. The
// server never sends a commit below a tip the cache announces, so the next
// fetch must find the hole and fetch the store afresh, even when the
// branch did not move; promotions then go on as before.
func TestACacheThatLostAPromotionCommitIsFetchedAfresh(t *testing.T) {
	srv, url, signingKey := serveChain(t, 3)
	bare := srv.BarePath("chain.git")
	cache := t.TempDir()
	run := func() {
		t.Helper()
		if out, err := scaleCLI("run", "--once", "--repo", url, "--signing-key", signingKey, "--cache-dir", cache); err != nil {
			t.Fatalf("run --once: %v\n%s", err, tail(out, 3000))
		}
	}
	run()

	// The first promotion's commit, below main's tip, is lost.
	lost := strings.TrimSpace(testutil.Git(t, bare, nil, "log", "--format=%H", "--grep=to chain/dev1$", "main"))
	if len(lost) != 40 || lost == strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "main")) {
		t.Fatalf("want one promotion commit to dev1 below main's tip, got %q", lost)
	}
	files, err := filepath.Glob(filepath.Join(cache, "repos", "*", "git", "objects", lost[:2], lost[2:]))
	if err != nil || len(files) != 1 {
		t.Fatalf("the commit %s is not stored loose in the cache (%v, %v): the test proves nothing", lost, files, err)
	}
	store := filepath.Dir(filepath.Dir(filepath.Dir(files[0])))
	holds := func() bool { return exec.Command("git", "--git-dir", store, "cat-file", "-e", lost).Run() == nil }
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if holds() {
		t.Fatalf("the cache holds commit %s in a pack too: the test proves nothing", lost)
	}

	// main has not moved: the fetch is up to date, and must still find the hole.
	if out, err := scaleCLI("validate", "--repo", url, "--cache-dir", cache); err != nil {
		t.Fatalf("validate over the damaged cache: %v\n%s", err, tail(out, 3000))
	}
	if !holds() {
		t.Fatalf("after a fetch over the damaged cache, it still lacks commit %s", lost)
	}

	// A template change travels to the end of the chain as before.
	bumpChainApp(t, srv, "1.0.0", "2.0.0")
	run()
	if got := testutil.Git(t, bare, nil, "show", "main:apps/overlays/dev3/kustomization.yaml"); !strings.Contains(got, `newTag: "2.0.0"`) {
		t.Fatalf("after the run over the repaired cache, dev3's overlay does not run 2.0.0:\n%s", got)
	}
}
