package source

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
)

// TestStillAtSaysWhetherABranchMoved: the commits a load read are still
// where a fetch finds them until someone pushes; a load of a plain
// directory names none, and a branch that cannot be fetched is not still
// anywhere.
func TestStillAtSaysWhetherABranchMoved(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	url := srv.HTTPURL("config")
	l := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}),
		Auth: func(string) Auth { return Auth{Username: srv.Username, Password: srv.Password} }})
	snap, err := l.Load(ctx, url, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	read, ok := l.ReadCommits(url, fixtureBranch)
	if want := []BranchCommit{{URL: url, Branch: fixtureBranch, Commit: snap.Commit}}; !ok || !slices.Equal(read, want) {
		t.Fatalf("ReadCommits = %+v, %t; want %+v", read, ok, want)
	}
	if !l.StillAt(ctx, read) {
		t.Error("StillAt is false with nothing pushed")
	}
	absent := BranchCommit{URL: url, Branch: "no-such-branch", Commit: plumbing.ZeroHash.String()}
	if !l.StillAt(ctx, append(read, absent)) {
		t.Error("StillAt is false for a branch that was absent and still is")
	}
	if _, ok := l.ReadCommits(url, "other"); ok {
		t.Error("ReadCommits names commits for a branch never loaded")
	}

	bare := srv.BarePath("config")
	testutil.Git(t, bare, nil, "update-ref", "refs/heads/"+fixtureBranch,
		strings.TrimSpace(testutil.Git(t, bare, nil, "commit-tree", "-p", fixtureBranch, "-m", "moved", fixtureBranch+"^{tree}")))
	if l.StillAt(ctx, read) {
		t.Error("StillAt is true after a push")
	}
	if l.StillAt(ctx, []BranchCommit{{URL: url, Branch: "no-such-branch", Commit: snap.Commit}}) {
		t.Error("StillAt is true for a branch that does not exist")
	}
	if l.StillAt(ctx, []BranchCommit{{URL: srv.HTTPURL("no-such-repository"), Branch: fixtureBranch, Commit: snap.Commit}}) {
		t.Error("StillAt is true for a repository that does not exist")
	}

	dir := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	if _, err := dir.Load(ctx, "testdata/good", ""); err != nil {
		t.Fatal(err)
	}
	if read, ok := dir.ReadCommits("testdata/good", ""); ok {
		t.Errorf("a plain directory's load names commits %+v", read)
	}
}
