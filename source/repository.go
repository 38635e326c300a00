// Package source reads the declarative repositories vectorflow works from:
// it fetches one branch of a Git repository into memory (or reads a plain
// directory as it is on disk), decodes the promotion configs in it, resolves
// their references and indexes every stage overlay with its current vector.
// Its files do I/O: git fetches, registry requests, directory reads.
package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh"
)

// Auth holds the credentials for one repository. Only the ones matching the
// URL's transport are used: Username/Password or Token over HTTP(S),
// SSHPrivateKey (+ SSHPassphrase) and KnownHosts over SSH.
type Auth struct {
	// Username and Password are HTTP basic-auth credentials.
	Username, Password string
	// Token is an access token sent over HTTP basic auth as the password
	// (with Username, or "git" when it is empty). Basic rather than bearer
	// because that is what GitHub, GitLab, Gitea and Bitbucket Cloud all
	// accept for git over HTTP, and what git's own credential helpers send.
	Token string
	// BearerToken is sent as "Authorization: Bearer" for the forges that
	// want it (Azure DevOps, Bitbucket Data Center access tokens).
	BearerToken string
	// SSHPrivateKey is a PEM or OpenSSH private key; SSHPassphrase unlocks it.
	SSHPrivateKey []byte
	SSHPassphrase string
	// KnownHosts is the content of a known_hosts file. An SSH host not in it
	// is refused; there is no "accept any host key" mode.
	KnownHosts []byte
}

// Repository is one remote branch source: a URL and an object store (in
// memory, or on disk with OpenCached) that is kept across fetches, so that
// each fetch after the first transfers only the objects the store does not
// have yet.
type Repository struct {
	url  string
	auth transport.AuthMethod

	mu       sync.Mutex
	repo     *git.Repository
	progress io.Writer
	// store is the on-disk store of OpenCached; nil in memory.
	store *diskStore
	also  []string
	// fetched are the remote-tracking refs of the branches Fetch brought
	// (asked for or along) and checked whole.
	fetched []plumbing.ReferenceName
}

// FetchAlso makes every later Fetch bring branches too, in the same
// request (as refs/remotes/origin/<branch>): one round trip for a pass
// that reads the config branch and the state branch.
func (r *Repository) FetchAlso(branches ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range branches {
		if !slices.Contains(r.also, b) {
			r.also = append(r.also, b)
		}
	}
}

// ShowProgress sends the server's progress messages of later fetches
// ("Counting objects: 42% ...") to w, for a person watching a terminal;
// nil asks the server for none.
func (r *Repository) ShowProgress(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = w
}

// ErrNotGitRepository is returned by Open for a local directory that is not a
// Git repository; read such a directory with repofs.DirTree instead.
var ErrNotGitRepository = errors.New("not a git repository")

// Open prepares url for fetching: file://, http(s)://, ssh://, scp-like
// user@host:path, or a local path to a Git repository (a working copy or a
// bare one). It does not touch the network; Fetch does.
func Open(url string, auth Auth) (*Repository, error) {
	return OpenStorer(url, auth, memory.NewStorage())
}

// OpenStorer is Open over a given object store: a filesystem one for
// repositories too large for memory, or one shared with a writer.
func OpenStorer(url string, auth Auth, store storage.Storer) (*Repository, error) {
	remote, method, err := endpoint(url, auth)
	if err != nil {
		return nil, err
	}
	repo, err := git.Init(&lockedStorer{Storer: store}, nil)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: init the object store: %w", RedactURL(url), err)
	}
	if err := addRemote(repo, url, remote); err != nil {
		return nil, err
	}
	return &Repository{url: url, auth: method, repo: repo}, nil
}

// endpoint checks url and derives what go-git fetches from: the remote (an
// absolute path for a local repository) and the credential for its
// transport.
func endpoint(url string, auth Auth) (string, transport.AuthMethod, error) {
	if url == "" {
		return "", nil, errors.New("open repository: the URL is empty")
	}
	shown := RedactURL(url) // errors name the repository, never its credentials
	remote := url
	if IsLocalPath(url) {
		if !isGitRepository(url) {
			return "", nil, fmt.Errorf("open repository %s: %w", shown, ErrNotGitRepository)
		}
		// The file transport runs relative to the process, not the caller.
		abs, err := filepath.Abs(url)
		if err != nil {
			return "", nil, fmt.Errorf("open repository %s: %w", shown, RedactError(err))
		}
		remote = abs
	}
	ep, err := transport.NewEndpoint(remote)
	if err != nil {
		return "", nil, fmt.Errorf("open repository %s: %w", shown, RedactError(err))
	}
	method, err := authMethod(ep, auth)
	if err != nil {
		return "", nil, fmt.Errorf("open repository %s: %w", shown, RedactError(err))
	}
	return remote, method, nil
}

func addRemote(repo *git.Repository, url, remote string) error {
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{remote}}); err != nil {
		return fmt.Errorf("open repository %s: %w", RedactURL(url), RedactError(err))
	}
	return nil
}

// URL is the URL the repository was opened with.
func (r *Repository) URL() string { return r.url }

// Fetch brings branch up to date and returns its commit. Objects already in
// the store are announced as "haves", so only new ones are transferred.
func (r *Repository) Fetch(ctx context.Context, branch string) (plumbing.Hash, error) {
	if branch == "" {
		return plumbing.ZeroHash, fmt.Errorf("fetch %s: the branch is empty", RedactURL(r.url))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	local := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)
	specs := []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", plumbing.NewBranchReferenceName(branch), local))}
	for _, b := range r.also {
		if b != branch {
			specs = append(specs, config.RefSpec(fmt.Sprintf("+%s:%s", plumbing.NewBranchReferenceName(b), plumbing.NewRemoteReferenceName(git.DefaultRemoteName, b))))
		}
	}
	// Every branch the fetch brings is checked whole, not only the one
	// asked for: the server sends nothing for a tip the store announces,
	// so a branch along with missing objects would stay unreadable.
	fetch := func(specs []config.RefSpec) error {
		return r.fetch(ctx, &git.FetchOptions{RemoteName: git.DefaultRemoteName, RefSpecs: specs, Auth: r.auth, Tags: git.NoTags, Force: true, Progress: r.progress},
			func() error {
				for _, spec := range specs {
					if err := r.readable(plumbing.ReferenceName(spec.Dst(""))); err != nil {
						return err
					}
				}
				return nil
			})
	}
	err := fetch(specs)
	for i := 1; errors.Is(err, git.NoMatchingRefSpecError{}) && i < len(specs); i++ {
		// A branch fetched along is not there (yet, or any more): forget
		// it, so its reader sees it absent, and fetch the others.
		if err.Error() == fmt.Sprintf("couldn't find remote ref %q", specs[i].Src()) {
			_ = r.repo.Storer.RemoveReference(plumbing.ReferenceName(specs[i].Dst("")))
			specs = append(specs[:i:i], specs[i+1:]...)
			err, i = fetch(specs), 0
		}
	}
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, fmt.Errorf("fetch branch %s of %s: %w", branch, RedactURL(r.url), RedactError(explainFetchError(err, r.auth != nil)))
	}
	ref, err := r.repo.Reference(local, true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("fetch branch %s of %s: the branch does not exist: %w", branch, RedactURL(r.url), err)
	}
	for _, spec := range specs {
		if dst := plumbing.ReferenceName(spec.Dst("")); !slices.Contains(r.fetched, dst) {
			r.fetched = append(r.fetched, dst)
		}
	}
	return ref.Hash(), nil
}

// Heads lists the branches the server has, each at its commit, as it
// advertises them: one request, no objects.
func (r *Repository) Heads(ctx context.Context) (map[string]plumbing.Hash, error) {
	remote, err := r.repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return nil, err
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: r.auth})
	if err != nil {
		return nil, fmt.Errorf("list the branches of %s: %w", RedactURL(r.url), RedactError(explainFetchError(err, r.auth != nil)))
	}
	heads := make(map[string]plumbing.Hash, len(refs))
	for _, ref := range refs {
		if ref.Name().IsBranch() && ref.Type() == plumbing.HashReference {
			heads[ref.Name().Short()] = ref.Hash()
		}
	}
	return heads, nil
}

// Compact packs the loose objects writes left in the on-disk store once
// there are many, as every fetch does, or once this process wrote many,
// which fetches leave loose: a run that wrote its commits without fetching
// (a held run) packs them itself as it ends, rather than leaving the next
// process to walk them or its first fetch to pack them.
// Having packed, it checks again the tips of the branches it fetched,
// which the writer moved, so the next process finds their trees held
// whole by packs and walks none of them. A store in memory has nothing to
// pack.
func (r *Repository) Compact(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.store.compactNow(ctx, func() {
		for _, ref := range r.fetched {
			// A tip that does not read whole is the next fetch's to find.
			_ = r.readable(ref)
		}
	})
}

// FetchAll brings every branch (as refs/remotes/origin/*) and tag up to
// date, so that any revision on them resolves.
func (r *Repository) FetchAll(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.fetch(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs: []config.RefSpec{
			config.RefSpec(fmt.Sprintf("+refs/heads/*:refs/remotes/%s/*", git.DefaultRemoteName)),
			"+refs/tags/*:refs/tags/*",
		},
		Auth:     r.auth,
		Tags:     git.NoTags,
		Force:    true,
		Progress: r.progress,
	}, func() error { return nil })
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetch the branches and tags of %s: %w", r.url, explainFetchError(err, r.auth != nil))
	}
	return nil
}

// fetch runs one fetch, under the on-disk store's lock when there is one;
// verify says whether what the fetch left reads.
func (r *Repository) fetch(ctx context.Context, opts *git.FetchOptions, verify func() error) error {
	if r.store == nil {
		return r.repo.FetchContext(ctx, opts)
	}
	return r.store.fetch(ctx, func() error { return r.repo.FetchContext(ctx, opts) }, verify)
}

// readable checks that the store holds the whole tree of the fetched tip
// of ref: a store missing objects announces commits it cannot read, and
// the server then sends none of them. A ref that is not there is no fault
// of the store: Fetch reports it.
func (r *Repository) readable(ref plumbing.ReferenceName) error {
	tip, err := r.repo.Reference(ref, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.store.holdsWhole(r.repo, tip.Hash())
}

// Repo is the go-git repository over the object store (in memory or on
// disk), for readers and writers that want the fetched objects (the writer
// builds on them).
func (r *Repository) Repo() *git.Repository { return r.repo }

// Storer is the object store, reused across fetches. Reading
// objects from it while a Fetch writes is safe.
func (r *Repository) Storer() storage.Storer { return r.repo.Storer }

// AuthMethod is the go-git transport credential derived from Auth, so a
// writer pushing to the same URL authenticates the same way.
func (r *Repository) AuthMethod() transport.AuthMethod { return r.auth }

// IsLocalPath reports whether url names a local path rather than a URL
// (file:// URLs are URLs: they are always read as Git repositories).
func IsLocalPath(url string) bool {
	if strings.Contains(url, "://") {
		return false
	}
	// scp-like user@host:path has a colon before the first slash.
	if i := strings.Index(url, ":"); i > 0 {
		if j := strings.Index(url, "/"); j < 0 || i < j {
			return false
		}
	}
	return true
}

// IsGitRepository reports whether dir is the root of a Git repository (a
// working copy or a bare one).
func IsGitRepository(dir string) bool { return isGitRepository(dir) }

func isGitRepository(dir string) bool {
	_, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: false})
	return err == nil
}

// authMethod picks the credential for the endpoint's transport. Credentials
// for the other transport are ignored, so one environment can serve a mix of
// HTTP and SSH landscape repositories.
func authMethod(ep *transport.Endpoint, a Auth) (transport.AuthMethod, error) {
	switch ep.Protocol {
	case "http", "https":
		switch {
		case a.BearerToken != "":
			return &githttp.TokenAuth{Token: a.BearerToken}, nil
		case a.Token != "":
			user := a.Username
			if user == "" {
				user = "git"
			}
			return &githttp.BasicAuth{Username: user, Password: a.Token}, nil
		case a.Username != "" || a.Password != "":
			return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
		}
		return nil, nil
	case "ssh":
		return sshAuth(ep, a)
	}
	return nil, nil
}

func sshAuth(ep *transport.Endpoint, a Auth) (transport.AuthMethod, error) {
	if len(a.KnownHosts) == 0 {
		return nil, errors.New("no known_hosts for SSH: set VECTORFLOW_KNOWN_HOSTS or --known-hosts to a file holding the server's host key")
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	hostPort := ep.Host
	if ep.Port != 0 {
		hostPort = fmt.Sprintf("%s:%d", ep.Host, ep.Port)
	} else {
		hostPort += ":22"
	}
	callback, algorithms, err := knownHostsCallback(a.KnownHosts, hostPort)
	if err != nil {
		return nil, err
	}
	if len(a.SSHPrivateKey) == 0 {
		return nil, errors.New("no SSH private key: set VECTORFLOW_SSH_KEY or --ssh-key")
	}
	keys, err := gitssh.NewPublicKeys(user, a.SSHPrivateKey, a.SSHPassphrase)
	if err != nil {
		return nil, fmt.Errorf("read SSH private key (is the passphrase right?): %w", err)
	}
	keys.HostKeyCallbackHelper = gitssh.HostKeyCallbackHelper{HostKeyCallback: callback, HostKeyAlgorithms: algorithms}
	return keys, nil
}

// knownHostsCallback parses known_hosts content. The parser only reads
// files, so the bytes go through a private temporary file removed at once.
// The host key algorithms are narrowed to the ones known for hostPort, or
// the server may offer a key type we hold no line for and be refused.
func knownHostsCallback(content []byte, hostPort string) (ssh.HostKeyCallback, []string, error) {
	f, err := os.CreateTemp("", "vectorflow-known-hosts-*")
	if err != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", werr)
	}
	db, err := gitssh.NewKnownHostsDb(f.Name())
	if err != nil {
		return nil, nil, fmt.Errorf("parse known_hosts: %w", err)
	}
	return db.HostKeyCallback(), db.HostKeyAlgorithms(hostPort), nil
}

// explainFetchError adds what to do to the transport errors users hit.
func explainFetchError(err error, hasAuth bool) error {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired) && hasAuth:
		return fmt.Errorf("%w: the server refused the credentials (check the username and password or token)", err)
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return fmt.Errorf("%w (set VECTORFLOW_GIT_USERNAME and VECTORFLOW_GIT_PASSWORD, or VECTORFLOW_GIT_TOKEN)", err)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%w (check the credentials)", err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("%w (check the URL)", err)
	case strings.Contains(err.Error(), "knownhosts:"):
		return fmt.Errorf("%w (add the server's host key to the known_hosts file)", err)
	}
	return err
}

// lockedStorer lets snapshots read objects while the next fetch writes new
// ones: go-git's memory store is a plain map, and its filesystem store
// keeps maps of open packs and pack indexes that even reads change
// (exclusive: reads take the lock alone). Only the object methods are
// guarded: references are written by Fetch alone, under Repository.mu.
type lockedStorer struct {
	storage.Storer
	mu        sync.RWMutex
	exclusive bool
}

func (s *lockedStorer) readLock() (unlock func()) {
	if s.exclusive {
		s.mu.Lock()
		return s.mu.Unlock
	}
	s.mu.RLock()
	return s.mu.RUnlock
}

// NoteVersions passes on to a store that packs its objects itself which
// object replaced which (VersionNoter); other stores have no use for it.
func (s *lockedStorer) NoteVersions(replaced map[plumbing.Hash]plumbing.Hash) {
	if n, ok := s.Storer.(VersionNoter); ok {
		n.NoteVersions(replaced)
	}
}

func (s *lockedStorer) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Storer.SetEncodedObject(o)
}

func (s *lockedStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	defer s.readLock()()
	return s.Storer.EncodedObject(t, h)
}

func (s *lockedStorer) HasEncodedObject(h plumbing.Hash) error {
	defer s.readLock()()
	return s.Storer.HasEncodedObject(h)
}

func (s *lockedStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	defer s.readLock()()
	return s.Storer.EncodedObjectSize(h)
}

func (s *lockedStorer) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	defer s.readLock()()
	return s.Storer.IterEncodedObjects(t)
}
