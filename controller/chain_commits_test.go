package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/bench"
	"github.com/vectorflow-dev/vectorflow/internal/demo"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestTemplateBumpThroughAnAutomaticChainCostsOneStateCommitPerHop: a
// template bump travels a chain of 10 automatic stages in one settle, and
// the state branch gets one commit per hop and one more: the commit that
// starts a promotion (its InProgress, written before the overlay commit, so
// no other controller executes it too) also records the hop before it as
// Succeeded, and only the last result needs a commit of its own. Fewer is
// not allowed: a promotion is recorded InProgress before its overlay commit
// is pushed. Every promotion keeps its records: each hop's promotion is
// Succeeded at its overlay commit, and each was InProgress in a state
// commit before it.
func TestTemplateBumpThroughAnAutomaticChainCostsOneStateCommitPerHop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a git server and a 10-stage chain")
	}
	const hops = 10
	testutil.RequireGit(t)
	repo, err := bench.Generate(bench.Chain, hops, nil, 0) // no approver key: every stage is automatic
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, repo.Files); err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, dir, "main", "chain.git")
	url := srv.HTTPURL("chain.git")
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	w := signedWriter(t)
	c, err := New(Options{URL: url, Branch: "main", Writer: w, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.RunUntilStable(ctx, 5); err != nil {
		t.Fatalf("cold settle: %v", err)
	}
	clone := t.TempDir()
	testutil.Git(t, clone, nil, "clone", "-q", "--no-single-branch", srv.HTTPURLWithCredentials("chain.git"), ".")
	stateCommits := func() []string {
		testutil.Git(t, clone, nil, "fetch", "-q", "origin")
		return strings.Fields(testutil.Git(t, clone, nil, "rev-list", "--first-parent", "origin/"+DefaultStateBranch))
	}
	before := len(stateCommits())

	// A person bumps the template.
	testutil.Git(t, clone, nil, "checkout", "-q", "main")
	template := filepath.Join(clone, filepath.FromSlash(repo.Template))
	current, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	bumped, err := repo.Bump(current, repo.Version, "1.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(template, bumped, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, clone, nil, "commit", "-qam", "bump app to 1.0.1")
	testutil.Git(t, clone, nil, "push", "-q", "origin", "HEAD:main")

	if _, err := c.RunUntilStable(ctx, 5); err != nil {
		t.Fatalf("settle after the bump: %v", err)
	}
	commits := stateCommits()
	t.Logf("%d state commits before the bump, %d after", before, len(commits))
	if got, want := len(commits)-before, hops+1; got != want {
		t.Errorf("the bump took %d state commits through %d automatic hops, want %d", got, hops, want)
	}

	// Every hop's promotion is Succeeded at its overlay commit, and was
	// InProgress in an earlier state commit: the audit trail has it.
	state := readStateOf(t, url, auth)
	testutil.Git(t, clone, nil, "fetch", "-q", "origin")
	for i := 1; i <= hops; i++ {
		stage := fmt.Sprintf("dev%d", i)
		var bumpedPromotion *v1alpha1.VectorPromotion
		for _, p := range state.Promotions {
			if p.Spec.Target.Name == stage && (bumpedPromotion == nil || p.Spec.Sequence > bumpedPromotion.Spec.Sequence) {
				bumpedPromotion = p
			}
		}
		if bumpedPromotion == nil || bumpedPromotion.Status.State != v1alpha1.PromotionSucceeded {
			t.Errorf("stage %s: latest promotion %+v, want Succeeded", stage, bumpedPromotion)
			continue
		}
		overlay := testutil.Git(t, clone, nil, "show", "origin/main:apps/overlays/"+stage+"/kustomization.yaml")
		if !strings.Contains(overlay, `newTag: "1.0.1"`) {
			t.Errorf("stage %s does not run 1.0.1:\n%s", stage, overlay)
		}
		file := "promotions/" + bumpedPromotion.Spec.VectorPromotionConfigName + "/" + bumpedPromotion.Name + ".yaml"
		states := testutil.Git(t, clone, nil, "log", "--format=%H", "origin/"+DefaultStateBranch, "--", file)
		if n := len(strings.Fields(states)); n < 2 {
			t.Errorf("promotion %s changed in %d state commits, want its InProgress and its Succeeded", bumpedPromotion.Name, n)
		}
		inProgress := false
		for _, h := range strings.Fields(states) {
			content, err := testutil.GitE(clone, nil, "show", h+":"+file)
			inProgress = inProgress || err == nil && strings.Contains(content, "state: InProgress")
		}
		if !inProgress {
			t.Errorf("promotion %s was never recorded InProgress on the state branch", bumpedPromotion.Name)
		}
	}
}

// readStateOf reads the state branch as it is on the server.
func readStateOf(t *testing.T, url string, auth func(string) source.Auth) *reconcilers.State {
	t.Helper()
	repo, err := source.Open(url, auth(url))
	if err != nil {
		t.Fatal(err)
	}
	_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
	if err != nil {
		t.Fatal(err)
	}
	return state
}
