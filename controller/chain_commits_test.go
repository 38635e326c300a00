package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/bench"
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
// commit before it. Held (run --once), the same commits go out in one push,
// and the events of every hop only once they landed.
func TestTemplateBumpThroughAnAutomaticChainCostsOneStateCommitPerHop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a git server and a 10-stage chain")
	}
	t.Run("pushed each pass", func(t *testing.T) { templateBumpThroughAnAutomaticChain(t, false) })
	t.Run("held", func(t *testing.T) { templateBumpThroughAnAutomaticChain(t, true) })
}

func templateBumpThroughAnAutomaticChain(t *testing.T, held bool) {
	const hops = 10
	f := newChainFixture(t, hops, held)
	ctx := context.Background()
	clone, repo, url, auth := f.clone, f.repo, f.url, f.auth
	stateCommits := func() []string {
		testutil.Git(t, clone, nil, "fetch", "-q", "origin")
		return strings.Fields(testutil.Git(t, clone, nil, "rev-list", "--first-parent", "origin/"+DefaultStateBranch))
	}
	before := len(stateCommits())

	f.bump(t, repo.Version, "1.0.1")
	f.proxy.Reset()
	f.events.reset()
	if _, err := f.c.RunUntilStable(ctx, 5); err != nil {
		t.Fatalf("settle after the bump: %v", err)
	}
	counts := f.proxy.Reset()
	t.Logf("%d hops: %s", hops, counts)
	if held && counts[testutil.Push] != 1 {
		t.Errorf("a held run through %d hops took %s, want one push", hops, counts)
	}
	finalState := f.serverTip(t, DefaultStateBranch)
	succeeded := 0
	for _, e := range f.events.all() {
		if held && e.stateTip != finalState {
			t.Errorf("event %s %s %s published with the server's state branch at %s, before the held writes landed (%s)", e.Kind, e.Name, e.Reason, e.stateTip, finalState)
		}
		if e.Reason == v1alpha1.PromotionSucceededReason {
			succeeded++
		}
	}
	if succeeded != hops {
		t.Errorf("%d Succeeded events for %d hops", succeeded, hops)
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

// chainFixture is a chain of automatic stages (bench's Chain without
// approvers) on a git server behind a counting proxy, settled once by c,
// and a clone of it for a person's pushes.
type chainFixture struct {
	srv    *testutil.GitServer
	proxy  *testutil.CountingProxy
	repo   bench.Repository
	url    string
	auth   func(string) source.Auth
	c      *Controller
	events *recordedEvents
	clone  string
}

func newChainFixture(t *testing.T, hops int, held bool) *chainFixture {
	t.Helper()
	testutil.RequireGit(t)
	repo, dir := bench.WriteTemp(t, bench.Chain, hops, nil) // no approver key: every stage is automatic
	f := &chainFixture{srv: testutil.StartGitServer(t), repo: repo}
	f.srv.InitRepo(t, dir, "main", "chain.git")
	f.proxy = testutil.StartCountingProxy(t, f.srv)
	f.url = f.proxy.URL("chain.git")
	f.auth = func(string) source.Auth { return source.Auth{Username: f.srv.Username, Password: f.srv.Password} }
	f.events = &recordedEvents{stateTip: func() string { return f.serverTip(t, DefaultStateBranch) }}
	c, err := New(Options{URL: f.url, Branch: "main", Writer: signedWriter(t), Auth: f.auth, HoldWrites: held, Events: f.events})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	if _, err := f.c.RunUntilStable(context.Background(), 5); err != nil {
		t.Fatalf("cold settle: %v", err)
	}
	f.clone = t.TempDir()
	testutil.Git(t, f.clone, nil, "clone", "-q", "--no-single-branch", f.srv.HTTPURLWithCredentials("chain.git"), ".")
	testutil.Git(t, f.clone, nil, "checkout", "-q", "main")
	return f
}

// bump pushes a template change as a person would.
func (f *chainFixture) bump(t testing.TB, from, to string) {
	t.Helper()
	if err := f.bumpE(from, to); err != nil {
		t.Fatal(err)
	}
}

// bumpE is bump for a goroutine that may not fail the test itself.
func (f *chainFixture) bumpE(from, to string) error {
	if _, err := testutil.GitE(f.clone, nil, "pull", "-q", "--rebase", "origin", "main"); err != nil {
		return err
	}
	template := filepath.Join(f.clone, filepath.FromSlash(f.repo.Template))
	current, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	bumped, err := f.repo.Bump(current, from, to)
	if err != nil {
		return err
	}
	if err := os.WriteFile(template, bumped, 0o644); err != nil {
		return err
	}
	if _, err := testutil.GitE(f.clone, nil, "commit", "-qam", "bump app to "+to); err != nil {
		return err
	}
	_, err = testutil.GitE(f.clone, nil, "push", "-q", "origin", "HEAD:main")
	return err
}

// serverTip is where branch is on the server, "" when it does not exist.
func (f *chainFixture) serverTip(t testing.TB, branch string) string {
	t.Helper()
	out, err := testutil.GitE(f.srv.BarePath("chain.git"), nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// recordedEvents keeps every event published, with where the server's
// state branch was when it was.
type recordedEvents struct {
	stateTip func() string
	mu       sync.Mutex
	events   []recordedEvent
}

type recordedEvent struct {
	reconcilers.Event
	stateTip string
}

func (r *recordedEvents) Publish(_ logr.Logger, _ string, events []reconcilers.Event) {
	tip := r.stateTip()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range events {
		r.events = append(r.events, recordedEvent{Event: e, stateTip: tip})
	}
}

func (r *recordedEvents) all() []recordedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recordedEvents) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
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
