package source

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

const fixtureBranch = "main"

// TestFetchTransports fetches the same fixture over every transport and
// credential kind, against a real git server (gitkit over HTTP and SSH) and
// the file transport, and checks each sees the commit the server holds.
func TestFetchTransports(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	want := strings.TrimSpace(testutil.Git(t, srv.BarePath("config"), nil, "rev-parse", fixtureBranch))
	key, passphrase := newSSHKey(t)

	tests := []struct {
		name string
		url  string
		auth Auth
	}{
		{name: "file URL", url: "file://" + srv.BarePath("config")},
		{name: "local path", url: srv.BarePath("config")},
		{name: "HTTP basic auth", url: srv.HTTPURL("config"), auth: Auth{Username: srv.Username, Password: srv.Password}},
		{name: "HTTP token as basic-auth password", url: srv.HTTPURL("config"), auth: Auth{Username: srv.Username, Token: srv.Password}},
		{name: "SSH key with passphrase and known_hosts", url: srv.SSHURL("config"),
			auth: Auth{SSHPrivateKey: key, SSHPassphrase: passphrase, KnownHosts: srv.KnownHosts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, err := Open(tt.url, tt.auth)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			got, err := repo.Fetch(context.Background(), fixtureBranch)
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if got.String() != want {
				t.Errorf("Fetch = %s, want the server's %s", got, want)
			}
			if _, err := repo.Repo().CommitObject(got); err != nil {
				t.Errorf("the fetched commit is not in the store: %v", err)
			}
		})
	}
}

// TestFetchRefused checks that bad credentials and unknown SSH hosts fail
// with an error that says what to fix, instead of fetching anyway.
func TestFetchRefused(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	key, passphrase := newSSHKey(t)
	// Another RSA key, like the server's, so the handshake gets as far as
	// comparing keys.
	otherHostKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPublic, err := ssh.NewPublicKey(&otherHostKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := strings.Cut(string(srv.KnownHosts), " ")
	wrongHostKey := []byte(host + " " + string(ssh.MarshalAuthorizedKey(otherPublic)))

	tests := []struct {
		name    string
		url     string
		auth    Auth
		wantErr string
	}{
		{name: "wrong password", url: srv.HTTPURL("config"),
			auth: Auth{Username: srv.Username, Password: "wrong"}, wantErr: "the server refused the credentials"},
		{name: "no credentials", url: srv.HTTPURL("config"), wantErr: "VECTORFLOW_GIT_TOKEN"},
		{name: "host key differs from known_hosts", url: srv.SSHURL("config"),
			auth: Auth{SSHPrivateKey: key, SSHPassphrase: passphrase, KnownHosts: wrongHostKey}, wantErr: "key mismatch"},
		{name: "host missing from known_hosts", url: srv.SSHURL("config"),
			auth:    Auth{SSHPrivateKey: key, SSHPassphrase: passphrase, KnownHosts: []byte("example.com " + strings.SplitN(string(srv.KnownHosts), " ", 2)[1])},
			wantErr: "key is unknown"},
		{name: "missing branch", url: srv.HTTPURL("config"),
			auth: Auth{Username: srv.Username, Password: srv.Password}, wantErr: "couldn't find remote ref"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, err := Open(tt.url, tt.auth)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			branch := fixtureBranch
			if tt.name == "missing branch" {
				branch = "no-such-branch"
			}
			_, err = repo.Fetch(context.Background(), branch)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fetch error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestOpenRefusesSSHWithoutKnownHosts(t *testing.T) {
	key, passphrase := newSSHKey(t)
	for _, url := range []string{"ssh://git@example.com/acme/config.git", "git@example.com:acme/config.git"} {
		_, err := Open(url, Auth{SSHPrivateKey: key, SSHPassphrase: passphrase})
		if err == nil || !strings.Contains(err.Error(), "known_hosts") {
			t.Errorf("Open(%s) error = %v, want one asking for known_hosts", url, err)
		}
	}
	if _, err := Open(t.TempDir(), Auth{}); err == nil || !strings.Contains(err.Error(), ErrNotGitRepository.Error()) {
		t.Errorf("Open(plain directory) error = %v, want %v", err, ErrNotGitRepository)
	}
}

// TestFetchIncremental checks the second fetch transfers only the objects
// of the new commit: a re-clone would write every object again.
func TestFetchIncremental(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	store := &countingStorer{Storer: memory.NewStorage()}
	repo, err := OpenStorer(srv.HTTPURL("config"), Auth{Username: srv.Username, Password: srv.Password}, store)
	if err != nil {
		t.Fatal(err)
	}
	first, err := repo.Fetch(context.Background(), fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	wantFirst := countObjects(t, srv.BarePath("config"), first.String())
	if store.written != wantFirst {
		t.Fatalf("first fetch wrote %d objects, want all %d of the commit", store.written, wantFirst)
	}

	second := pushCommit(t, srv, "config", "apps/overlays/dev/kustomization.yaml", "# touched\n")
	store.written = 0
	got, err := repo.Fetch(context.Background(), fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != second {
		t.Fatalf("second Fetch = %s, want %s", got, second)
	}
	// The new commit, its root tree, apps/, apps/overlays/, the dev overlay
	// directory and the edited file.
	newObjects := countObjects(t, srv.BarePath("config"), first.String()+".."+second)
	if newObjects != 6 || store.written != newObjects {
		t.Errorf("second fetch wrote %d objects, want only the %d new ones (6)", store.written, newObjects)
	}

	store.written = 0
	if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
		t.Fatal(err)
	}
	if store.written != 0 {
		t.Errorf("fetch of an unchanged branch wrote %d objects, want 0", store.written)
	}
}

// countingStorer counts the objects a fetch writes into the store.
type countingStorer struct {
	storage.Storer
	written int
}

func (s *countingStorer) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	s.written++
	return s.Storer.SetEncodedObject(o)
}

func countObjects(t *testing.T, bare, revs string) int {
	t.Helper()
	out := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-list", "--objects", revs))
	if out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

// pushCommit appends content to file on the server's branch, with the git
// binary, and returns the new commit.
func pushCommit(t *testing.T, srv *testutil.GitServer, name, file, content string) string {
	t.Helper()
	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "--branch", fixtureBranch, srv.BarePath(name), ".")
	f, err := os.OpenFile(filepath.Join(work, file), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, work, nil, "commit", "-qam", "touch "+file)
	testutil.Git(t, work, nil, "push", "-q", "origin", fixtureBranch)
	return strings.TrimSpace(testutil.Git(t, work, nil, "rev-parse", "HEAD"))
}

// newSSHKey returns a fresh ed25519 key in OpenSSH format, encrypted with
// the returned passphrase.
func newSSHKey(t *testing.T) ([]byte, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const passphrase = "correct horse"
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), passphrase
}

// TestFetchShowsProgress: with a progress writer the server's own progress
// messages reach it (what a person at a terminal sees on a long fetch);
// without one the server is asked for none.
func TestFetchShowsProgress(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	auth := Auth{Username: srv.Username, Password: srv.Password}

	repo, err := Open(srv.HTTPURL("config"), auth)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	repo.ShowProgress(&progress)
	if _, err := repo.Fetch(context.Background(), fixtureBranch); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "objects") {
		t.Errorf("no progress from the server; got %q", progress.String())
	}
}
