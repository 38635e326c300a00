package source

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestFetchAlsoBringsBranchesInOneRequest: a branch fetched along comes in
// the same request as the one asked for; while it does not exist the fetch
// still succeeds, and once it is deleted its copy is forgotten, so a reader
// never takes a deleted branch for a live one.
func TestFetchAlsoBringsBranchesInOneRequest(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	bare := srv.BarePath("config")
	proxy := testutil.StartCountingProxy(t, srv)
	repo, err := Open(proxy.URL("config"), Auth{Username: srv.Username, Password: srv.Password})
	if err != nil {
		t.Fatal(err)
	}
	repo.FetchAlso("vectorflow/state", "vectorflow/state")
	ctx := context.Background()
	state := plumbing.NewRemoteReferenceName("origin", "vectorflow/state")

	if _, err := repo.Fetch(ctx, fixtureBranch); err != nil {
		t.Fatalf("fetch with a branch along that does not exist: %v", err)
	}
	if _, err := repo.Repo().Reference(state, true); err == nil {
		t.Fatal("a branch that does not exist has a copy")
	}

	testutil.Git(t, bare, nil, "branch", "vectorflow/state", fixtureBranch)
	want := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "vectorflow/state"))
	proxy.Reset()
	if _, err := repo.Fetch(ctx, fixtureBranch); err != nil {
		t.Fatal(err)
	}
	if got := proxy.Reset(); got.Total() > 2 {
		t.Errorf("fetching two branches took %s, want one advertisement and at most one pack", got)
	}
	ref, err := repo.Repo().Reference(state, true)
	if err != nil || ref.Hash().String() != want {
		t.Fatalf("the state branch fetched along: %v, %v; want %s", ref, err, want)
	}

	testutil.Git(t, bare, nil, "branch", "-D", "vectorflow/state")
	if _, err := repo.Fetch(ctx, fixtureBranch); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Repo().Reference(state, true); err == nil {
		t.Fatal("the deleted state branch still has a copy")
	}
}
