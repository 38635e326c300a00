package demo

import (
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// TestGitServer: the demo's repository is served over smart HTTP by git
// http-backend; the demo's credentials clone and push, others are turned
// away, and nothing outside the repositories is served.
func TestGitServer(t *testing.T) {
	dir := t.TempDir()
	s, err := StartServers(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	files := map[string][]byte{"vectorflow/template.yaml": []byte("kind: VectorTemplate\n"), "README": []byte("acme\n")}
	url, err := s.CreateRepository(filepath.Join(dir, "fixture"), "main", "acme.git", files)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.gitURL + "/acme.git"; url != want {
		t.Errorf("URL %s, want %s", url, want)
	}

	auth := &githttp.BasicAuth{Username: s.Username, Password: s.Password}
	clone, err := git.PlainClone(filepath.Join(dir, "clone"), false, &git.CloneOptions{URL: url, Auth: auth})
	if err != nil {
		t.Fatalf("clone %s with the demo's credentials: %v", url, err)
	}
	head, err := clone.Head()
	if err != nil || head.Name() != plumbing.NewBranchReferenceName("main") {
		t.Fatalf("the clone's HEAD is %v (%v), want main", head, err)
	}
	commit, err := clone.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range files {
		f, err := commit.File(p)
		if err != nil {
			t.Errorf("the first commit lacks %s: %v", p, err)
			continue
		}
		if got, _ := f.Contents(); got != string(want) {
			t.Errorf("%s is %q, want %q", p, got, want)
		}
	}

	// A push over HTTP lands in the bare repository the demo reads.
	wt, err := clone.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := wt.Commit("an empty commit", &git.CommitOptions{AllowEmptyCommits: true,
		Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := clone.Push(&git.PushOptions{Auth: auth}); err != nil {
		t.Fatalf("push to %s with the demo's credentials: %v", url, err)
	}
	bare, err := git.PlainOpen(s.BarePath("acme.git"))
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := bare.Reference(plumbing.NewBranchReferenceName("main"), false); err != nil || ref.Hash() != pushed {
		t.Errorf("the bare repository's main is %v (%v), want the pushed %s", ref, err, pushed)
	}

	for _, a := range []*githttp.BasicAuth{nil, {Username: s.Username, Password: "wrong"}, {Username: "eve", Password: s.Password}} {
		var am transport.AuthMethod
		if a != nil {
			am = a
		}
		_, err := git.PlainClone(t.TempDir(), false, &git.CloneOptions{URL: url, Auth: am})
		if !errors.Is(err, transport.ErrAuthenticationRequired) {
			t.Errorf("clone with %v: %v, want %v", a, err, transport.ErrAuthenticationRequired)
		}
	}

	// git's protocol is all it serves: not a repository's files, nor
	// anything beside the repositories (the demo's keys live there).
	for _, path := range []string{"/acme.git/config", "/../git/acme.git/info/refs?service=git-upload-pack", "/acme.git/../../keys"} {
		req, err := http.NewRequest(http.MethodGet, s.gitURL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(s.Username, s.Password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("GET %s answered 200:\n%s", path, body)
		}
	}
}

// TestHasHTTPBackend: a git without http-backend is named before the demo
// starts, not met as a 500 on the first clone.
func TestHasHTTPBackend(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := hasHTTPBackend(gitBin); err != nil {
		t.Errorf("the installed git: %v", err)
	}
	empty := t.TempDir()
	split := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(split, []byte("#!/bin/sh\necho "+empty+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = hasHTTPBackend(split)
	if err == nil || !strings.Contains(err.Error(), "git http-backend, which "+split+" lacks (not in "+empty+")") {
		t.Errorf("a git without http-backend: %v", err)
	}
}
