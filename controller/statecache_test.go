package controller

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/bench"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRestartedControllerReusesTheCacheDirectory: a controller made later
// (as by a new run --once) over the same cache directory finds the
// settled repository settled, writing nothing, and takes the state
// branch's objects from the cache instead of decoding them; with the
// cache deleted it answers the same.
func TestRestartedControllerReusesTheCacheDirectory(t *testing.T) {
	_, cacheDir, newController := cachedQuickstart(t)
	ctx := context.Background()
	first, err := newController().RunUntilStable(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !first[0].Changed() {
		t.Fatal("the first run wrote nothing: the fixture tests nothing")
	}
	stateMemoFile(t, cacheDir)

	for _, name := range []string{"restarted", "restarted with the cache deleted"} {
		if strings.Contains(name, "deleted") {
			if err := os.RemoveAll(cacheDir); err != nil {
				t.Fatal(err)
			}
		}
		c := newController()
		passes, err := c.RunUntilStable(ctx, 10)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(passes) != 1 || passes[0].Changed() {
			t.Errorf("%s: %d passes, first %+v; want one that writes nothing", name, len(passes), passes[0])
		}
		if name == "restarted" && c.codec.Changed() {
			t.Errorf("%s: the state branch was decoded again, not taken from the cache", name)
		}
		if name == "restarted" && c.stateRepo != nil {
			t.Errorf("%s: the state branch's history was read again, though its tip was verified before with the same keys", name)
		}
	}

	// Other trusted keys: the verdict of the earlier keys is not taken.
	other := testutil.NewOpenPGPKey(t, "other", "other@vectorflow.dev", nil)
	c := newController(func(o *Options) {
		o.StateSigners = []gitwriter.TrustedKey{{Name: "other", PublicKey: string(other.PublicArmored)}}
	})
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if c.stateRepo == nil {
		t.Error("with other trusted keys, the history was not verified")
	}
}

// TestPromotionLeavesTheStateMemo: a run --once that changes a few state
// files (a promotion) does not rewrite the state codec's memory, which
// holds every file of the state branch; the next process decodes those few
// itself and finds the repository settled.
func TestPromotionLeavesTheStateMemo(t *testing.T) {
	srv, cacheDir, newController := cachedQuickstart(t)
	runOnce := func() (*Controller, []PassResult) {
		t.Helper()
		c := newController()
		passes, err := c.RunUntilStable(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		return c, passes
	}
	memo := func() []byte {
		t.Helper()
		b, err := os.ReadFile(stateMemoFile(t, cacheDir))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	runOnce()
	settled := memo()

	pushTemplateBump(t, srv, "config.git", "vectorflow/template.yaml")
	c, passes := runOnce()
	executed := 0
	for _, p := range passes {
		executed += len(p.Executed)
	}
	if executed == 0 {
		t.Fatal("the bump promoted nothing: the fixture tests nothing")
	}
	if stale, files := c.codec.Stale(); stale == 0 || stale > staleFilesKept(files) {
		t.Fatalf("the promotion left %d of %d state files stale, want 1 to %d", stale, files, staleFilesKept(files))
	}
	if !bytes.Equal(memo(), settled) {
		t.Error("a promotion that changed a few state files rewrote the state memo")
	}

	restarted, passes := runOnce()
	if len(passes) != 1 || passes[0].Changed() {
		t.Errorf("restarted: %d passes, first %+v; want one that writes nothing", len(passes), passes[0])
	}
	if stale, _ := restarted.codec.Stale(); stale != 0 && !restarted.codec.Changed() {
		t.Errorf("restarted: %d stale files taken from the memo without a decode", stale)
	}
}

// TestLongRunOnceWritesTheStateMemoOnce: a run --once whose passes span
// many minutes writes the state codec's memory once, when it settles: a
// held run's passes before that decode files that have not landed, and
// the memory written at the end holds them all. An all-automatic cold run
// at 10,000 stages spent 6.5 of the 9.5 s of CPU its exports took on the
// ones before the end.
func TestLongRunOnceWritesTheStateMemoOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a git server and a 10-stage chain")
	}
	testutil.RequireGit(t)
	_, dir := bench.WriteTemp(t, bench.Chain, 10, nil) // no approver key: every stage is automatic
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, dir, "main", "chain.git")
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	var mu sync.Mutex
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { // a minute goes by at each look
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(time.Minute)
		return at
	}
	cacheDir := t.TempDir()
	c, err := New(Options{URL: srv.HTTPURL("chain.git"), Branch: "main", Writer: signedWriter(t), Auth: auth,
		HoldWrites: true, CacheDir: cacheDir, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	passes, err := c.RunUntilStable(context.Background(), 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(passes) < 10 {
		t.Fatalf("%d passes through 10 automatic stages: the fixture tests nothing", len(passes))
	}
	stateMemoFile(t, cacheDir)
	if c.stateMemo.written != 1 {
		t.Errorf("the state memo was written %d times in one run --once of %d passes, want once", c.stateMemo.written, len(passes))
	}
}

// cachedQuickstart serves the quickstart as config.git and makes
// controllers of it, each as a new run --once would, sharing one signing
// writer and one cache directory; change, if given, edits the options.
func cachedQuickstart(t *testing.T) (srv *testutil.GitServer, cacheDir string, newController func(change ...func(*Options)) *Controller) {
	t.Helper()
	srv = testutil.StartGitServer(t)
	srv.InitRepo(t, filepath.Join("..", "examples", "quickstart"), "main", "config.git")
	w := signedWriter(t)
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	cacheDir = t.TempDir()
	return srv, cacheDir, func(change ...func(*Options)) *Controller {
		t.Helper()
		o := Options{URL: srv.HTTPURL("config.git"), Branch: "main", Writer: w, Auth: auth, CacheDir: cacheDir}
		for _, f := range change {
			f(&o)
		}
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// stateMemoFile is the one state memo in cacheDir.
func stateMemoFile(t *testing.T, cacheDir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(cacheDir, "configs", "state-*"))
	if len(files) != 1 {
		t.Fatalf("state memos in the cache: %v, want one", files)
	}
	return files[0]
}

// TestRememberTrustedTakesOnlyTrustedTips: only a verdict that a commit
// and its whole history are trusted is taken from the cache; anything
// else is judged again.
func TestRememberTrustedTakesOnlyTrustedTips(t *testing.T) {
	commit := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	tests := []struct {
		name    string
		verdict trust.CommitVerdict
		want    bool
	}{
		{name: "trusted tip", verdict: trust.CommitVerdict{Trusted: true, LastTrusted: commit.String(), Content: "c"}, want: true},
		{name: "untrusted", verdict: trust.CommitVerdict{LastTrusted: commit.String()}},
		{name: "refused", verdict: trust.CommitVerdict{Trusted: true, LastTrusted: commit.String(), Refused: &trust.RefusedCommit{Commit: commit.String()}}},
		{name: "trusted as of another commit", verdict: trust.CommitVerdict{Trusted: true, LastTrusted: "fedcba9876543210fedcba9876543210fedcba98"}},
	}
	signer := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := NewStateTrust([]gitwriter.TrustedKey{{Name: "vectorflow", PublicKey: string(signer.PublicArmored)}})
			if err != nil {
				t.Fatal(err)
			}
			st.rememberTrusted(commit, tt.verdict)
			if _, got := st.Known(commit); got != tt.want {
				t.Errorf("known = %t, want %t", got, tt.want)
			}
		})
	}
}

// TestRestartedRunTakesTheSettledPass: a controller made later with the
// same settings and cache directory finds the repository as the last run
// left it settled and decides nothing again, reporting the same
// configuration problems; other settings, no settings, a deadline passed,
// or a new commit make it decide.
func TestRestartedRunTakesTheSettledPass(t *testing.T) {
	srv, _, newController := cachedQuickstart(t)
	ctx := context.Background()
	// A configuration problem, for the restarted pass to report too.
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("config.git"), ".")
	promotions := filepath.Join(dir, "vectorflow", "promotions.yaml")
	b, err := os.ReadFile(promotions)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: dev-to-nowhere\nspec:\n  source: {kind: Stage, name: dev, landscape: dev}\n  target: {kind: Stage, name: nowhere, landscape: dev}\n"...)
	if err := os.WriteFile(promotions, b, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "a config whose target does not exist")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:main")

	settings := func(s string) func(*Options) { return func(o *Options) { o.Settings = s } }
	run := func(c *Controller) []PassResult {
		t.Helper()
		passes, err := c.RunUntilStable(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		return passes
	}
	first := newController(settings("--flags A"))
	settled := run(first)
	if !settled[0].Changed() {
		t.Fatal("the first run wrote nothing: the fixture tests nothing")
	}
	wantProblems := settled[len(settled)-1].Problems
	if !slices.ContainsFunc(wantProblems, func(p string) bool { return strings.Contains(p, "nowhere") }) {
		t.Fatalf("the first run reported problems %q, want one about the stage nowhere", wantProblems)
	}

	restarted := newController(settings("--flags A"))
	passes := run(restarted)
	if len(passes) != 1 || passes[0].Changed() || restarted.decisions != 0 {
		t.Errorf("restarted with the same settings: %d passes, %d decided; want one pass that decides nothing", len(passes), restarted.decisions)
	}
	if restarted.loads != 0 {
		t.Errorf("restarted with nothing moved: the config branch was loaded %d times, want none", restarted.loads)
	}
	if diff := cmp.Diff(wantProblems, passes[0].Problems); diff != "" {
		t.Errorf("restarted: problems (-settled +restarted):\n%s", diff)
	}
	again := newController(settings("--flags A"))
	if run(again); again.decisions != 0 || again.loads != 0 {
		t.Errorf("restarted twice: %d passes decided and %d loaded, want none", again.decisions, again.loads)
	}

	for _, tc := range []struct {
		name   string
		change []func(*Options)
	}{
		{"other settings", []func(*Options){settings("--flags B")}},
		{"no settings", nil},
		{"a deadline passed", []func(*Options){settings("--flags A"), func(o *Options) {
			due := first.due
			o.Clock = func() time.Time { return due.Add(time.Second) }
		}}},
	} {
		c := newController(tc.change...)
		passes := run(c)
		if c.decisions == 0 {
			t.Errorf("%s: nothing decided", tc.name)
		}
		if diff := cmp.Diff(wantProblems, passes[len(passes)-1].Problems); diff != "" {
			t.Errorf("%s: problems (-settled +now):\n%s", tc.name, diff)
		}
	}

	pushTemplateBump(t, srv, "config.git", "vectorflow/template.yaml")
	bumped := newController(settings("--flags A"))
	executed := 0
	for _, p := range run(bumped) {
		executed += len(p.Executed)
	}
	if bumped.decisions == 0 || executed == 0 {
		t.Errorf("after a template bump: %d passes decided, %d promotions written; want the bump promoted", bumped.decisions, executed)
	}
	settledAgain := newController(settings("--flags A"))
	if run(settledAgain); settledAgain.decisions != 0 {
		t.Errorf("after the bump settled: %d passes decided, want none", settledAgain.decisions)
	}
}
