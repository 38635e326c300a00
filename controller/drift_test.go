package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestFailedPromotionIsNotRetriedAfterTheTTL: latest-to-dev (automatic,
// keepLastPromotions 0, ttlAfterFinished 1m) fails for good because the
// remote refuses the push. Once cleanup has deleted the failed promotion,
// the config does not try the vector again on its own: it remembers it in
// status.promotionHistory and says so on its Drift condition.
func TestFailedPromotionIsNotRetriedAfterTheTTL(t *testing.T) {
	dir := quickstartWithShortTTL(t)
	// A non-bare repository refuses a push to its checked-out branch.
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", "-A")
	testutil.Git(t, dir, nil, "commit", "-qm", "acme")
	clock := &testClock{start: time.Now()}
	c := driftController(t, dir, nil, clock)
	ctx := context.Background()
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	repo, err := source.Open(dir, source.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	state := readDriftState(t, repo)
	p := state.Promotions["latest-to-dev-1"]
	if p == nil || reconcilers.DeriveState(p) != v1alpha1.PromotionFailed {
		t.Fatalf("latest-to-dev-1 is %+v, want Failed", p)
	}
	vector := p.Spec.Vector

	for i := 1; i <= 3; i++ {
		clock.advance(2 * time.Minute)
		if _, err := c.RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	state = readDriftState(t, repo)
	if _, ok := state.Promotions["latest-to-dev-1"]; ok {
		t.Fatal("latest-to-dev-1 is still there past its TTL with keepLastPromotions 0")
	}
	for name, p := range state.Promotions {
		if p.Spec.VectorPromotionConfigName == "latest-to-dev" {
			t.Errorf("the failed vector was tried again on its own: %s (%s) promotes %s", name, reconcilers.DeriveState(p), p.Spec.Vector)
		}
	}
	cfg := state.Configs["latest-to-dev"]
	if h := cfg.Status.PromotionHistory; len(h) != 1 || h[0].Promotion != "latest-to-dev-1" || h[0].Vector != vector || h[0].State != v1alpha1.PromotionFailed {
		t.Errorf("promotion history %+v, want latest-to-dev-1 Failed", h)
	}
	if d := meta.FindStatusCondition(cfg.Status.Conditions, v1alpha1.DriftCondition); d == nil ||
		d.Reason != v1alpha1.FailedNotRetriedReason || !strings.Contains(d.Message, "vectorflow promote --config latest-to-dev") {
		t.Errorf("Drift %+v, want %s", d, v1alpha1.FailedNotRetriedReason)
	}
}

// TestRevertedPromotionIsNotUndoneAfterTheTTL: latest-to-dev (automatic,
// keepLastPromotions 0, ttlAfterFinished 1m) promotes a vector to dev, a
// person reverts the promotion commit, and cleanup deletes the promotion.
// The config does not re-promote the vector on its own, which would undo
// the revert; its Drift condition says so and names both vectors.
func TestRevertedPromotionIsNotUndoneAfterTheTTL(t *testing.T) {
	testutil.RequireGit(t)
	dir := quickstartWithShortTTL(t)
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, dir, "main", "acme.git")
	url := srv.HTTPURL("acme.git")
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	clock := &testClock{start: time.Now()}
	c := driftController(t, url, auth, clock)
	ctx := context.Background()
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	repo, err := source.Open(url, auth(url))
	if err != nil {
		t.Fatal(err)
	}
	p := readDriftState(t, repo).Promotions["latest-to-dev-1"]
	if p == nil || reconcilers.DeriveState(p) != v1alpha1.PromotionSucceeded {
		t.Fatalf("latest-to-dev-1 is %+v, want Succeeded", p)
	}
	vector := p.Spec.Vector

	clone := t.TempDir()
	testutil.Git(t, clone, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("acme.git"), ".")
	testutil.Git(t, clone, nil, "revert", "--no-edit", p.Status.Commit)
	testutil.Git(t, clone, nil, "push", "-q", "origin", "main")
	reverted := strings.TrimSpace(testutil.Git(t, clone, nil, "rev-parse", "HEAD"))

	for i := 1; i <= 3; i++ {
		clock.advance(2 * time.Minute)
		if _, err := c.RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	state := readDriftState(t, repo)
	if _, ok := state.Promotions["latest-to-dev-1"]; ok {
		t.Fatal("latest-to-dev-1 is still there past its TTL with keepLastPromotions 0")
	}
	for name, p := range state.Promotions {
		if p.Spec.VectorPromotionConfigName == "latest-to-dev" {
			t.Errorf("the reverted vector was promoted again on its own: %s (%s) promotes %s", name, reconcilers.DeriveState(p), p.Spec.Vector)
		}
	}
	testutil.Git(t, clone, nil, "fetch", "-q", "origin")
	if log := testutil.Git(t, clone, nil, "log", "--format=%H %s", reverted+"..origin/main", "--", "apps/overlays/dev"); strings.TrimSpace(log) != "" {
		t.Errorf("dev was written after the revert:\n%s", log)
	}
	cfg := state.Configs["latest-to-dev"]
	if cfg.Status.SourceVector != vector || cfg.Status.TargetVector == vector || cfg.Status.TargetVector == "" {
		t.Errorf("status names source %q and target %q; want %s and the vector the revert restored", cfg.Status.SourceVector, cfg.Status.TargetVector, vector)
	}
	d := meta.FindStatusCondition(cfg.Status.Conditions, v1alpha1.DriftCondition)
	if d == nil || d.Reason != v1alpha1.TargetChangedByHandReason || !strings.Contains(d.Message, vector) ||
		!strings.Contains(d.Message, "names "+cfg.Status.TargetVector) || !strings.Contains(d.Message, "vectorflow promote --config latest-to-dev") {
		t.Errorf("Drift %+v, want %s naming %s and what dev names now", d, v1alpha1.TargetChangedByHandReason, vector)
	}
}

type testClock struct {
	start time.Time
	skew  atomic.Int64
}

func (c *testClock) now() time.Time          { return c.start.Add(time.Duration(c.skew.Load())) }
func (c *testClock) advance(d time.Duration) { c.skew.Add(int64(d)) }

// quickstartWithShortTTL is the quickstart with latest-to-dev keeping no
// finished promotion past a one-minute TTL.
func quickstartWithShortTTL(t *testing.T) string {
	t.Helper()
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	file := filepath.Join(dir, "vectorflow", "promotions.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	target := "    name: dev\n    landscape: dev\n---\n"
	if !strings.Contains(string(data), target) {
		t.Fatal("the quickstart's latest-to-dev changed; update this test")
	}
	changed := strings.Replace(string(data), target, "    name: dev\n    landscape: dev\n  keepLastPromotions: 0\n  ttlAfterFinished: 1m\n---\n", 1)
	if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func driftController(t *testing.T, url string, auth func(string) source.Auth, clock *testClock) *Controller {
	t.Helper()
	w := signedWriter(t)
	c, err := New(Options{URL: url, Branch: "main", Writer: w, Auth: auth, Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readDriftState(t *testing.T, repo *source.Repository) *reconcilers.State {
	t.Helper()
	_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
	if err != nil {
		t.Fatal(err)
	}
	return state
}
