package main

import (
	"fmt"
	"os"
	"path/filepath"
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
