package source

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
)

// TestLoadThenCallsFetchedOnceTheBranchesAreIn: the callback of LoadThen
// runs once per load, after the fetch has stored the branch fetched along
// at the server's tip (what a controller reads meanwhile), and not at all
// when the fetch fails.
func TestLoadThenCallsFetchedOnceTheBranchesAreIn(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	bare := srv.BarePath("config")
	url := srv.HTTPURL("config")
	auth := Auth{Username: srv.Username, Password: srv.Password}
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), Auth: func(string) Auth { return auth }})
	repo, err := loader.Repository(url)
	if err != nil {
		t.Fatal(err)
	}
	repo.FetchAlso("vectorflow/state")
	along := plumbing.NewRemoteReferenceName("origin", "vectorflow/state")
	ctx := context.Background()

	// seen is the branch fetched along as each callback found it.
	var seen []string
	fetched := func() {
		ref, err := repo.Repo().Reference(along, true)
		if err != nil {
			seen = append(seen, "absent")
			return
		}
		seen = append(seen, ref.Hash().String())
	}
	tip := func() string {
		return strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "vectorflow/state"))
	}

	testutil.Git(t, bare, nil, "branch", "vectorflow/state", fixtureBranch)
	first := tip()
	snap, err := loader.LoadThen(ctx, url, fixtureBranch, fetched)
	if err != nil || len(snap.Problems) > 0 {
		t.Fatalf("LoadThen: %v, problems %v", err, snap.Problems)
	}
	// A commit on the branch fetched along only: the next load resolves
	// nothing anew, and its callback still finds the branch moved.
	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "-q", "--branch", "vectorflow/state", srv.HTTPURLWithCredentials("config"), ".")
	testutil.Git(t, work, nil, "commit", "-q", "--allow-empty", "-m", "state")
	testutil.Git(t, work, nil, "push", "-q", "origin", "vectorflow/state")
	second := tip()
	if _, err := loader.LoadThen(ctx, url, fixtureBranch, fetched); err != nil {
		t.Fatal(err)
	}
	if want := []string{first, second}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("the callbacks found the branch fetched along at %v, want %v", seen, want)
	}

	seen = nil
	if _, err := loader.LoadThen(ctx, url, "no-such-branch", fetched); err == nil {
		t.Error("LoadThen of a branch the server does not have: no error")
	}
	if len(seen) > 0 {
		t.Errorf("a load whose fetch failed called back: %v", seen)
	}
}
