package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestIdentitiesDoNotRepeatAfterTheStateBranchIsDeleted: the state branch
// is deleted (or the repository pushed to a new remote) after
// latest-to-dev-1 ran. The next promotion of the config must continue after
// the sequence dev's history holds, and dev must get the new vector: an old
// commit whose trailer happens to carry the same promotion name is not this
// promotion's work.
func TestIdentitiesDoNotRepeatAfterTheStateBranchIsDeleted(t *testing.T) {
	f := newRaceFixture(t)
	clock := time.Now()
	first := f.controllerAt(t, func() time.Time { return clock })
	if _, err := first.RunUntilStable(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	before := f.readState(t)
	old := before.Promotions["latest-to-dev-1"]
	if old == nil || old.Status.State != v1alpha1.PromotionSucceeded {
		t.Fatalf("latest-to-dev-1 did not succeed on the first run: %+v", old)
	}

	clone := f.clone(t)
	testutil.Git(t, clone, nil, "push", "-q", "origin", "--delete", DefaultStateBranch)
	f.pushTemplateChange(t, "1.0.2", "1.0.3")

	clock = clock.Add(time.Hour) // a later run: the new vector gets a later version
	second := f.controllerAt(t, func() time.Time { return clock })
	if _, err := second.RunUntilStable(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	after := f.readState(t)
	latest := after.Templates["acme"].Status.LatestVector
	if latest == "" || latest == old.Spec.Vector {
		t.Fatalf("the template change made no new vector: latest %q, old %q", latest, old.Spec.Vector)
	}
	var promoted *v1alpha1.VectorPromotion
	for _, p := range after.Promotions {
		if p.Spec.VectorPromotionConfigName == "latest-to-dev" && p.Spec.Vector == latest {
			promoted = p
		}
	}
	if promoted == nil {
		t.Fatalf("no promotion of %s to dev: %v", latest, keys.Sorted(after.Promotions))
	}
	if promoted.Name == old.Name {
		t.Errorf("the new promotion reuses the identity %s of the one before the reset", old.Name)
	}
	if promoted.Status.State != v1alpha1.PromotionSucceeded || promoted.Status.Commit == old.Status.Commit {
		t.Errorf("%s is %s at %s (the old promotion's commit is %s), want Succeeded at a new commit; conditions %+v",
			promoted.Name, promoted.Status.State, promoted.Status.Commit, old.Status.Commit, promoted.Status.Conditions)
	}
	overlay := testutil.Git(t, f.clone(t), nil, "show", "origin/main:apps/overlays/dev/kustomization.yaml")
	if !strings.Contains(overlay, "vectorflow.dev/vector: "+latest) || !strings.Contains(overlay, `newTag: "1.0.3"`) {
		t.Errorf("dev does not run %s (service-a 1.0.3):\n%s", latest, overlay)
	}
}

// controllerAt is a controller of the fixture whose decisions use clock.
func (f *raceFixture) controllerAt(t testing.TB, clock func() time.Time) *Controller {
	t.Helper()
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: f.signer, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{URL: f.url, Branch: "main", Writer: w, Clock: clock, Auth: f.auth})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *raceFixture) auth(string) source.Auth {
	return source.Auth{Username: f.srv.Username, Password: f.srv.Password}
}

// readState reads the state branch as it is on the server.
func (f *raceFixture) readState(t testing.TB) *reconcilers.State {
	t.Helper()
	repo, err := source.Open(f.url, f.auth(f.url))
	if err != nil {
		t.Fatal(err)
	}
	_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// promotionCommits maps the promotions named by commits on main to their
// commits, newest first.
func (f *raceFixture) promotionCommits(t testing.TB) map[string][]plumbing.Hash {
	t.Helper()
	out := map[string][]plumbing.Hash{}
	log := testutil.Git(t, f.clone(t), nil, "log", "--format=%H%n%B%x00", "origin/main")
	for _, entry := range strings.Split(log, "\x00") {
		hash, msg, _ := strings.Cut(strings.TrimSpace(entry), "\n")
		if tr, ok := gitwriter.ParseTrailers(strings.TrimSpace(msg)); ok {
			out[tr.Promotion] = append(out[tr.Promotion], plumbing.NewHash(hash))
		}
	}
	return out
}

// TestPushWhoseAnswerWasLostSucceeds: the git server receives and applies
// the push of the promotion commits, then goes away before it answers. The
// push's fate is uncertain, not failed: once the server is back, the
// promotions are Succeeded at the commits that reached main, each written
// once, and none is Failed (which would spend its approval).
func TestPushWhoseAnswerWasLostSucceeds(t *testing.T) {
	f := newRaceFixture(t)
	proxy := testutil.StartLostAnswerProxy(t, f.srv)
	f.url = proxy.URL("acme.git")
	c := f.controller(t)

	proxy.LoseNextPush("refs/heads/main")
	_, err := c.Pass(context.Background())
	if proxy.Dropped() == 0 {
		t.Fatalf("the pass pushed nothing to main (error %v)", err)
	}
	t.Logf("the pass whose push lost its answer: %v", err)
	proxy.Restore()
	runAfterOutage(t, c)

	state := f.readState(t)
	commits := f.promotionCommits(t)
	p := state.Promotions["latest-to-dev-1"]
	if p == nil {
		t.Fatalf("no latest-to-dev-1: %v", keys.Sorted(state.Promotions))
	}
	for _, name := range keys.Sorted(state.Promotions) {
		p := state.Promotions[name]
		if p.Status.State == v1alpha1.PromotionFailed {
			t.Errorf("%s is Failed: %+v", name, p.Status.Conditions)
		}
		if p.Status.State != v1alpha1.PromotionSucceeded {
			continue
		}
		if got := commits[name]; len(got) != 1 || got[0].String() != p.Status.Commit {
			t.Errorf("%s is Succeeded at %s; its commits on main are %v, want exactly that one", name, p.Status.Commit, got)
		}
	}
	if p.Status.State != v1alpha1.PromotionSucceeded {
		t.Errorf("latest-to-dev-1 is %s, want Succeeded at the commit that reached main: %+v", p.Status.State, p.Status.Conditions)
	}
}

// TestPushWhoseAnswerWasLostSucceedsAfterTheDeadline: the server that took
// the push stays away longer than the execution deadline. When it is back,
// the promotion is not retired as timed out: the target's history shows its
// commit, and the overlay names its vector, so it is Succeeded there.
func TestPushWhoseAnswerWasLostSucceedsAfterTheDeadline(t *testing.T) {
	f := newRaceFixture(t)
	proxy := testutil.StartLostAnswerProxy(t, f.srv)
	f.url = proxy.URL("acme.git")
	clock := time.Now()
	c := f.controllerAt(t, func() time.Time { return clock })

	proxy.LoseNextPush("refs/heads/main")
	if _, err := c.Pass(context.Background()); err == nil || proxy.Dropped() == 0 {
		t.Fatalf("the pass pushed nothing to main or lost nothing (error %v)", err)
	}
	clock = clock.Add(2 * reconcilers.ExecutionDeadline)
	proxy.Restore()
	// The fixture's two targets are written concurrently, so the lost push
	// carries whichever promotion pushed first; the other one's push met
	// the server down and was never applied. Which is which is read from
	// main before the controller runs again.
	lost := f.promotionCommits(t)
	if len(lost) == 0 {
		t.Fatal("the lost push did not reach main")
	}
	runAfterOutage(t, c)
	state := f.readState(t)
	commits := f.promotionCommits(t)
	for name := range lost {
		p := state.Promotions[name]
		if p == nil || p.Status.State != v1alpha1.PromotionSucceeded {
			t.Fatalf("%s: %+v, want Succeeded at the commit on main %v", name, p, commits[name])
		}
		if got := commits[name]; len(got) != 1 || got[0].String() != p.Status.Commit {
			t.Errorf("%s is Succeeded at %s; its commits on main are %v", name, p.Status.Commit, got)
		}
	}
}

// runAfterOutage runs the controller until stable once the server is back.
// A connection the client pooled before the outage can still fail the
// first fetch after it (seen under heavy load: "unexpected EOF"), as it
// would in production, where the runner retries the pass; so may the test,
// twice.
func runAfterOutage(t *testing.T, c *Controller) {
	t.Helper()
	var err error
	for range 3 {
		if _, err = c.RunUntilStable(context.Background(), 10); err == nil {
			return
		}
		t.Logf("a pass after the outage failed, as the runner would see it, and is retried: %v", err)
	}
	t.Fatal(err)
}
