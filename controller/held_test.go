package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

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
		t.Errorf("main has promotions of the vectors %v; want the first run's and 1.0.2's only", keys.Sorted(vectors))
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
	srv.InitRepo(t, quickstartStages(t), "main", "stages.git")
	proxy := testutil.StartCountingProxy(t, srv)
	srv.InitRepo(t, configRepo(t, latestToDevElsewhere(t, "shared", proxy.URL("stages.git"), "main")), "main", "builds.git")
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
	srv.InitRepo(t, configRepo(t, latestToDevElsewhere(t, "deploy", url, "deploy")+`---
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
	stages := quickstartStages(t)
	testutil.Git(t, stages, nil, "init", "-q", "-b", "deploy")
	testutil.Git(t, stages, nil, "add", "-A")
	testutil.Git(t, stages, nil, "commit", "-qm", "stages")
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
		t.Errorf("promotions %v, want latest-to-dev-1 and dev-to-test-1", keys.Sorted(state.Promotions))
	}
}

// latestToDevElsewhere is a config directory whose one stage, dev, lives in
// landscape, on branch of the repository at url, and follows the
// quickstart's template on its own.
func latestToDevElsewhere(t *testing.T, landscape, url, branch string) string {
	t.Helper()
	return `apiVersion: vectorflow.dev/v1alpha1
kind: Landscape
metadata:
  name: ` + landscape + `
spec:
  repository:
    url: ` + url + `
    branch: ` + branch + `
---
apiVersion: vectorflow.dev/v1alpha1
kind: Stage
metadata:
  name: dev
spec:
  landscape: ` + landscape + `
  path: apps/overlays/dev
---
` + readExample(t, "template.yaml") + `---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: latest-to-dev
spec:
  source: {kind: VectorTemplate, name: acme}
  target: {kind: Stage, name: dev, landscape: ` + landscape + `}
`
}
