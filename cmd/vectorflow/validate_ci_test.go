package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// ciCheckout is a git checkout the way a pull-request CI job has it: main
// holds a good config; the checked-out commit (on a feature branch, or
// detached) adds a fault in vectorflow/faulty.yaml, and the working tree
// has one more, uncommitted, in vectorflow/dirty.yaml.
func ciCheckout(t *testing.T) (dir, featureCommit string) {
	t.Helper()
	testutil.RequireGit(t)
	dir = testutil.CopyDir(t, goodFixture)
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", "-A")
	testutil.Git(t, dir, nil, "commit", "-q", "-m", "good config")
	testutil.Git(t, dir, nil, "checkout", "-q", "-b", "feature")
	writeTestFile(t, dir, "vectorflow/faulty.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: qa\nspec:\n  landscape: dev\n  path: apps/overlays/qa\n  overlay: typo\n")
	testutil.Git(t, dir, nil, "add", "-A")
	testutil.Git(t, dir, nil, "commit", "-q", "-m", "add a stage with a typo")
	featureCommit = strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))
	testutil.Git(t, dir, nil, "tag", "v1")
	writeTestFile(t, dir, "vectorflow/dirty.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: Bad_Name\n")
	return dir, featureCommit
}

func writeTestFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// problemFiles runs validate -o json and returns the files its problems name.
func problemFiles(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := runValidate(t, append(args, "-o", "json")...)
	var r validationReport
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		t.Fatalf("validate %v: %v; output is not JSON: %v\n%s", args, err, jerr, out)
	}
	if (err != nil) != (len(r.Problems) > 0) {
		t.Errorf("validate %v: error %v with %d problems", args, err, len(r.Problems))
	}
	var files []string
	for _, p := range r.Problems {
		files = append(files, p.File)
	}
	return files
}

// TestValidateCheckout: a path validates the working tree as it is on
// disk; --revision validates a commit, detached HEAD included; --branch
// still reads a branch.
func TestValidateCheckout(t *testing.T) {
	isolateCredentials(t)
	dir, commit := ciCheckout(t)
	tests := []struct {
		name string
		args []string
		want string // the files problems name, joined
	}{
		{name: "working tree", args: []string{dir}, want: "vectorflow/dirty.yaml vectorflow/faulty.yaml"},
		{name: "checkout, no flag: its HEAD", args: []string{"--repo", dir}, want: "vectorflow/faulty.yaml"},
		{name: "revision HEAD", args: []string{"--repo", dir, "--revision", "HEAD"}, want: "vectorflow/faulty.yaml"},
		{name: "revision sha", args: []string{"--repo", dir, "--revision", commit}, want: "vectorflow/faulty.yaml"},
		{name: "revision tag", args: []string{"--repo", dir, "--revision", "v1"}, want: "vectorflow/faulty.yaml"},
		{name: "revision main", args: []string{"--repo", dir, "--revision", "main"}, want: ""},
		{name: "branch main", args: []string{"--repo", dir, "--branch", "main"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(problemFiles(t, tt.args...), " "); got != tt.want {
				t.Errorf("validate %v: problems in %q, want %q", tt.args, got, tt.want)
			}
		})
	}
	t.Run("detached HEAD", func(t *testing.T) {
		testutil.Git(t, dir, nil, "checkout", "-q", "--detach", commit)
		if got := strings.Join(problemFiles(t, "--repo", dir, "--revision", "HEAD"), " "); got != "vectorflow/faulty.yaml" {
			t.Errorf("problems in %q, want vectorflow/faulty.yaml", got)
		}
	})
	t.Run("bare repository: its branch", func(t *testing.T) {
		bare := filepath.Join(t.TempDir(), "config.git")
		testutil.Git(t, dir, nil, "clone", "-q", "--bare", dir, bare)
		if got := strings.Join(problemFiles(t, "--repo", bare), " "); got != "" {
			t.Errorf("problems in %q, want none: main is good", got)
		}
	})
	t.Run("packed, and a linked worktree", func(t *testing.T) {
		// Objects read from pack files (kept open) and through a
		// worktree's .git file and commondir.
		testutil.Git(t, dir, nil, "gc", "-q")
		linked := filepath.Join(t.TempDir(), "linked")
		testutil.Git(t, dir, nil, "worktree", "add", "-q", "--detach", linked, "main")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--repo", dir, "--revision", "v1"}, "vectorflow/faulty.yaml"},
			{[]string{"--repo", linked}, ""},
			{[]string{"--repo", linked, "--revision", "v1"}, "vectorflow/faulty.yaml"},
		} {
			if got := strings.Join(problemFiles(t, tc.args...), " "); got != tc.want {
				t.Errorf("validate %v: problems in %q, want %q", tc.args, got, tc.want)
			}
		}
	})
	t.Run("bare repository: a revision", func(t *testing.T) {
		bare := filepath.Join(t.TempDir(), "config.git")
		testutil.Git(t, dir, nil, "clone", "-q", "--bare", dir, bare)
		if got := strings.Join(problemFiles(t, "--repo", bare, "--revision", "v1"), " "); got != "vectorflow/faulty.yaml" {
			t.Errorf("problems in %q, want vectorflow/faulty.yaml", got)
		}
	})
	t.Run("remote revision", func(t *testing.T) {
		srv := testutil.StartGitServer(t)
		bare := srv.BarePath("config")
		testutil.Git(t, dir, nil, "clone", "-q", "--bare", dir, bare)
		for rev, want := range map[string]string{"v1": "vectorflow/faulty.yaml", "feature": "vectorflow/faulty.yaml", "main": ""} {
			url := srv.HTTPURLWithCredentials("config")
			if got := strings.Join(problemFiles(t, "--repo", url, "--revision", rev), " "); got != want {
				t.Errorf("--revision %s: problems in %q, want %q", rev, got, want)
			}
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{dir, "--repo", dir},
			{"--repo", dir, "--revision", "HEAD", "--branch", "main"},
			{"--repo", dir, "--revision", "no-such-rev"},
		} {
			if _, err := runValidate(t, args...); err == nil {
				t.Errorf("validate %v succeeded; want a usage error", args)
			}
		}
	})
}
