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
	repo, err := bench.Generate(bench.Chain, hops, nil, 0) // no approver key: every stage is automatic
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, repo.Files); err != nil {
		t.Fatal(err)
	}
	f := &chainFixture{srv: testutil.StartGitServer(t), repo: repo}
	f.srv.InitRepo(t, dir, "main", "chain.git")
	f.proxy = testutil.StartCountingProxy(t, f.srv)
	f.url = f.proxy.URL("chain.git")
	f.auth = func(string) source.Auth { return source.Auth{Username: f.srv.Username, Password: f.srv.Password} }
	f.events = &recordedEvents{stateTip: func() string { return f.serverTip(t, DefaultStateBranch) }}
	f.c, err = New(Options{URL: f.url, Branch: "main", Writer: signedWriter(t), Auth: f.auth, HoldWrites: held, Events: f.events})
	if err != nil {
		t.Fatal(err)
	}
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

// TestHeldRunStartsOverWhenABranchMoves: a person pushes to main after a
// held run fetched it. The run's one push is refused, nothing it held
// reaches the server, and the run starts again from a fetch: the person's
// commit stays, and every stage ends at the person's version, with no
// record of the version the refused push carried.
func TestHeldRunStartsOverWhenABranchMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a git server and a 5-stage chain")
	}
	const hops = 5
	f := newChainFixture(t, hops, true)
	f.bump(t, f.repo.Version, "1.0.1")
	var personErr error
	f.proxy.BeforeAnswering(testutil.Fetch, func() { personErr = f.bumpE("1.0.1", "1.0.2") })
	f.proxy.Reset()
	passes, err := f.c.RunUntilStable(context.Background(), 5)
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	if personErr != nil {
		t.Fatalf("the person's push: %v", personErr)
	}
	counts := f.proxy.Reset()
	t.Logf("%d passes: %s", len(passes), counts)
	if counts[testutil.Fetch] < 2 {
		t.Errorf("the run fetched %d times (%s); want it to start over from a second fetch", counts[testutil.Fetch], counts)
	}
	person := strings.TrimSpace(testutil.Git(t, f.clone, nil, "rev-parse", "HEAD"))
	if _, err := testutil.GitE(f.srv.BarePath("chain.git"), nil, "merge-base", "--is-ancestor", person, "main"); err != nil {
		t.Fatalf("the person's commit %s is not on main", person)
	}
	state := readStateOf(t, f.url, f.auth)
	for _, v := range state.Vectors {
		for _, c := range v.Spec.Components {
			if c.Tag == "1.0.1" {
				t.Errorf("vector %s of 1.0.1 is recorded, but the push that carried it was refused", v.Name)
			}
		}
	}
	for i := 1; i <= hops; i++ {
		overlay := testutil.Git(t, f.srv.BarePath("chain.git"), nil, "show", fmt.Sprintf("main:apps/overlays/dev%d/kustomization.yaml", i))
		if !strings.Contains(overlay, `newTag: "1.0.2"`) {
			t.Errorf("stage dev%d does not run 1.0.2:\n%s", i, overlay)
		}
	}
	// Two vectors were ever promoted on main: the cold run's and 1.0.2's.
	vectors := map[string]bool{}
	for _, v := range strings.Fields(testutil.Git(t, f.srv.BarePath("chain.git"), nil, "log", "--format=%(trailers:key=Vectorflow-Vector,valueonly)", "main")) {
		vectors[v] = true
	}
	if len(vectors) != 2 {
		t.Errorf("main has promotions of the vectors %v; want the first run's and 1.0.2's only", sortedKeys(vectors))
	}
	for _, e := range f.events.all() {
		if strings.Contains(e.Message, "1.0.1") {
			t.Errorf("event %q announces the refused push", e.Message)
		}
	}
}

// TestHeldRunPushesBeforeWritingAnotherRepository: a held run cannot hold a
// promotion into a landscape of another repository, so it pushes the state
// commit that starts the promotion first: the stage's repository never
// holds a promotion the config repository has no record of.
func TestHeldRunPushesBeforeWritingAnotherRepository(t *testing.T) {
	srv := testutil.StartGitServer(t)
	stages := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	if err := os.RemoveAll(filepath.Join(stages, "vectorflow")); err != nil {
		t.Fatal(err)
	}
	srv.InitRepo(t, stages, "main", "stages.git")
	proxy := testutil.StartCountingProxy(t, srv)
	landscape := "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: shared\nspec:\n  repository:\n    url: " + proxy.URL("stages.git") + "\n    branch: main\n"
	srv.InitRepo(t, configRepo(t, landscape+`---
apiVersion: vectorflow.dev/v1alpha1
kind: Stage
metadata:
  name: dev
spec:
  landscape: shared
  path: apps/overlays/dev
---
`+readExample(t, "template.yaml")+`---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: latest-to-dev
spec:
  source: {kind: VectorTemplate, name: acme}
  target: {kind: Stage, name: dev, landscape: shared}
`), "main", "builds.git")
	stateAtFirstPush := "not pushed"
	proxy.BeforeAnswering(testutil.Push, func() {
		out, err := testutil.GitE(srv.BarePath("builds.git"), nil, "show", DefaultStateBranch+":promotions/latest-to-dev/latest-to-dev-1.yaml")
		if err != nil {
			out = "no record: " + err.Error()
		}
		stateAtFirstPush = out
	})
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	c, err := New(Options{URL: proxy.URL("builds.git"), Branch: "main", Writer: signedWriter(t), Auth: auth, HoldWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunUntilStable(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stateAtFirstPush, "state: InProgress") {
		t.Errorf("when the first push was answered, the config repository's record of the promotion was:\n%s\nwant it InProgress", stateAtFirstPush)
	}
	overlay := testutil.Git(t, srv.BarePath("stages.git"), nil, "log", "--format=%(trailers:key=Vectorflow-Promotion,valueonly)", "main")
	if !strings.Contains(overlay, "latest-to-dev-1") {
		t.Errorf("the stage's repository has no commit of latest-to-dev-1:\n%s", overlay)
	}
	if state := readStateOf(t, proxy.URL("builds.git"), auth); state.Promotions["latest-to-dev-1"] == nil || state.Promotions["latest-to-dev-1"].Status.State != v1alpha1.PromotionSucceeded {
		t.Errorf("latest-to-dev-1 is not recorded Succeeded: %+v", state.Promotions["latest-to-dev-1"])
	}
}

// TestHeldRunPromotesIntoAnotherBranchOfItsRepository: a landscape on
// another branch of the config repository is read through a fetch, so a
// held run pushes a promotion into it before the next pass reads it: the
// vector goes on from dev to test in the same run, each promotion once.
func TestHeldRunPromotesIntoAnotherBranchOfItsRepository(t *testing.T) {
	srv := testutil.StartGitServer(t)
	proxy := testutil.StartCountingProxy(t, srv)
	url := proxy.URL("mono.git")
	landscape := "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: deploy\nspec:\n  repository:\n    url: " + url + "\n    branch: deploy\n"
	srv.InitRepo(t, configRepo(t, landscape+`---
apiVersion: vectorflow.dev/v1alpha1
kind: Stage
metadata:
  name: dev
spec:
  landscape: deploy
  path: apps/overlays/dev
---
`+readExample(t, "template.yaml")+`---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: latest-to-dev
spec:
  source: {kind: VectorTemplate, name: acme}
  target: {kind: Stage, name: dev, landscape: deploy}
---
apiVersion: vectorflow.dev/v1alpha1
kind: Stage
metadata:
  name: test
spec:
  landscape: deploy
  path: apps/overlays/test
---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: dev-to-test
spec:
  source: {kind: Stage, name: dev, landscape: deploy}
  target: {kind: Stage, name: test, landscape: deploy}
  approval: {required: false}
`), "main", "mono.git")
	stages := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	testutil.Git(t, stages, nil, "init", "-q", "-b", "deploy")
	testutil.Git(t, stages, nil, "add", "-A")
	testutil.Git(t, stages, []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}, "commit", "-qm", "stages")
	testutil.Git(t, stages, nil, "push", "-q", srv.HTTPURLWithCredentials("mono.git"), "deploy")

	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	c, err := New(Options{URL: url, Branch: "main", Writer: signedWriter(t), Auth: auth, HoldWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunUntilStable(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	// The vector reached test in the same run: the pass after dev's
	// promotion read dev's overlay as it was written.
	state := readStateOf(t, url, auth)
	log := testutil.Git(t, srv.BarePath("mono.git"), nil, "log", "--format=%(trailers:key=Vectorflow-Promotion,valueonly)", "deploy")
	for _, name := range []string{"latest-to-dev-1", "dev-to-test-1"} {
		if p := state.Promotions[name]; p == nil || p.Status.State != v1alpha1.PromotionSucceeded {
			t.Errorf("%s is not recorded Succeeded: %+v", name, p)
		}
		if got := strings.Count(log, name); got != 1 {
			t.Errorf("the deploy branch has %d commits of %s, want 1:\n%s", got, name, log)
		}
	}
	if len(state.Promotions) != 2 {
		t.Errorf("promotions %v, want latest-to-dev-1 and dev-to-test-1", sortedKeys(state.Promotions))
	}
}
