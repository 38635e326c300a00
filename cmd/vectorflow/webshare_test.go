package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestRunViewShowsTheControllersPasses: in run, the web view shows what
// the controller's passes read and never reads the repository itself
// beside it: with --ui-refresh 100ms and no pass due (--interval 1h), no
// request reaches the git server; a promotion a webhook starts shows at
// once, at the state commit the controller wrote.
func TestRunViewShowsTheControllersPasses(t *testing.T) {
	f := newFlowFixture(t)
	proxy := testutil.StartCountingProxy(t, f.srv)
	url := proxy.URL("acme.git")
	secret := []byte("hunter2")
	base := startRunView(t, f, url, "--webhook-secret-file", writeFile(t, t.TempDir(), "secret", append(secret, '\n')),
		"--interval", "1h", "--ui-refresh", "100ms")
	bare := f.srv.BarePath("acme.git")
	waitFor(t, 60*time.Second, "latest-to-dev-1 in the dev overlay", func() bool {
		return strings.Contains(devPromotions(bare), "latest-to-dev-1")
	})
	waitSettled(t, bare)
	waitForPage(t, base+"/", "the view to show the state commit the controller wrote last", f.stateTip(t)[:12])

	proxy.Reset()
	time.Sleep(1500 * time.Millisecond)
	if c := proxy.Counts(); c.Total() != 0 {
		t.Errorf("with no pass due, the view read the repository itself: %s", c)
	}
	// A stage's history and what a promotion would change are read on
	// demand, by a reader that never loaded the repository itself.
	if page := httpBody(t, base+"/r/acme/stages/dev/dev"); !strings.Contains(page, "latest-to-dev-1") || strings.Contains(page, "History not read") {
		t.Errorf("the stage page does not show dev's history:\n%s", page)
	}
	if page := httpBody(t, base+"/r/acme/promotions/dev-to-test-2"); !strings.Contains(page, " changed, ") || strings.Contains(page, "Not described") ||
		strings.Contains(page, "Not rendered") {
		t.Errorf("the promotion page does not describe dev-to-test-2:\n%s", page)
	}

	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	head := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "main"))
	if status := postHook(t, base+"/hooks/github", githubPush(url, head), secret); status != 202 {
		t.Fatalf("a signed push webhook got %d, want 202", status)
	}
	waitFor(t, 30*time.Second, "latest-to-dev-2 in the dev overlay", func() bool {
		return strings.Contains(devPromotions(bare), "latest-to-dev-2")
	})
	waitSettled(t, bare)
	waitForPage(t, base+"/", "the view to show the state commit the controller wrote last", f.stateTip(t)[:12])
	waitForPage(t, base+"/r/acme/promotions", "the view to show the promotion", "latest-to-dev-2")
	if page := httpBody(t, base+"/r/acme/promotions/latest-to-dev-2"); !strings.Contains(page, "Succeeded</span>") {
		t.Errorf("the view does not show latest-to-dev-2 Succeeded:\n%s", page)
	}
	proxy.Reset()
	time.Sleep(time.Second)
	if c := proxy.Counts(); c.Total() != 0 {
		t.Errorf("after the promotion, with no pass due, the view read the repository itself: %s", c)
	}
}

// TestRunViewShowsOnlyTrustedState: as TestUIShowsOnlyTrustedState, for
// the view of run, whose controller refuses the forged state branch: the
// view shows the state as of the last trusted commit, with the refusal
// naming the forged commit on top; nothing the forger wrote shows.
func TestRunViewShowsOnlyTrustedState(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	bad := forgeDevToTest(t, f)
	base := startRunView(t, f, f.url, "--webhook-secret-file", writeFile(t, t.TempDir(), "secret", []byte("hunter2\n")),
		"--interval", "1h", "--ui-refresh", "100ms")
	for _, path := range []string{"/r/acme/promotions/dev-to-test-2", "/r/acme/promotions", "/"} {
		page := waitForPage(t, base+path, "the view to show the refusal", "State refused", bad[:12])
		if strings.Contains(page, "mallory") || path == "/r/acme/promotions/dev-to-test-2" && !strings.Contains(page, "Waiting</span>") {
			t.Errorf("GET %s shows what the forged commit wrote:\n%s", path, page)
		}
	}
}

// forgeDevToTest marks the waiting dev-to-test-2 Succeeded, approved by
// mallory, in an unsigned state commit, and returns the commit.
func forgeDevToTest(t *testing.T, f *flowFixture) string {
	t.Helper()
	dir := f.stateClone(t)
	file := filepath.Join(dir, "promotions", "dev-to-test", "dev-to-test-2.yaml")
	b := readFile(t, file)
	forged := strings.Replace(b, "state: Waiting", "state: Succeeded\n  approval:\n    approvedBy: mallory\n    approvedAt: \"2026-11-30T10:00:00Z\"", 1)
	if forged == b {
		t.Fatalf("dev-to-test-2 is not Waiting:\n%s", b)
	}
	writeFile(t, filepath.Dir(file), filepath.Base(file), []byte(forged))
	return f.commitState(t, dir, "", "nothing to see here")
}

// startRunView runs `vectorflow run --listen` in-process on url (the
// fixture's repository) and returns the base URL of its view.
func startRunView(t *testing.T, f *flowFixture, url string, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out testutil.SyncBuffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"run", "--repo", url, "--signing-key", f.controller, "--listen", addr, "--log-level", "error"}, args...))
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, out.String())
		}
	})
	waitFor(t, 30*time.Second, "run to serve /healthz", func() bool { return httpStatus("http://"+addr+"/healthz") == 200 })
	return "http://" + addr
}

// waitForPage waits until the page holds every one of want, and returns it.
func waitForPage(t *testing.T, url, what string, want ...string) string {
	t.Helper()
	var page string
	waitFor(t, 30*time.Second, what+" at "+url, func() bool {
		if httpStatus(url) != 200 {
			return false
		}
		page = httpBody(t, url)
		for _, w := range want {
			if !strings.Contains(page, w) {
				return false
			}
		}
		return true
	})
	return page
}

// TestPassViews: the Kubernetes mirror gets only the passes that decided;
// with neither the mirror nor the web view, the controllers hand nothing
// over.
func TestPassViews(t *testing.T) {
	if (&passViews{}).observer(false) != nil {
		t.Error("with nothing viewing the passes, the controllers are given an observer")
	}
	var mirrored []bool
	v := &passViews{mirror: func(o controller.Observed) { mirrored = append(mirrored, o.Decided) }}
	observe := v.observer(false)
	for _, decided := range []bool{true, false, true} {
		observe(controller.Observed{Repository: "https://git.example.com/acme.git", Branch: "main", Decided: decided})
	}
	if len(mirrored) != 2 || !mirrored[0] || !mirrored[1] {
		t.Errorf("the mirror got passes that decided %v, want only the two that decided", mirrored)
	}
	if (&passViews{}).observer(true) == nil {
		t.Error("the web view is given no passes")
	}
}
