package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestRunProcessWebhook runs the built binary as a real process: `run
// --listen` becomes ready, serves health and metrics, refuses a webhook
// with a bad signature without reconciling, promotes a pushed template
// change to dev on a signed GitHub push webhook (the interval is an hour,
// so only the webhook can cause it), and exits 0 promptly on SIGTERM.
func TestRunProcessWebhook(t *testing.T) {
	f := newFlowFixture(t)
	bin := buildVectorflow(t)
	secretFile := writeFile(t, t.TempDir(), "webhook-secret", []byte("hunter2-webhook\n"))
	secret := []byte("hunter2-webhook")

	p := startProcess(t, bin, "run", "--listen", "127.0.0.1:0", "--webhook-secret-file", secretFile,
		"--interval", "1h", "--repo", f.url, "--signing-key", f.controller, "--log-encoding", "json")
	base := "http://" + p.listenAddress(t)

	waitFor(t, 60*time.Second, "/readyz to answer 200", func() bool { return httpStatus(base+"/readyz") == http.StatusOK })
	if s := httpStatus(base + "/healthz"); s != http.StatusOK {
		t.Fatalf("/healthz answered %d", s)
	}
	if metrics := httpBody(t, base+"/metrics"); !strings.Contains(metrics, "vectorflow_reconcile_duration_seconds") {
		t.Fatalf("/metrics lacks vectorflow_reconcile_duration_seconds:\n%s", metrics)
	}
	// The first passes promote the quickstart's vector to dev; wait until
	// the repository has settled so nothing but a webhook moves it again.
	bare := f.srv.BarePath("acme.git")
	waitFor(t, 60*time.Second, "latest-to-dev-1 in the dev overlay", func() bool {
		return strings.Contains(devPromotions(bare), "latest-to-dev-1")
	})
	waitSettled(t, bare)

	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	head := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "main"))
	body := githubPush(f.url, head)

	if status := postHook(t, base+"/hooks/github", body, []byte("wrong secret")); status != http.StatusUnauthorized {
		t.Fatalf("a push webhook with a bad signature got %d, want 401", status)
	}
	time.Sleep(2 * time.Second)
	if got := devPromotions(bare); strings.Contains(got, "latest-to-dev-2") {
		t.Fatalf("a webhook with a bad signature triggered a promotion:\n%s", got)
	}

	sent := time.Now()
	if status := postHook(t, base+"/hooks/github", body, secret); status != http.StatusAccepted {
		t.Fatalf("a signed push webhook got %d, want 202", status)
	}
	waitFor(t, 10*time.Second, "latest-to-dev-2 in the dev overlay after the webhook", func() bool {
		return strings.Contains(devPromotions(bare), "latest-to-dev-2")
	})
	t.Logf("webhook to dev overlay commit: %s", time.Since(sent).Round(time.Millisecond))

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("vectorflow run exited with %v after SIGTERM\n%s", err, p.logs())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("vectorflow run did not exit within 10s of SIGTERM\n%s", p.logs())
	}
}

// buildVectorflow builds this command into a temporary directory.
func buildVectorflow(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vectorflow")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is a running vectorflow with its JSON log lines collected.
type process struct {
	cmd  *exec.Cmd
	done chan error

	mu     sync.Mutex
	lines  []string
	addr   chan string
	stdout testutil.SyncBuffer
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, append(os.Environ(), "VECTORFLOW_GIT_USERNAME=vectorflow", "VECTORFLOW_GIT_PASSWORD=s3cret"), bin, args...)
}

// startProcessEnv starts bin with exactly the environment env; standard
// output and standard error are both collected.
func startProcessEnv(t *testing.T, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan error, 1), addr: make(chan string, 1)}
	// A CI job that itself runs in a pod would make every run here start
	// the Kubernetes manager against that cluster; the tests that want a
	// cluster give --kubeconfig.
	p.cmd.Env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBERNETES_SERVICE_HOST=") || strings.HasPrefix(kv, "KUBERNETES_SERVICE_PORT=")
	})
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go p.collect(stderr)
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *process) collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.lines = append(p.lines, line)
		p.mu.Unlock()
		var entry struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "listening" {
			select {
			case p.addr <- entry.Address:
			default:
			}
		}
	}
}

// logs are the process's standard error lines, then its standard output.
func (p *process) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n") + "\n" + p.stdout.String()
}

// listenAddress is where the process said it listens (--listen 127.0.0.1:0
// lets the kernel pick a free port).
func (p *process) listenAddress(t *testing.T) string {
	t.Helper()
	select {
	case a := <-p.addr:
		return a
	case err := <-p.done:
		t.Fatalf("vectorflow run exited early: %v\n%s", err, p.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("vectorflow run logged no listening address within 30s\n%s", p.logs())
	}
	return ""
}

// devPromotions lists the promotions named by the commits that changed the
// dev overlay on the server, newest first.
func devPromotions(bare string) string {
	out, _ := testutil.GitE(bare, nil, "log", "--format=%(trailers:key=Vectorflow-Promotion,valueonly)", "main", "--", "apps/overlays/dev")
	return out
}

// waitSettled waits until neither main nor the state branch has moved for
// two seconds.
func waitSettled(t *testing.T, bare string) {
	t.Helper()
	tips := func() string {
		out, _ := testutil.GitE(bare, nil, "rev-parse", "main", "vectorflow/state")
		return out
	}
	last, since := tips(), time.Now()
	waitFor(t, 60*time.Second, "the repository to settle", func() bool {
		if now := tips(); now != last {
			last, since = now, time.Now()
		}
		return time.Since(since) > 2*time.Second
	})
}

// githubPush is a push event as GitHub sends it (the fields vectorflow
// reads, and enough of the rest to look like the real thing).
func githubPush(cloneURL, after string) []byte {
	b, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "before": strings.Repeat("0", 40), "after": after,
		"created": false, "deleted": false, "forced": false,
		"repository": map[string]any{
			"id": 1296269, "name": "acme", "full_name": "acme/acme", "private": true,
			"html_url": "https://github.example.com/acme/acme", "clone_url": cloneURL,
			"ssh_url": "git@github.example.com:acme/acme.git", "default_branch": "main",
		},
		"pusher":      map[string]any{"name": "test-author", "email": "author@example.com"},
		"head_commit": map[string]any{"id": after, "message": "bump service-a"},
	})
	return b
}

func postHook(t *testing.T, url string, body, secret []byte) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(signedGitHubPush(t, url, body, secret))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signedGitHubPush is a GitHub push webhook request signed with secret.
func signedGitHubPush(t *testing.T, url string, body, secret []byte) *http.Request {
	t.Helper()
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%d", time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
