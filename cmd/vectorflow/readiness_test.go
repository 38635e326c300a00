package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// brokenConfig targets a stage that no landscape has: validate rejects it.
const brokenConfig = `apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: dev-to-nowhere
spec:
  source:
    kind: Stage
    name: dev
    landscape: dev
  target:
    kind: Stage
    name: nowhere
    landscape: prod
`

// TestRunOnceExitCodes runs the built binary: run --once exits 0 when
// promotions only wait for an approval, and non-zero, with the problem
// logged at error level and named in the error, when the repository has a
// configuration problem validate rejects or cannot be read at all.
func TestRunOnceExitCodes(t *testing.T) {
	f := newFlowFixture(t)
	bin := buildVectorflow(t)
	runOnce := func(repo string) (string, error) {
		cmd := exec.Command(bin, "run", "--once", "--repo", repo, "--signing-key", f.controller, "--log-encoding", "json")
		cmd.Env = append(os.Environ(), "VECTORFLOW_GIT_USERNAME="+f.srv.Username, "VECTORFLOW_GIT_PASSWORD="+f.srv.Password)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := runOnce(f.url)
	if err != nil {
		t.Fatalf("run --once on the quickstart (promotions waiting for approval) failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "dev-to-test-1: (new) -> Waiting") {
		t.Fatalf("run --once did not report the promotion waiting for approval:\n%s", out)
	}

	f.pushFile(t, "vectorflow/broken.yaml", brokenConfig, "add a config that targets no stage")
	f.pushFile(t, "vectorflow/kustomization.yaml", strings.Replace(readFile(t, filepath.Join("..", "..", "examples", "quickstart", "vectorflow", "kustomization.yaml")),
		"  - promotions.yaml\n", "  - promotions.yaml\n  - broken.yaml\n", 1), "compose the broken config")
	out, err = runOnce(f.url)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("run --once with a configuration problem exited with %v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(out, "dev-to-nowhere") || !strings.Contains(out, "configuration problem") {
		t.Errorf("run --once does not name the configuration problem:\n%s", out)
	}
	if !hasLogLine(out, "error", "configuration problem") {
		t.Errorf("run --once did not log the configuration problem at error level:\n%s", out)
	}

	out, err = runOnce(f.srv.HTTPURL("missing.git"))
	if !errors.As(err, &exit) || !strings.Contains(out, "missing.git") {
		t.Errorf("run --once on a repository that does not exist: %v, want a non-zero exit naming it\n%s", err, out)
	}
}

// TestRunReadiness runs the built binary with --listen: /readyz answers 503
// naming the repository and its configuration problem while the problem is
// there, 200 once a pass succeeds after the fix, and 503 naming the failure
// for a repository that cannot be read.
func TestRunReadiness(t *testing.T) {
	f := newFlowFixture(t)
	bin := buildVectorflow(t)
	secretFile := writeFile(t, t.TempDir(), "webhook-secret", []byte("hunter2-webhook\n"))
	f.pushFile(t, "vectorflow/broken.yaml", brokenConfig, "add a config that targets no stage")
	kustomization := readFile(t, filepath.Join("..", "..", "examples", "quickstart", "vectorflow", "kustomization.yaml"))
	f.pushFile(t, "vectorflow/kustomization.yaml", strings.Replace(kustomization, "  - promotions.yaml\n", "  - promotions.yaml\n  - broken.yaml\n", 1),
		"compose the broken config")

	p := startProcess(t, bin, "run", "--listen", "127.0.0.1:0", "--webhook-secret-file", secretFile,
		"--interval", "500ms", "--repo", f.url, "--signing-key", f.controller, "--log-encoding", "json")
	base := "http://" + p.listenAddress(t)
	var status int
	var body string
	waitFor(t, 60*time.Second, "/readyz to name the configuration problem", func() bool {
		status, body = httpGet(base + "/readyz")
		if status == http.StatusOK {
			t.Fatalf("/readyz answered 200 while the repository has a configuration problem: %s", body)
		}
		return strings.Contains(body, "dev-to-nowhere")
	})
	if status != http.StatusServiceUnavailable || !strings.Contains(body, f.url) || !strings.Contains(body, "configuration problem") {
		t.Fatalf("/readyz answered %d %q, want 503 naming %s and the configuration problem", status, body, f.url)
	}
	time.Sleep(2 * time.Second) // several passes
	if status, body = httpGet(base + "/readyz"); status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz answered %d %q on a later pass, want 503 while the problem stays", status, body)
	}

	f.pushFile(t, "vectorflow/kustomization.yaml", kustomization, "drop the broken config")
	waitFor(t, 60*time.Second, "/readyz to answer 200 after the fix", func() bool {
		status, body = httpGet(base + "/readyz")
		return status == http.StatusOK
	})

	missing := startProcess(t, bin, "run", "--listen", "127.0.0.1:0", "--webhook-secret-file", secretFile,
		"--interval", "500ms", "--repo", f.srv.HTTPURL("missing.git"), "--signing-key", f.controller, "--log-encoding", "json")
	base = "http://" + missing.listenAddress(t)
	waitFor(t, 60*time.Second, "/readyz to say the pass of missing.git failed", func() bool {
		status, body = httpGet(base + "/readyz")
		if status == http.StatusOK {
			t.Fatalf("/readyz answered 200 while every pass fails: %s", body)
		}
		return strings.Contains(body, "pass failed")
	})
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "missing.git") {
		t.Fatalf("/readyz answered %d %q, want 503 naming missing.git", status, body)
	}
}

// pushFile writes one file of the config repository in a commit a person
// pushes with the git binary.
func (f *flowFixture) pushFile(t *testing.T, path, content, message string) {
	t.Helper()
	dir := f.clone(t)
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, path, []byte(content))
	testutil.Git(t, dir, nil, "add", path)
	testutil.Git(t, dir, nil, "commit", "-qm", message)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
}

// hasLogLine reports whether out holds a JSON log line at level whose
// message contains msg.
func hasLogLine(out, level, msg string) bool {
	for _, line := range strings.Split(out, "\n") {
		var e struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Level == level && strings.Contains(e.Msg, msg) {
			return true
		}
	}
	return false
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}
