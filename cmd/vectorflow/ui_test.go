package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestUIInBrowser drives the web view in headless Chromium over the
// quickstart after a few promotions, served by `vectorflow ui` from a real
// git server: the pipeline shows every stage with the vectors the state
// says it runs, a waiting promotion links to its page, whose approve
// command approves it when run as shown, and the promotion that follows
// appears on the open page without a reload. No page writes an error to
// the console (a script the CSP blocks would). A screenshot of every page
// is saved under the directory the test logs.
func TestUIInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	f := newFlowFixtureWith(t, flowOptions{bobApprovesProd: true})
	f.run(t)
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionWaiting)
	wantState(t, ps, "test-to-prod-1", v1alpha1.PromotionWaiting)
	stages := map[string]string{}
	var list struct{ Items []v1alpha1.Stage }
	if err := json.Unmarshal([]byte(f.cli(t, "get", "stages", "-o", "json", "--trust", f.controllerPublic)), &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		stages[s.Spec.Landscape+"/"+s.Name] = s.Status.Vector
	}
	if stages["dev/dev"] != ps["latest-to-dev-2"].Spec.Vector || stages["test/test"] != ps["dev-to-test-2"].Spec.Vector || stages["prod/prod"] == "" {
		t.Fatalf("the fixture's stages run %v", stages)
	}

	base := startUI(t, f)
	shots := screenshotDir(t)
	ctx := newBrowser(t, chromium)
	var consoleMu sync.Mutex
	var problems []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				consoleMu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				consoleMu.Unlock()
			}
		}
	}()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The pipeline: every stage, with the vector the state says it runs.
	do("open the pipeline", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(".pipeline")),
		until(`document.getElementById("live").className === "live on"`, 30*time.Second))
	for key, vector := range stages {
		if got := text(`[id="n-` + key + `"]`); !strings.Contains(got, vector) {
			t.Errorf("the pipeline's node %s does not show its vector %s:\n%s", key, vector, got)
		}
	}
	if got := text(`[id="n-test/test"]`); !strings.Contains(got, "dev-to-test-3 Waiting") || !strings.Contains(got, "drift") {
		t.Errorf("test's node does not show its waiting candidate and drift:\n%s", got)
	}
	shot("pipeline")

	// The waiting promotion links to its page, which holds the command that
	// approves it.
	do("open the waiting promotion", chromedp.Click(chromedp.CSS(`a.cand[href="/r/acme/promotions/dev-to-test-3"]`)),
		chromedp.WaitVisible(chromedp.ID("approve-command")))
	vector := ps["dev-to-test-3"].Spec.Vector
	command := text("#approve-command")
	want := "vectorflow approve dev-to-test-3 --repo " + f.url + " --vector " + vector + " --signing-key YOUR_KEY"
	if command != want {
		t.Fatalf("approve command\n%s\nwant\n%s", command, want)
	}
	if page := text("main"); !strings.Contains(page, "WaitingForApproval") || !strings.Contains(page, "1.0.2") ||
		!strings.Contains(page, "1.0.3") || !strings.Contains(page, "changed") {
		t.Errorf("the promotion page lacks its condition, its component change or its manifest change:\n%s", page)
	}
	shot("promotion")

	// Run the command as shown, with alice's key: it approves.
	args := strings.Fields(strings.Replace(command, "YOUR_KEY", f.alice, 1))[1:]
	cmd := newRootCommand()
	var out testutil.SyncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--identity", "Alice <alice@example.com>"))
	if err := cmd.ExecuteContext(context.Background()); err != nil || !strings.Contains(out.String(), "approved dev-to-test-3") {
		t.Fatalf("the page's approve command: %v\n%s", err, out.String())
	}

	// The controller runs the approved promotion: the open pipeline shows
	// test's new vector without a reload.
	do("open the pipeline again", chromedp.Navigate(base+"/r/acme/"), chromedp.WaitVisible(chromedp.CSS(".pipeline")),
		until(`document.getElementById("live").className === "live on"`, 30*time.Second))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.vectorflowMarker = 7`)); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	// The stage's target vector, not the node's text: the waiting
	// candidate shows the vector there before the promotion ran.
	do("see the promotion without a reload", until(
		`document.querySelector('[id="n-test/test"] dd.vec').textContent.includes(`+jsString(vector)+`)`, 60*time.Second))
	if marker, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.vectorflowMarker`)); err != nil || marker != float64(7) {
		t.Errorf("the page was reloaded (marker %v, %v): it should have been updated in place", marker, err)
	}
	if got := text(`[id="n-prod/prod"]`); !strings.Contains(got, "test-to-prod-2 Waiting") {
		t.Errorf("prod's node does not show the new candidate:\n%s", got)
	}
	shot("pipeline-after")

	// The stage's history, verified as audit verifies it.
	do("open test's history", chromedp.Navigate(base+"/r/acme/stages/test/test"), chromedp.WaitVisible(chromedp.CSS("table.history")))
	history := text("table.history")
	if !regexp.MustCompile(`dev-to-test-3\s+` + regexp.QuoteMeta(vector) + `\s+alice\s+✓ vectorflow\s+✓ verified`).MatchString(history) {
		t.Errorf("test's history does not show dev-to-test-3 approved by alice, signed and verified:\n%s", history)
	}
	shot("stage")

	do("open the vectors", chromedp.Navigate(base+"/r/acme/vectors"), chromedp.WaitVisible(chromedp.CSS(".vector")))
	if got := text(`[id="v-` + vector + `"]`); !strings.Contains(got, "dev/dev") || !strings.Contains(got, "test/test") || !strings.Contains(got, "1.0.3") {
		t.Errorf("the vector %s does not say dev and test run it:\n%s", vector, got)
	}
	shot("vectors")

	do("open the waiting promotions", chromedp.Navigate(base+"/r/acme/promotions?state=Waiting"), chromedp.WaitVisible(chromedp.CSS("table.list")))
	if got := text("table.list"); !strings.Contains(got, "test-to-prod-2") || strings.Contains(got, "dev-to-test-3") {
		t.Errorf("the waiting promotions:\n%s", got)
	}
	shot("promotions")

	// On a phone: the columns stack.
	do("open the pipeline on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(".pipeline")))
	if width, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`)); err != nil || width > 390 {
		t.Errorf("on a 390px wide phone the page is %v px wide (%v): it should not scroll sideways", width, err)
	}
	shot("pipeline-phone")

	consoleMu.Lock()
	defer consoleMu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the pages wrote to the console:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("screenshots in %s", shots)
}

// chromiumPath finds Debian's chromium. Without it the browser tests skip,
// except in CI, where .ci/run installs it and a skip would hide a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true: .ci/run installs Debian's chromium package for the browser tests")
	}
	t.Skip("chromium is not installed (apt-get install chromium); the browser tests skip outside CI")
	return ""
}

// newBrowser starts headless Chromium with a fresh profile; the flags are
// what a container without a display, a GPU or a network needs.
func newBrowser(t *testing.T, chromium string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	return bctx
}

// startUI runs `vectorflow ui` on the fixture's repository, reading it
// every 200ms, and returns its base URL.
func startUI(t *testing.T, f *flowFixture) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out testutil.SyncBuffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"ui", "--repo", f.url, "--listen", "127.0.0.1:0", "--trust", f.controllerPublic, "--ui-refresh", "200ms"})
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("vectorflow ui: %v\n%s", err, out.String())
		}
	})
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			// The first read of the repository is done once a stage shows.
			for time.Now().Before(deadline) {
				if resp, err := http.Get(m[1] + "/r/acme/stages/dev/dev"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return m[1]
					}
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("vectorflow ui stopped: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("vectorflow ui did not serve the repository within 30s:\n%s", out.String())
	return ""
}

// screenshotDir is where the screenshots go: $VECTORFLOW_SCREENSHOTS, or
// testdata/_out/<test> (ignored by git), which outlives the test.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VECTORFLOW_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("testdata", "_out", t.Name())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// until waits for the JavaScript expression to be true.
func until(expression string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expression, chromedp.WithPollingTimeout(timeout))(ctx, t)
		return err
	})
}

// TestRunListenServesUI: run --listen serves the view at / beside the
// webhooks, /healthz, /readyz and /metrics, which keep their own handlers
// and need none of the view's credentials.
func TestRunListenServesUI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	log := logr.New(&addressSink{LogSink: funcr.New(func(_, _ string) {}, funcr.Options{}).GetSink(), addrs: addrs})
	secret := writeFile(t, t.TempDir(), "secret", []byte("hunter2\n"))
	reg := prometheus.NewRegistry()
	runner := controller.NewRunner(time.Hour, log)
	view := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "the web view of "+r.URL.Path)
	})
	srv, err := startServers(ctx, runOptions{listen: "127.0.0.1:0", webhookSecretFile: secret, uiHandler: view}, runner, controller.NewMetrics(reg), reg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.shutdown()
	addr := <-addrs
	for path, want := range map[string]string{"/": "the web view of /", "/r/acme/promotions": "the web view of /r/acme/promotions",
		"/healthz": "ok", "/metrics": "", "/hooks/github": "", "/readyz": "ok"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fromView := resp.StatusCode == http.StatusTeapot
		if want == "" && fromView || want != "" && !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %q, want %q", path, resp.StatusCode, body, want)
		}
	}
}

func TestUIFlags(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:80": true, "[::1]:8080": true, ":8080": false,
		"0.0.0.0:8080": false, "192.168.1.5:8080": false, "example.com:80": false, "nonsense": false} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
	dir := t.TempDir()
	both := uiFlags{tokenFile: writeFile(t, dir, "token", []byte("0123456789abcdef0123")), basicAuthFile: writeFile(t, dir, "users", []byte("x"))}
	if _, err := both.auth(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("token and basic auth both given: %v", err)
	}

	// Open on every address, and without a trusted key: two warnings.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var warnings []string
	f := uiFlags{refresh: time.Minute, maxEventClients: 1}
	rf := repoFlags{configPath: "vectorflow", stateBranch: controller.DefaultStateBranch}
	_, _, err := f.startUI(ctx, ":8080", rf, []uiRepository{{url: "https://git.example.com/acme.git", branch: "main"}},
		func(string) source.Auth { return source.Auth{} }, nil, logr.Discard(), func(s string) { warnings = append(warnings, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "open to anyone") || !strings.Contains(warnings[1], "--trust") {
		t.Errorf("warnings %q", warnings)
	}
	warnings = nil
	f.tokenFile = both.tokenFile
	if _, _, err := f.startUI(ctx, ":8080", rf, []uiRepository{{url: "https://git.example.com/acme.git", branch: "main"}},
		func(string) source.Auth { return source.Auth{} }, []gitwriter.TrustedKey{{Name: "c", PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBIKmQETi40xtnnFdhUcbxbea0XwaqKrvfMa/IPBVZrx"}},
		logr.Discard(), func(s string) { warnings = append(warnings, s) }); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings with a token and a trusted key: %q", warnings)
	}
}

// TestUIShowsOnlyTrustedState: someone with push access to the state branch
// marks a waiting promotion Succeeded, approved by mallory, in an unsigned
// commit. The view shows the state as of the last trusted commit, with the
// refusal naming the forged commit on top; nothing the forger wrote shows.
func TestUIShowsOnlyTrustedState(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	bad := forgeDevToTest(t, f)

	base := startUI(t, f)
	for _, path := range []string{"/r/acme/promotions/dev-to-test-2", "/r/acme/promotions", "/"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(body)
		if resp.StatusCode != 200 || !strings.Contains(page, "State refused") || !strings.Contains(page, bad[:12]) {
			t.Errorf("GET %s: %d; the page does not say the state was refused at %s:\n%s", path, resp.StatusCode, bad[:12], page)
		}
		if strings.Contains(page, "mallory") || path == "/r/acme/promotions/dev-to-test-2" && !strings.Contains(page, "Waiting</span>") {
			t.Errorf("GET %s shows what the forged commit wrote:\n%s", path, page)
		}
	}
}

// TestRunServesTheWebView: run --listen serves the view at /, verified with
// the controller's own key, beside /healthz.
func TestRunServesTheWebView(t *testing.T) {
	f := newFlowFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	secret := writeFile(t, t.TempDir(), "secret", []byte("hunter2\n"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out testutil.SyncBuffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"run", "--repo", f.url, "--signing-key", f.controller, "--listen", addr, "--webhook-secret-file", secret,
		"--interval", "1h", "--ui-refresh", "200ms", "--log-level", "error"})
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, out.String())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		page, status := "", 0
		if resp, err := http.Get("http://" + addr + "/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			page, status = string(b), resp.StatusCode
		}
		if status == 200 && strings.Contains(page, "dev-to-test-2 Waiting") {
			if strings.Contains(page, "Unverified") || strings.Contains(page, "State refused") {
				t.Errorf("run's view does not verify the state with the controller's key:\n%s", page)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run's view did not show the first pass within 60s: %d\n%s\n%s", status, page, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}
