package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/web"
)

// TestFedReaderJudgesWhatItsKeysDoNotVouchFor: a feed whose verdict was
// judged against keys other than the reader's (or that refuses the state)
// is not believed: the reader judges the state branch itself and shows the
// last trusted state with the refusal, even when the feed calls the forged
// state trusted.
func TestFedReaderJudgesWhatItsKeysDoNotVouchFor(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	bad := forgeDevToTest(t, f)
	reader := newFixtureReader(t, f, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reader.Run(ctx, 50*time.Millisecond)

	auth := func(string) source.Auth { return source.Auth{Username: f.srv.Username, Password: f.srv.Password} }
	snap, err := source.NewLoader(source.Options{Auth: auth}).Load(ctx, f.url, "main")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := source.OpenCached(f.url, auth(f.url), "")
	if err != nil {
		t.Fatal(err)
	}
	tip, files, _, err := controller.ReadState(ctx, repo, controller.DefaultStateBranch)
	if err != nil {
		t.Fatal(err)
	}
	if tip.String() != bad {
		t.Fatalf("the state branch is at %s, want the forged %s", tip, bad)
	}
	lie := controller.Observed{Repository: f.url, Snapshot: snap, Decided: true,
		StateBranch: &controller.ObservedState{Tip: tip, Files: files, Verdict: trust.CommitVerdict{Trusted: true, LastTrusted: bad}, Signers: "other keys"}}
	reader.Observe(lie)
	s := waitForSnapshot(t, reader, "the reader to judge the fed state itself", func(s *web.Snapshot) bool { return s.Config != nil })
	if s.State.Verdict.Trusted || !strings.Contains(s.State.Refusal, bad[:12]) {
		t.Errorf("a feed judged against other keys was believed: verdict %+v, refusal %q", s.State.Verdict, s.State.Refusal)
	}
	if p := s.State.State.Promotions["dev-to-test-2"]; p == nil || p.Status.State != "Waiting" || p.Status.Approval != nil {
		t.Errorf("the reader shows what the forged commit wrote: %+v", p)
	}
}

// TestFedReaderReadsItselfWithoutFeeds: a fed reader that gets no feed
// (a replica that does not reconcile the repository) shows "not read yet"
// while the controller's first pass may still run, then reads the
// repository itself every refresh.
func TestFedReaderReadsItselfWithoutFeeds(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	reader := newFixtureReader(t, f, 500*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	go reader.Run(ctx, 50*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	if s := reader.Snapshot(); s.Problem != "not read yet" || s.Config != nil {
		t.Errorf("a fed reader read the repository before the controller's first pass could feed it: %+v", s)
	}
	s := waitForSnapshot(t, reader, "the reader to read itself", func(s *web.Snapshot) bool { return s.Config != nil })
	if waited := time.Since(started); waited < 500*time.Millisecond {
		t.Errorf("the reader read itself after %s, before FedWithin", waited)
	}
	if s.State.Tip.String() != f.stateTip(t) || !s.State.Verdict.Trusted {
		t.Errorf("the reader shows state %s (verdict %+v), want %s trusted", s.State.Tip, s.State.Verdict, f.stateTip(t))
	}
	// It keeps reading: a new state commit shows.
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	f.run(t)
	want := f.stateTip(t)
	waitForSnapshot(t, reader, "the reader to show the new state commit", func(s *web.Snapshot) bool { return s.State.Tip.String() == want })
}

// TestUnfedReaderRefreshes: the reader of `ui` reads at once and on every
// refresh.
func TestUnfedReaderRefreshes(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	reader := newFixtureReader(t, f, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reader.Run(ctx, 50*time.Millisecond)
	first := f.stateTip(t)
	waitForSnapshot(t, reader, "the first read", func(s *web.Snapshot) bool { return s.State.Tip.String() == first })
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	f.run(t)
	want := f.stateTip(t)
	waitForSnapshot(t, reader, "the reader to show the new state commit", func(s *web.Snapshot) bool { return s.State.Tip.String() == want })
}

// TestReaderNeverShowsStateAheadOfItsConfig: a promotion that lands while
// the view reads (its overlay commit, then its state commit) shows either
// not yet or together with its overlay commit. A state read newer than the
// config read beside it would show a stage running a vector whose commit
// the stage's history lacks.
func TestReaderNeverShowsStateAheadOfItsConfig(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	before := f.mainTip(t)
	// The promotion lands just after the server advertised the refs of
	// the reader's first fetch.
	url, landed := promotionMidRead(t, f)
	reader := newFixtureReaderAt(t, f, url, 0)
	ctx := context.Background()
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	landed()
	after := f.mainTip(t)
	if after == before {
		t.Fatal("the run promoted nothing")
	}

	check := func(read string) (shown bool) {
		t.Helper()
		s := reader.Snapshot()
		if s.Config == nil || s.State.State == nil {
			t.Fatalf("%s read: %s", read, s.Problem)
		}
		for _, p := range s.State.State.Promotions {
			if p.Status.Commit == after {
				shown = true
				if s.Config.Commit != after {
					t.Errorf("%s read: the state shows %s %s with commit %s, but the config read beside it is at %s, before that commit",
						read, p.Name, p.Status.State, after[:12], s.Config.Commit[:12])
				}
			}
		}
		return shown
	}
	check("the first")
	if err := reader.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !check("the next") {
		t.Errorf("the next read does not show the promotion of commit %s", after[:12])
	}
}

// promotionMidRead is the fixture's repository behind a proxy where a
// `run --once` promotion lands once the server has answered the next ref
// advertisement, before its client gets the answer: between a reader's
// requests. landed fails the test unless it did.
func promotionMidRead(t *testing.T, f *flowFixture) (url string, landed func()) {
	t.Helper()
	proxy := testutil.StartCountingProxy(t, f.srv)
	done := make(chan error, 1)
	proxy.BeforeAnswering(testutil.ListForFetch, func() {
		out, err := f.cliE("run", "--once", "--signing-key", f.controller)
		if err != nil {
			err = fmt.Errorf("run --once: %w\n%s", err, out)
		}
		done <- err
	})
	return proxy.URL("acme.git"), func() {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("the reader made no fetch")
		}
	}
}

// newFixtureReader is a reader of the fixture's repository trusting the
// controller's key, fed when fedWithin is set.
func newFixtureReader(t *testing.T, f *flowFixture, fedWithin time.Duration) *web.Reader {
	t.Helper()
	return newFixtureReaderAt(t, f, f.url, fedWithin)
}

// newFixtureReaderAt is newFixtureReader reading the fixture's repository
// at url (through a proxy).
func newFixtureReaderAt(t *testing.T, f *flowFixture, url string, fedWithin time.Duration) *web.Reader {
	t.Helper()
	key, err := readTrustedKeys([]string{f.controllerPublic})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := web.NewReader(web.ReaderOptions{ID: "acme", URL: url, Branch: "main", ConfigPath: "vectorflow",
		Auth:  func(string) source.Auth { return source.Auth{Username: f.srv.Username, Password: f.srv.Password} },
		Trust: append([]gitwriter.TrustedKey(nil), key...), CacheDir: t.TempDir(), FedWithin: fedWithin, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return reader
}

func waitForSnapshot(t *testing.T, r *web.Reader, what string, ok func(*web.Snapshot) bool) *web.Snapshot {
	t.Helper()
	var s *web.Snapshot
	waitFor(t, 30*time.Second, what, func() bool {
		s = r.Snapshot()
		return ok(s)
	})
	return s
}

// TestGetReadsBothBranchesInOneFetch: get reads the state branch in the
// same fetch as the config branch, so a promotion that lands after the
// server advertised the refs (its overlay commit, then its state commit) is
// not shown by this get, neither half: never a state newer than the config
// beside it.
func TestGetReadsBothBranchesInOneFetch(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	url, landed := promotionMidRead(t, f)
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"get", "promotions", "-o", "json", "--trust", f.controllerPublic, "--repo", url})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("get: %v\n%s", err, out.String())
	}
	landed()
	var list v1alpha1.VectorPromotionList
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	for _, p := range list.Items {
		if p.Name == "latest-to-dev-2" {
			t.Errorf("get shows %s %s, which landed after the refs it read were advertised: its state is newer than its config", p.Name, p.Status.State)
		}
	}
	if p := f.promotions(t)["latest-to-dev-2"]; p.Status.State != v1alpha1.PromotionSucceeded {
		t.Fatalf("the promotion that landed meanwhile is %s, want Succeeded", p.Status.State)
	}
}
