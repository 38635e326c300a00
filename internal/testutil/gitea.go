package testutil

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GiteaVersion is the Gitea release hack/gitea.sh builds and caches.
const GiteaVersion = "v1.26.0"

// Gitea is a real Gitea server on loopback, backed by sqlite in a temporary
// directory, with an admin account. It is stopped when the test ends.
type Gitea struct {
	// URL is the web root, http://127.0.0.1:port, without a trailing slash.
	URL string

	// AdminUser and AdminPassword are the site administrator's credentials.
	AdminUser, AdminPassword string

	dir    string
	client *http.Client
}

// StartGitea writes a minimal app.ini, migrates the database, creates the
// admin account, starts `gitea web` and waits until it answers /api/healthz.
// The binary is $VECTORFLOW_GITEA or the one hack/gitea.sh cached; a missing
// binary fails the test, since CI builds it before running the tests.
func StartGitea(t testing.TB) *Gitea {
	t.Helper()
	RequireGit(t)
	bin := GiteaBinary(t)
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	g := &Gitea{
		URL:           "http://127.0.0.1:" + strconv.Itoa(port),
		AdminUser:     "vectorflow-admin",
		AdminPassword: randomHex(t, 12),
		dir:           dir,
		client:        &http.Client{Timeout: 30 * time.Second},
	}
	conf := filepath.Join(dir, "app.ini")
	if err := os.WriteFile(conf, []byte(giteaConfig(t, dir, port)), 0o600); err != nil {
		t.Fatalf("write gitea config: %v", err)
	}

	g.run(t, bin, "migrate")
	g.run(t, bin, "admin", "user", "create", "--admin",
		"--username", g.AdminUser, "--password", g.AdminPassword,
		"--email", g.AdminUser+"@example.com", "--must-change-password=false")

	logFile, err := os.Create(filepath.Join(dir, "web.log"))
	if err != nil {
		t.Fatalf("create gitea log: %v", err)
	}
	cmd := exec.Command(bin, g.globalArgs("web")...)
	cmd.Env = g.env()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gitea web: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})

	if err := g.waitHealthy(exited, 60*time.Second); err != nil {
		t.Fatalf("gitea web did not become healthy: %v\n%s", err, tail(filepath.Join(dir, "web.log"), 4000))
	}
	return g
}

// GiteaBinary finds the Gitea server binary: $VECTORFLOW_GITEA, else the
// tools cache that hack/gitea.sh fills.
func GiteaBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("VECTORFLOW_GITEA"); p != "" {
		if !fileExists(p) {
			t.Fatalf("VECTORFLOW_GITEA=%s does not exist: run hack/gitea.sh or unset it", p)
		}
		return p
	}
	cache := os.Getenv("VECTORFLOW_TOOLS")
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "vectorflow", "tools")
		}
	}
	p := filepath.Join(cache, "bin", "gitea-"+GiteaVersion)
	if !fileExists(p) {
		t.Fatalf("the Gitea server is required and %s is missing: run hack/gitea.sh (make test does)", p)
	}
	return p
}

// APIURL is the root of Gitea's REST API, the URL forge clients take.
func (g *Gitea) APIURL() string { return g.URL + "/api/v1" }

// CreateUser creates an ordinary user and an access token with every scope.
func (g *Gitea) CreateUser(t testing.TB, name string) (user, password, token string) {
	t.Helper()
	password = randomHex(t, 12)
	mustChange := false
	g.mustAPI(t, http.MethodPost, "/admin/users", basicAuth(g.AdminUser, g.AdminPassword), map[string]any{
		"username":             name,
		"email":                name + "@example.com",
		"password":             password,
		"must_change_password": &mustChange,
	}, nil)
	var tok struct {
		Token string `json:"sha1"`
	}
	g.mustAPI(t, http.MethodPost, "/users/"+url.PathEscape(name)+"/tokens", basicAuth(name, password), map[string]any{
		"name":   "vectorflow-test",
		"scopes": []string{"all"},
	}, &tok)
	if tok.Token == "" {
		t.Fatalf("gitea returned no token for user %s", name)
	}
	return name, password, tok.Token
}

// CreateRepo creates an empty repository owned by the token's user, with
// main as its default branch, and returns its HTTP clone URL.
func (g *Gitea) CreateRepo(t testing.TB, owner, name, token string) (cloneURL string) {
	t.Helper()
	var repo struct {
		FullName string `json:"full_name"`
		CloneURL string `json:"clone_url"`
	}
	g.mustAPI(t, http.MethodPost, "/user/repos", tokenAuth(token), map[string]any{
		"name":           name,
		"default_branch": "main",
	}, &repo)
	if repo.FullName != owner+"/"+name {
		t.Fatalf("created repository %q, want %s/%s: is the token %s's?", repo.FullName, owner, name, owner)
	}
	return repo.CloneURL
}

// AddCollaborator gives user write access to owner/repo, which makes that
// user's reviews official.
func (g *Gitea) AddCollaborator(t testing.TB, owner, repo, user, token string) {
	t.Helper()
	g.mustAPI(t, http.MethodPut, "/repos/"+owner+"/"+repo+"/collaborators/"+url.PathEscape(user), tokenAuth(token),
		map[string]any{"permission": "write"}, nil)
}

// ProtectBranch forbids direct pushes to branch and requires
// requiredApprovals official approvals before a pull request merges.
func (g *Gitea) ProtectBranch(t testing.TB, owner, repo, branch string, requiredApprovals int, token string) {
	t.Helper()
	g.mustAPI(t, http.MethodPost, "/repos/"+owner+"/"+repo+"/branch_protections", tokenAuth(token), map[string]any{
		"rule_name":          branch,
		"enable_push":        false,
		"required_approvals": requiredApprovals,
	}, nil)
}

// WaitForBranch polls until a pushed branch shows in the API: Gitea indexes
// pushed branches asynchronously, and opening a pull request before that
// fails with "branch does not exist".
func (g *Gitea) WaitForBranch(t testing.TB, owner, repo, branch, token string) {
	t.Helper()
	path := "/repos/" + owner + "/" + repo + "/branches/" + url.PathEscape(branch)
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body, err := g.API(http.MethodGet, path, tokenAuth(token), nil)
		if err == nil && status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("branch %s of %s/%s never appeared in the gitea API: status %d %s %v", branch, owner, repo, status, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CredentialURL puts user and secret (a password or token) into an HTTP
// clone URL, for the git binary.
func CredentialURL(t testing.TB, cloneURL, user, secret string) string {
	t.Helper()
	u, err := url.Parse(cloneURL)
	if err != nil {
		t.Fatalf("parse clone URL %q: %v", cloneURL, err)
	}
	u.User = url.UserPassword(user, secret)
	return u.String()
}

// API calls Gitea's REST API as auth ("token X" or "Basic ..."; empty for
// anonymous) with body encoded as JSON, and returns the status and body.
func (g *Gitea) API(method, path, auth string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, g.APIURL()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TokenAuth is the Authorization header value for a Gitea access token.
func TokenAuth(token string) string { return tokenAuth(token) }

func (g *Gitea) mustAPI(t testing.TB, method, path, auth string, body, out any) {
	t.Helper()
	status, resp, err := g.API(method, path, auth, body)
	if err != nil {
		t.Fatalf("gitea %s %s: %v", method, path, err)
	}
	if status < 200 || status > 299 {
		t.Fatalf("gitea %s %s: status %d: %s", method, path, status, resp)
	}
	if out != nil {
		if err := json.Unmarshal(resp, out); err != nil {
			t.Fatalf("gitea %s %s: decode %s: %v", method, path, resp, err)
		}
	}
}

func (g *Gitea) run(t testing.TB, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, g.globalArgs(args...)...)
	cmd.Env = g.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gitea %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (g *Gitea) globalArgs(args ...string) []string {
	return append([]string{"--work-path", g.dir, "--config", filepath.Join(g.dir, "app.ini")}, args...)
}

// env keeps Gitea and the git it runs away from the user's home and config.
func (g *Gitea) env() []string {
	env := []string{
		"HOME=" + g.dir,
		"GITEA_WORK_DIR=" + g.dir,
		"GIT_CONFIG_NOSYSTEM=1",
		// Tests and CI run as root in containers; Gitea refuses that otherwise.
		"GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true",
	}
	for _, k := range []string{"PATH", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func (g *Gitea) waitHealthy(exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("gitea web exited: %v", err)
		default:
		}
		resp, err := g.client.Get(g.URL + "/api/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// giteaConfig turns off everything the forge tests do not use (SSH, mail,
// indexers, cron, actions, packages, outbound traffic) so startup is quick.
func giteaConfig(t testing.TB, dir string, port int) string {
	t.Helper()
	runUser := "root"
	if u, err := user.Current(); err == nil {
		runUser = u.Username
	}
	data := filepath.Join(dir, "data")
	return fmt.Sprintf(`APP_NAME = vectorflow test forge
RUN_MODE = prod
RUN_USER = %[1]s
WORK_PATH = %[2]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:%[3]d/
LOCAL_ROOT_URL = http://127.0.0.1:%[3]d/
APP_DATA_PATH = %[4]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = %[4]s/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = %[2]s/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[5]s
INTERNAL_TOKEN = %[6]s
MIN_PASSWORD_LENGTH = 8
PASSWORD_COMPLEXITY = off

[service]
DISABLE_REGISTRATION = true
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = true

[mailer]
ENABLED = false

[oauth2]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[picture]
DISABLE_GRAVATAR = true

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[2]s/log
`, runUser, dir, port, data, randomHex(t, 32), randomHex(t, 32))
}

func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random bytes: %v", err)
	}
	return hex.EncodeToString(b)
}

func tokenAuth(token string) string { return "token " + token }

func basicAuth(user, password string) string {
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(user, password)
	return req.Header.Get("Authorization")
}

// tail returns the last n bytes of a log file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
