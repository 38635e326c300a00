// Package testutil starts the real parts tests run against: a git server over
// HTTP and SSH, signing keys, registries. Tests of every package reuse these
// helpers instead of writing their own.
package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
)

// GitServer is a real git server on loopback, serving the same repositories
// over smart HTTP (with basic auth) and SSH (with public-key auth).
type GitServer struct {
	srv *gittestserver.GitServer

	// Username and Password are the HTTP basic-auth credentials.
	Username, Password string

	// KnownHosts is a known_hosts line for the SSH server's host key.
	KnownHosts []byte

	keyDir string
}

// StartGitServer starts a git server whose repositories live in a temporary
// directory; it is stopped when the test ends.
func StartGitServer(t testing.TB) *GitServer {
	t.Helper()
	RequireGit(t)
	root := t.TempDir()
	keyDir := t.TempDir()
	g := &GitServer{
		srv:      gittestserver.NewGitServer(root).AutoCreate().KeyDir(keyDir),
		Username: "vectorflow",
		Password: "s3cret",
		keyDir:   keyDir,
	}
	g.srv.Auth(g.Username, g.Password)
	if err := g.srv.StartHTTP(); err != nil {
		t.Fatalf("start git HTTP server: %v", err)
	}
	t.Cleanup(g.srv.StopHTTP)
	if err := g.srv.ListenSSH(); err != nil {
		t.Fatalf("listen git SSH server: %v", err)
	}
	go func() { _ = g.srv.StartSSH() }()
	t.Cleanup(func() { _ = g.srv.StopSSH() })

	hostKey, err := os.ReadFile(filepath.Join(keyDir, "gitkit.rsa.pub"))
	if err != nil {
		t.Fatalf("read git SSH host key: %v", err)
	}
	host := strings.TrimPrefix(g.srv.SSHAddress(), "ssh://git@")
	g.KnownHosts = []byte(knownHostsLine(host, hostKey))
	return g
}

// knownHostsLine writes host:port the way OpenSSH does for non-22 ports.
func knownHostsLine(hostPort string, authorizedKey []byte) string {
	host, port, _ := strings.Cut(hostPort, ":")
	if port != "" && port != "22" {
		host = fmt.Sprintf("[%s]:%s", host, port)
	}
	return host + " " + strings.TrimSpace(string(authorizedKey)) + "\n"
}

// Root is the directory holding the bare repositories.
func (g *GitServer) Root() string { return g.srv.Root() }

// HTTPURL is the URL of repository name over HTTP, without credentials.
func (g *GitServer) HTTPURL(name string) string { return g.srv.HTTPAddress() + "/" + name }

// HTTPURLWithCredentials is the URL of repository name with the basic-auth
// user and password in it, for the git binary.
func (g *GitServer) HTTPURLWithCredentials(name string) string {
	return g.srv.HTTPAddressWithCredentials() + "/" + name
}

// SSHURL is the URL of repository name over SSH.
func (g *GitServer) SSHURL(name string) string { return g.srv.SSHAddress() + "/" + name }

// BarePath is the on-disk path of the bare repository name.
func (g *GitServer) BarePath(name string) string { return filepath.Join(g.srv.Root(), name) }

// InitRepo creates repository name on the server holding the files of the
// directory fixture as one commit on branch.
func (g *GitServer) InitRepo(t testing.TB, fixture, branch, name string) {
	t.Helper()
	if err := g.srv.InitRepo(fixture, branch, name); err != nil {
		t.Fatalf("init repository %s from %s: %v", name, fixture, err)
	}
	// git receive-pack starts `git gc --auto` in the background after a
	// push; still writing when the test ends, it makes the temporary
	// directory's removal fail. Tests push hundreds of times: no auto gc.
	for _, kv := range [][2]string{{"receive.autogc", "false"}, {"gc.auto", "0"}} {
		Git(t, g.BarePath(name), nil, "config", "--file", "config", kv[0], kv[1])
	}
}

// RequireGit skips nothing: the git binary is part of the test toolchain and
// .ci/run installs it, so a missing one is a failure, not a skip.
func RequireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git binary is required (run .ci/run to install it): %v", err)
	}
}

// Git runs the git binary in dir with a clean, deterministic environment and
// returns its standard output. extraEnv entries are KEY=VALUE.
func Git(t testing.TB, dir string, extraEnv []string, args ...string) string {
	t.Helper()
	out, err := GitE(dir, extraEnv, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitE is Git returning the error (with stderr) instead of failing the test.
func GitE(dir string, extraEnv []string, args ...string) (string, error) {
	return gitRun(dir, extraEnv, nil, args...)
}

// GitInput is Git with stdin as the command's input (git fast-import,
// git pack-objects).
func GitInput(t testing.TB, dir string, stdin []byte, args ...string) string {
	t.Helper()
	out, err := gitRun(dir, nil, stdin, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitRun(dir string, extraEnv []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), extraEnv...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// gitEnv isolates the git binary from the user's configuration.
func gitEnv() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Author",
		"GIT_COMMITTER_EMAIL=author@example.com",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// CopyDir copies the directory tree src into a new temporary directory and
// returns it, so a test can change a fixture without touching the original.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}
