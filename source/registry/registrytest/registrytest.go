// Package registrytest runs go-containerregistry's in-process registry on
// loopback for tests: the real OCI distribution protocol, with request
// counting and a way to hold tag list requests.
package registrytest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-process OCI registry serving on 127.0.0.1.
type Registry struct {
	server *httptest.Server
	auth   *authn.Basic

	mu       sync.Mutex
	requests []string
	hold     chan struct{}
	// tagListDelay is how long every tags/list request waits, a slow
	// registry.
	tagListDelay time.Duration
}

// Option configures Start.
type Option func(*Registry)

// WithBasicAuth makes the registry answer 401 with a Basic challenge to
// every request without these credentials, as a private registry does.
func WithBasicAuth(username, password string) Option {
	return func(r *Registry) { r.auth = &authn.Basic{Username: username, Password: password} }
}

// WithTagListDelay makes every tags/list request take d longer, as a slow
// or distant registry does.
func WithTagListDelay(d time.Duration) Option {
	return func(r *Registry) { r.tagListDelay = d }
}

// Start serves a new, empty registry until the test ends.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	r := &Registry{}
	for _, o := range opts {
		o(r)
	}
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		hold := r.hold
		r.mu.Unlock()
		if r.auth != nil {
			if user, pass, ok := req.BasicAuth(); !ok || user != r.auth.Username || pass != r.auth.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if r.tagListDelay > 0 && isTagList(req.URL.Path) {
			select {
			case <-time.After(r.tagListDelay):
			case <-req.Context().Done():
				return
			}
		}
		if hold != nil && isTagList(req.URL.Path) {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		handler.ServeHTTP(w, req)
	}))
	t.Cleanup(r.server.Close)
	return r
}

// Host is host:port, the registry part of image references
// ("127.0.0.1:40123/acme/service-a"). go-containerregistry talks plain HTTP
// to loopback hosts by itself.
func (r *Registry) Host() string {
	return strings.TrimPrefix(r.server.URL, "http://")
}

// URL is the registry's base URL, http://host:port.
func (r *Registry) URL() string { return r.server.URL }

// Close stops the registry early, to test an unreachable one.
func (r *Registry) Close() { r.server.Close() }

// PushTags pushes a small random image under each tag of host/repo and
// returns each tag's manifest digest. Every tag gets a distinct image.
func (r *Registry) PushTags(t testing.TB, repo string, tags ...string) map[string]string {
	t.Helper()
	digests := make(map[string]string, len(tags))
	for _, tag := range tags {
		ref, err := name.NewTag(r.Host() + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatalf("registrytest: tag %q of %s: %v", tag, repo, err)
		}
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatalf("registrytest: random image: %v", err)
		}
		if err := remote.Write(ref, img, r.RemoteOptions()...); err != nil {
			t.Fatalf("registrytest: push %s: %v", ref, err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatalf("registrytest: digest of %s: %v", ref, err)
		}
		digests[tag] = d.String()
	}
	return digests
}

// RemoteOptions authenticate go-containerregistry calls to this registry.
func (r *Registry) RemoteOptions() []remote.Option {
	if r.auth == nil {
		return nil
	}
	return []remote.Option{remote.WithAuth(r.auth)}
}

// Keychain hands this registry's credentials to whoever asks for its host,
// and anonymous access to any other.
func (r *Registry) Keychain() authn.Keychain { return keychain{r} }

type keychain struct{ r *Registry }

func (k keychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	if k.r.auth == nil || res.RegistryStr() != k.r.Host() {
		return authn.Anonymous, nil
	}
	return k.r.auth, nil
}

// Requests are the requests served so far, as "METHOD /path".
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// TagListRequests counts the tags/list requests for repo so far.
func (r *Registry) TagListRequests(repo string) int {
	want := "/v2/" + repo + "/tags/list"
	n := 0
	for _, req := range r.Requests() {
		if strings.HasSuffix(req, " "+want) {
			n++
		}
	}
	return n
}

// HoldTagLists makes tags/list requests wait (after being counted) until
// the returned release is called, so a test can pile up concurrent callers
// behind one request. release is safe to call more than once.
func (r *Registry) HoldTagLists() (release func()) {
	hold := make(chan struct{})
	r.mu.Lock()
	r.hold = hold
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.hold = nil
			r.mu.Unlock()
			close(hold)
		})
	}
}

func isTagList(path string) bool {
	return strings.HasPrefix(path, "/v2/") && strings.HasSuffix(path, "/tags/list")
}
