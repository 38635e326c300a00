// Package demo builds the throwaway world `vectorflow demo` runs in: a git
// server and an OCI registry on loopback, fresh signing keys, the quickstart
// rewritten to use them, and the narration of what the controller does.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Servers are a git server (smart HTTP with basic auth) and an OCI registry,
// both on 127.0.0.1 and both in this process.
type Servers struct {
	// Username and Password are the git server's basic-auth credentials.
	Username, Password string
	// RegistryHost is host:port, the registry part of image references.
	RegistryHost string

	root     string
	git      *gittestserver.GitServer
	registry *http.Server
}

// StartServers starts both servers; their data lives under dir. Close stops
// them.
func StartServers(dir string) (*Servers, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("the demo's git server runs the git binary (upload-pack, receive-pack); install git and run it again: %w", err)
	}
	secret := make([]byte, 12)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	s := &Servers{Username: "demo", Password: hex.EncodeToString(secret), root: filepath.Join(dir, "git")}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, err
	}
	s.git = gittestserver.NewGitServer(s.root)
	s.git.Auth(s.Username, s.Password)
	if err := s.git.StartHTTP(); err != nil {
		return nil, fmt.Errorf("start the demo git server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("start the demo registry: %w", err)
	}
	s.RegistryHost = ln.Addr().String()
	s.registry = &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := s.registry.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("demo registry stopped: %v", err)
		}
	}()
	return s, nil
}

// Close stops both servers.
func (s *Servers) Close() {
	if s.registry != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.registry.Shutdown(ctx)
	}
	s.git.StopHTTP()
}

// CreateRepository makes the bare repository name holding files as one
// commit on branch, and returns its URL (without credentials).
func (s *Servers) CreateRepository(fixtureDir, branch, name string, files map[string][]byte) (string, error) {
	if err := WriteFiles(fixtureDir, files); err != nil {
		return "", fmt.Errorf("write the demo repository's files: %w", err)
	}
	if err := s.git.InitRepo(fixtureDir, branch, name); err != nil {
		return "", fmt.Errorf("create the demo repository %s: %w", name, err)
	}
	return s.git.HTTPAddress() + "/" + name, nil
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
