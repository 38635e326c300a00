// Package demo builds the throwaway world `vectorflow demo` runs in: a git
// server and an OCI registry on loopback, fresh signing keys, the quickstart
// rewritten to use them, and the narration of what the controller does.
package demo

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Servers are a git server (git http-backend behind basic auth, over smart
// HTTP as a hosted remote is) and an OCI registry, both on 127.0.0.1 and
// served by this process.
type Servers struct {
	// Username and Password are the git server's basic-auth credentials.
	Username, Password string
	// RegistryHost is host:port, the registry part of image references.
	RegistryHost string

	root     string
	gitURL   string
	git      *http.Server
	registry *http.Server
}

// StartServers starts both servers; their data lives under dir. Close stops
// them.
func StartServers(dir string) (*Servers, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("the demo's git server runs the git binary (git http-backend); install git and run it again: %w", err)
	}
	if err := hasHTTPBackend(gitBin); err != nil {
		return nil, err
	}
	secret := make([]byte, 12)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	s := &Servers{Username: "demo", Password: hex.EncodeToString(secret), root: filepath.Join(dir, "git")}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, err
	}
	var gitHost string
	s.git, gitHost, err = serve("git server", basicAuth(s.Username, s.Password, gitHTTPBackend(gitBin, s.root, s.Username)))
	if err != nil {
		return nil, err
	}
	s.gitURL = "http://" + gitHost
	s.registry, s.RegistryHost, err = serve("registry", registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// serve starts handler on a free port of 127.0.0.1 and returns its server
// and host:port.
func serve(what string, handler http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("start the demo %s: %w", what, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// A client that hangs up mid-request is the client's story, told
		// by its own error; the demo's output is its narration.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("demo %s stopped: %v", what, err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// gitHTTPBackend serves the bare repositories under root over smart HTTP
// with git's own CGI program, as any git hosting does. Only requests that
// passed basicAuth reach it, so every one is user's and may push.
func gitHTTPBackend(gitBin, root, user string) http.Handler {
	return &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			// http-backend enables receive-pack only for an authenticated
			// user.
			"REMOTE_USER=" + user,
			// The user's and the system's git configuration have no say
			// in the demo's server.
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
		},
		// A failed request reaches the client as its HTTP status and
		// message, and the client's error is what the demo reports.
		Stderr: io.Discard,
		Logger: log.New(io.Discard, "", 0),
	}
}

// hasHTTPBackend checks that git ships http-backend: some packagings split
// it off, and without it every request would fail with a bare 500.
func hasHTTPBackend(gitBin string) error {
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		return fmt.Errorf("the demo's git server is git http-backend; %s --exec-path failed: %w", gitBin, err)
	}
	found, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "git-http-backend*"))
	if err != nil || len(found) == 0 {
		return fmt.Errorf("the demo's git server is git http-backend, which %s lacks (not in %s); install a git that includes it and run the demo again",
			gitBin, strings.TrimSpace(string(out)))
	}
	return nil
}

// basicAuth lets through only requests that carry username and password.
func basicAuth(username, password string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		// Both compared in full, so the answer's timing tells nothing.
		userOK := subtle.ConstantTimeCompare([]byte(u), []byte(username))
		passwordOK := subtle.ConstantTimeCompare([]byte(p), []byte(password))
		if !ok || userOK&passwordOK != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="vectorflow demo"`)
			http.Error(w, "the demo's git server wants the demo's username and password", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops both servers.
func (s *Servers) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range []*http.Server{s.git, s.registry} {
		if srv != nil {
			_ = srv.Shutdown(ctx)
		}
	}
}

// CreateRepository makes the bare repository name holding files as one
// commit on branch, pushed to it over HTTP as a user would, and returns its
// URL (without credentials).
func (s *Servers) CreateRepository(fixtureDir, branch, name string, files map[string][]byte) (string, error) {
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return "", fmt.Errorf("demo repository name %q: want one path element, not starting with a dot", name)
	}
	if err := WriteFiles(fixtureDir, files); err != nil {
		return "", fmt.Errorf("write the demo repository's files: %w", err)
	}
	head := git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)}
	if _, err := git.PlainInitWithOptions(s.BarePath(name), &git.PlainInitOptions{Bare: true, InitOptions: head}); err != nil {
		return "", fmt.Errorf("create the demo repository %s: %w", name, err)
	}
	url := s.gitURL + "/" + name
	if err := s.pushFixture(fixtureDir, head, url); err != nil {
		return "", fmt.Errorf("push the first commit of the demo repository %s: %w", url, err)
	}
	return url, nil
}

// pushFixture commits everything in dir and pushes it to url.
func (s *Servers) pushFixture(dir string, head git.InitOptions, url string) error {
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: head})
	if err != nil {
		return err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return err
	}
	author := &object.Signature{Name: "vectorflow demo", Email: "demo@vectorflow.dev", When: time.Now()}
	if _, err := wt.Commit("The quickstart, made the demo's own", &git.CommitOptions{Author: author}); err != nil {
		return err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{url}}); err != nil {
		return err
	}
	refspec := config.RefSpec(head.DefaultBranch + ":" + head.DefaultBranch)
	return repo.Push(&git.PushOptions{
		RefSpecs: []config.RefSpec{refspec},
		Auth:     &githttp.BasicAuth{Username: s.Username, Password: s.Password},
	})
}

// BarePath is where the bare repository name lives on disk.
func (s *Servers) BarePath(name string) string { return filepath.Join(s.root, name) }

// PushTags pushes a small random image under each tag of repo in the
// registry, as a CI pipeline would push a build.
func (s *Servers) PushTags(ctx context.Context, repo string, tags ...string) error {
	for _, tag := range tags {
		ref, err := name.NewTag(s.RegistryHost + "/" + repo + ":" + tag)
		if err != nil {
			return fmt.Errorf("tag %q of %s: %w", tag, repo, err)
		}
		img, err := random.Image(256, 1)
		if err != nil {
			return fmt.Errorf("make an image for %s: %w", ref, err)
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuth(authn.Anonymous)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return nil
}

// Anonymous is a keychain that never reads the user's docker
// credentials: the demo's registry needs none.
type Anonymous struct{}

// Resolve always answers anonymous access.
func (Anonymous) Resolve(authn.Resource) (authn.Authenticator, error) { return authn.Anonymous, nil }
