package controller

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRunnerFailingRepositoryDoesNotStallOthers runs one Runner over a
// healthy quickstart, a repository the git server does not have, and one on
// a host that never answers, sharing one writer as `vectorflow run` does.
// The healthy repository's template change reaches dev within seconds while
// the missing one's passes keep failing and the hung one's never ends,
// webhooks find the healthy repository under any spelling of its URL, and
// cancelling stops the Runner promptly.
func TestRunnerFailingRepositoryDoesNotStallOthers(t *testing.T) {
	f := newRaceFixture(t)
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: f.signer})
	if err != nil {
		t.Fatal(err)
	}
	promReg := prometheus.NewRegistry()
	metrics := NewMetrics(promReg)
	auth := func(string) source.Auth { return source.Auth{Username: f.srv.Username, Password: f.srv.Password} }
	missingURL := f.srv.HTTPURL("missing.git")
	hungURL := "http://" + startSilentServer(t).addr + "/acme.git"
	var controllers []*Controller
	for _, url := range []string{missingURL, hungURL, f.url} {
		c, err := New(Options{URL: url, Branch: "main", Writer: w, Auth: auth, Metrics: metrics})
		if err != nil {
			t.Fatal(err)
		}
		controllers = append(controllers, c)
	}
	broken := controllers[0]
	runner := NewRunner(200*time.Millisecond, logr.Discard(), controllers...)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(ctx)
	}()
	stop := func() time.Duration {
		cancel()
		start := time.Now()
		select {
		case <-done:
			return time.Since(start)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return 10s after its context was cancelled")
			return 0
		}
	}
	t.Cleanup(func() { stop() })

	clone := f.clone(t)
	// dev-to-test runs on its own in this fixture: wait until main is
	// settled, or the person's push below races the controller's.
	waitForPromotionCommit(t, clone, "latest-to-dev-1", 10*time.Second)
	waitForPromotionCommit(t, clone, "dev-to-test-1", 5*time.Second)

	pushed := time.Now()
	f.pushTemplateChange(t, "1.0.2", "1.0.3")
	waitForPromotionCommit(t, clone, "latest-to-dev-2", 5*time.Second)
	t.Logf("the template change reached dev %v after the push", time.Since(pushed).Round(time.Millisecond))
	show := testutil.Git(t, clone, nil, "show", "origin/main:apps/overlays/dev/kustomization.yaml")
	var overlay struct {
		Images []overlayImage `json:"images"`
	}
	if err := yaml.Unmarshal([]byte(show), &overlay); err != nil {
		t.Fatalf("dev overlay: %v\n%s", err, show)
	}
	want := []overlayImage{
		{Name: "registry.example.com/acme/frontend", NewTag: "1.2.0"},
		{Name: "registry.example.com/acme/service-a", NewTag: "1.0.3"},
		{Name: "registry.example.com/acme/service-b", NewTag: "1.0.0"},
	}
	if diff := cmp.Diff(want, overlay.Images); diff != "" {
		t.Errorf("dev overlay images after the template change (-want +got):\n%s", diff)
	}

	// The broken repository was retried meanwhile, and failed every time.
	deadline := time.Now().Add(5 * time.Second)
	for passErrorCount(t, promReg, missingURL) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := passErrorCount(t, promReg, missingURL); n < 2 {
		t.Errorf("the missing repository's passes failed %v times, want it retried and failing at least twice", n)
	}
	if n := passErrorCount(t, promReg, f.url); n != 0 {
		t.Errorf("the healthy repository's passes failed %v times, want none", n)
	}
	if _, err := broken.Pass(ctx); err == nil || !strings.Contains(err.Error(), "read config repository") {
		t.Errorf("a pass of the missing repository: %v, want an error reading the config repository", err)
	}

	for _, tc := range []struct {
		url  string
		want int
	}{
		{f.url, 1},
		{strings.TrimSuffix(f.url, ".git"), 1},
		{f.url + "/", 1},
		{"HTTP://" + strings.TrimSuffix(strings.TrimPrefix(f.url, "http://"), ".git") + "/", 1},
		{strings.Replace(f.url, "acme.git", "other.git", 1), 0},
	} {
		if got := runner.Trigger(tc.url, ""); got != tc.want {
			t.Errorf("Trigger(%q) asked %d controllers, want %d", tc.url, got, tc.want)
		}
	}

	if took := stop(); took > 2*time.Second {
		t.Errorf("Run took %v to return after its context was cancelled, want under 2s", took)
	}
}

// TestRunnerAbandonsAHungPass: a git host that accepts the connection and
// never answers must not hold its repository's worker forever. The pass
// has to end (with an error) so the repository is retried, recovers when
// the host does, and the Runner's readiness says the pass failed. go-git's HTTP client has no
// timeout of its own, so this rests on the Runner's pass deadline.
func TestRunnerAbandonsAHungPass(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a pass deadline")
	}
	silent := startSilentServer(t)
	c, err := New(Options{URL: "http://" + silent.addr + "/acme.git", Branch: "main", Writer: signedWriter(t)})
	if err != nil {
		t.Fatal(err)
	}
	runner := NewRunner(200*time.Millisecond, logr.Discard(), c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	const within = 8 * time.Second
	deadline := time.Now().Add(within)
	abandoned := func() bool { // the first pass ended, failed, and says so
		err := runner.Ready()
		return err != nil && strings.Contains(err.Error(), "pass failed")
	}
	for (!abandoned() || silent.accepted() < 2) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !abandoned() || silent.accepted() < 2 {
		t.Errorf("after %v with a git host that never answers: Ready=%v, %d connection(s) to it; "+
			"want the hung first pass abandoned (not ready: pass failed) and the repository retried (at least 2 connections)",
			within, runner.Ready(), silent.accepted())
	}
}

// waitForPromotionCommit fetches dir's origin until main has the promotion's
// commit (found by its trailers), or fails after within.
func waitForPromotionCommit(t *testing.T, dir, promotion string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		testutil.Git(t, dir, nil, "fetch", "-q", "origin")
		log := testutil.Git(t, dir, nil, "log", "--format=%B%x00", "origin/main")
		for _, msg := range strings.Split(log, "\x00") {
			if tr, ok := gitwriter.ParseTrailers(strings.TrimSpace(msg)); ok && tr.Promotion == promotion {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit of promotion %s on main after %v", promotion, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// silentServer accepts connections and never answers, as a git host that
// hangs does.
type silentServer struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn
}

func startSilentServer(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, conn)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

// accepted counts the connections made so far.
func (s *silentServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// passErrorCount reads vectorflow_reconcile_errors_total for repo.
func passErrorCount(t *testing.T, reg *prometheus.Registry, repo string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "vectorflow_reconcile_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "repository" && l.GetValue() == repo {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
