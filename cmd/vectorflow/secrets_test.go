package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestCredentialsInRepositoryURLStaySecret gives every command the git
// server's password only inside the --repo URL (no credential in the
// environment, so the URL's credentials must work) and then looks for the
// password everywhere vectorflow shows something: the output of run --once,
// approve, get, audit and validate, the logs of run --listen at debug level, its
// /metrics, /readyz and webhook answers, errors about a repository that does
// not exist, and every commit message and file on every branch.
func TestCredentialsInRepositoryURLStaySecret(t *testing.T) {
	f := newFlowFixture(t)
	bin := buildVectorflow(t)
	password := f.srv.Password
	url := f.srv.HTTPURLWithCredentials("acme.git")
	if !strings.Contains(url, ":"+password+"@") {
		t.Fatalf("the credentialed URL %q does not carry the password", url)
	}
	env := envWithoutGitCredentials()
	var shown bytes.Buffer // everything vectorflow showed
	oneShot := func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		shown.Write(out)
		if wantOK && err != nil {
			t.Fatalf("vectorflow %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !wantOK && err == nil {
			t.Fatalf("vectorflow %s succeeded, want a failure\n%s", strings.Join(args, " "), out)
		}
		return string(out)
	}

	oneShot(true, "run", "--once", "--repo", url, "--signing-key", f.controller, "--log-level", "debug")
	if got := devPromotions(f.srv.BarePath("acme.git")); !strings.Contains(got, "latest-to-dev-1") {
		t.Fatalf("run --once with the credentials in the URL promoted nothing to dev: %q", got)
	}
	oneShot(true, "approve", "dev-to-test-1", "--repo", url, "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	oneShot(true, "run", "--once", "--repo", url, "--signing-key", f.controller)
	oneShot(true, "get", "promotions", "--repo", url)
	oneShot(true, "get", "stages", "--repo", url, "-o", "json")
	oneShot(true, "get", "configs", "--repo", url, "-o", "yaml")
	oneShot(true, "audit", "--repo", url)
	oneShot(true, "validate", "--repo", url, "-o", "json")
	oneShot(true, "validate", "--repo", url)
	missing := f.srv.HTTPURLWithCredentials("missing.git")
	oneShot(false, "run", "--once", "--repo", missing, "--signing-key", f.controller)
	oneShot(false, "validate", "--repo", missing)
	oneShot(false, "validate", "--repo", url, "--branch", "no-such-branch")

	secretFile := writeFile(t, t.TempDir(), "webhook-secret", []byte("hunter2-webhook\n"))
	p := startProcessEnv(t, env, bin, "run", "--listen", "127.0.0.1:0", "--webhook-secret-file", secretFile,
		"--interval", "1h", "--repo", url, "--repo", missing, "--signing-key", f.controller, "--log-encoding", "json", "--log-level", "debug")
	base := "http://" + p.listenAddress(t)
	waitFor(t, 60*time.Second, "/metrics to name the repository", func() bool {
		return strings.Contains(httpBody(t, base+"/metrics"), "vectorflow_reconcile_duration_seconds_count")
	})
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	bare := f.srv.BarePath("acme.git")
	head := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-parse", "main"))
	for _, hookURL := range []string{url, missing} {
		resp := postHookBody(t, base+"/hooks/github", githubPush(hookURL, head), []byte("hunter2-webhook"))
		shown.WriteString(resp)
	}
	waitFor(t, 60*time.Second, "latest-to-dev-2 in the dev overlay after the webhook", func() bool {
		return strings.Contains(devPromotions(bare), "latest-to-dev-2")
	})
	waitSettled(t, bare)
	shown.WriteString(httpBody(t, base+"/metrics"))
	shown.WriteString(httpBody(t, base+"/readyz"))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("vectorflow run did not exit within 10s of SIGTERM")
	}
	shown.WriteString(p.logs())

	// Every commit message and every file version on every branch.
	shown.WriteString(testutil.Git(t, bare, nil, "log", "--all", "-p", "--format=%H%n%B"))

	if !strings.Contains(shown.String(), "acme.git") {
		t.Fatalf("the collected output never names the repository; the test looks at nothing:\n%s", shown.String())
	}
	if n := strings.Count(shown.String(), password); n > 0 {
		var lines []string
		for _, l := range strings.Split(shown.String(), "\n") {
			if strings.Contains(l, password) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 10 {
			lines = lines[:10]
		}
		t.Fatalf("the password shows %d time(s) in what vectorflow showed, e.g.:\n%s", n, strings.Join(lines, "\n"))
	}
}

// envWithoutGitCredentials is the test's environment without the git
// credentials the fixture sets, so only a URL can carry them.
func envWithoutGitCredentials() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "VECTORFLOW_GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(os.TempDir(), "vectorflow-no-gitconfig"))
}

// postHookBody posts a signed GitHub push webhook and returns the status
// line and body of the answer.
func postHookBody(t *testing.T, url string, body, secret []byte) string {
	t.Helper()
	req := signedGitHubPush(t, url, body, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.Status + "\n" + b.String()
}
