package registry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/vectorflow-dev/vectorflow/source/registry"
	"github.com/vectorflow-dev/vectorflow/source/registry/registrytest"
)

// anonymous keeps the tests off the machine's docker config.
var anonymous = authn.NewMultiKeychain()

func TestResolve(t *testing.T) {
	reg := registrytest.Start(t)
	svc := reg.Host() + "/acme/service-a"
	d := reg.PushTags(t, "acme/service-a", "1.2.0", "1.4.2", "1.4.10", "1.5.0-rc.1", "2.0.0", "latest")
	builds := reg.Host() + "/acme/builds"
	b := reg.PushTags(t, "acme/builds", "build-9", "build-10", "build-100", "main-20260105", "main-20260301")
	r := registry.NewResolver(registry.Options{Keychain: anonymous})

	tests := []struct {
		name  string
		image string
		spec  registry.ComponentVersion
		want  registry.Resolved
	}{
		{name: "exact tag", image: svc, spec: registry.ComponentVersion{Version: "1.4.2"},
			want: registry.Resolved{Image: svc, Tag: "1.4.2", Digest: d["1.4.2"]}},
		{name: "exact non-semver tag", image: svc, spec: registry.ComponentVersion{Version: "latest"},
			want: registry.Resolved{Image: svc, Tag: "latest", Digest: d["latest"]}},
		{name: "digest is verified and passed through", image: svc, spec: registry.ComponentVersion{Version: d["2.0.0"]},
			want: registry.Resolved{Image: svc, Digest: d["2.0.0"]}},
		{name: "x range", image: svc, spec: registry.ComponentVersion{Version: "1.4.x"},
			want: registry.Resolved{Image: svc, Tag: "1.4.10", Digest: d["1.4.10"], SkippedTags: 1}},
		{name: "bounded range", image: svc, spec: registry.ComponentVersion{Version: ">=1.2.0 <2.0.0"},
			want: registry.Resolved{Image: svc, Tag: "1.4.10", Digest: d["1.4.10"], SkippedTags: 1}},
		{name: "caret range", image: svc, spec: registry.ComponentVersion{Version: "^1.2"},
			want: registry.Resolved{Image: svc, Tag: "1.4.10", Digest: d["1.4.10"], SkippedTags: 1}},
		{name: "prerelease range", image: svc, spec: registry.ComponentVersion{Version: ">=1.5.0-0 <2.0.0"},
			want: registry.Resolved{Image: svc, Tag: "1.5.0-rc.1", Digest: d["1.5.0-rc.1"], SkippedTags: 1}},
		{name: "numerical with extract", image: builds,
			spec: registry.ComponentVersion{Policy: registry.PolicyNumerical, TagFilter: `^build-(?P<n>\d+)$`, Extract: "$n"},
			want: registry.Resolved{Image: builds, Tag: "build-100", Digest: b["build-100"]}},
		{name: "alphabetical with filter", image: builds,
			spec: registry.ComponentVersion{Policy: registry.PolicyAlphabetical, TagFilter: `^main-\d+$`},
			want: registry.Resolved{Image: builds, Tag: "main-20260301", Digest: b["main-20260301"]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tt.image, tt.spec)
			if err != nil {
				t.Fatalf("Resolve() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	reg := registrytest.Start(t)
	svc := reg.Host() + "/acme/service-a"
	reg.PushTags(t, "acme/service-a", "1.2.0", "1.4.2", "latest")
	r := registry.NewResolver(registry.Options{Keychain: anonymous})
	missing := "sha256:" + strings.Repeat("0", 64)

	tests := []struct {
		name         string
		image        string
		spec         registry.ComponentVersion
		wantNotFound bool
		wantOp       string
		wantNoMatch  bool
		wantMsg      []string
	}{
		{name: "missing tag", image: svc, spec: registry.ComponentVersion{Version: "9.9.9"},
			wantNotFound: true, wantOp: "resolve tag 9.9.9", wantMsg: []string{svc, "9.9.9", "check the image name and version"}},
		{name: "missing digest", image: svc, spec: registry.ComponentVersion{Version: missing},
			wantNotFound: true, wantOp: "verify digest " + missing, wantMsg: []string{svc, missing}},
		{name: "missing repository", image: reg.Host() + "/acme/nope", spec: registry.ComponentVersion{Version: "1.x"},
			wantNotFound: true, wantOp: "list tags", wantMsg: []string{"acme/nope"}},
		{name: "no tag in range", image: svc, spec: registry.ComponentVersion{Version: ">=3.0.0 <4"},
			wantNoMatch: true, wantMsg: []string{"no tag of " + svc + ` matches version ">=3.0.0 <4"`, "3 tags", "1 not semver: latest"}},
		{name: "malformed digest", image: svc, spec: registry.ComponentVersion{Version: "sha256:abc"},
			wantMsg: []string{svc, `"sha256:abc" is not a valid digest`}},
		{name: "image with a tag", image: svc + ":1.2.0", spec: registry.ComponentVersion{Version: "1.2.0"},
			wantMsg: []string{"is not a repository reference"}},
		{name: "empty version", image: svc, spec: registry.ComponentVersion{},
			wantMsg: []string{svc, "version is empty"}},
		{name: "bad tag filter is refused before any request", image: reg.Host() + "/acme/unlisted",
			spec:    registry.ComponentVersion{Policy: registry.PolicyAlphabetical, TagFilter: "^(main"},
			wantMsg: []string{"acme/unlisted", `tag filter "^(main" is not a valid regular expression`}},
		{name: "bad range is refused before any request", image: reg.Host() + "/acme/unlisted",
			spec:    registry.ComponentVersion{Version: ">=1 <<2"},
			wantMsg: []string{"acme/unlisted", `version ">=1 <<2" is not a semver range`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Resolve(context.Background(), tt.image, tt.spec)
			if err == nil {
				t.Fatal("Resolve() error = nil, want one")
			}
			if got := errors.Is(err, registry.ErrNotFound); got != tt.wantNotFound {
				t.Errorf("errors.Is(%v, ErrNotFound) = %v, want %v", err, got, tt.wantNotFound)
			}
			var re *registry.RegistryError
			if got := errors.As(err, &re); got != (tt.wantOp != "") {
				t.Errorf("errors.As(%v, *RegistryError) = %v, want %v", err, got, tt.wantOp != "")
			} else if got && (re.Op != tt.wantOp || re.Image != tt.image) {
				t.Errorf("RegistryError{Image: %q, Op: %q}, want {%q, %q}", re.Image, re.Op, tt.image, tt.wantOp)
			}
			var nm *registry.NoMatchError
			if got := errors.As(err, &nm); got != tt.wantNoMatch {
				t.Errorf("errors.As(%v, *NoMatchError) = %v, want %v", err, got, tt.wantNoMatch)
			}
			for _, want := range tt.wantMsg {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
	if n := reg.TagListRequests("acme/unlisted"); n != 0 {
		t.Errorf("invalid specs sent %d tags/list requests, want 0", n)
	}
}

func TestResolveUnreachableRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	image := reg.Host() + "/acme/service-a"
	reg.Close()
	r := registry.NewResolver(registry.Options{Keychain: anonymous})
	for _, version := range []string{"1.4.x", "1.4.2"} {
		_, err := r.Resolve(context.Background(), image, registry.ComponentVersion{Version: version})
		var re *registry.RegistryError
		if !errors.As(err, &re) {
			t.Fatalf("Resolve(%q) error = %v, want *RegistryError", version, err)
		}
		if re.Image != image || errors.Is(err, registry.ErrNotFound) {
			t.Errorf("Resolve(%q) = RegistryError{Image: %q, Op: %q, Err: %v}; want image %q and not ErrNotFound", version, re.Image, re.Op, re.Err, image)
		}
		if !strings.Contains(err.Error(), "check the registry is reachable") {
			t.Errorf("error %q does not say what to do", err)
		}
	}
}

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func TestResolveCachesTagListForTTL(t *testing.T) {
	reg := registrytest.Start(t)
	image := reg.Host() + "/acme/service-a"
	d := reg.PushTags(t, "acme/service-a", "1.4.1", "1.4.2")
	clk := &clock{now: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	r := registry.NewResolver(registry.Options{Keychain: anonymous, TagListTTL: time.Minute, Clock: clk.Now})
	spec := registry.ComponentVersion{Version: "1.4.x"}

	resolve := func(wantTag string, wantLists int) {
		t.Helper()
		got, err := r.Resolve(context.Background(), image, spec)
		if err != nil {
			t.Fatalf("Resolve() error = %v", err)
		}
		if got.Tag != wantTag || got.Digest != d[wantTag] {
			t.Errorf("Resolve() = %s@%s, want %s@%s", got.Tag, got.Digest, wantTag, d[wantTag])
		}
		if n := reg.TagListRequests("acme/service-a"); n != wantLists {
			t.Errorf("tags/list requests = %d, want %d", n, wantLists)
		}
	}
	resolve("1.4.2", 1)
	for tag, digest := range reg.PushTags(t, "acme/service-a", "1.4.3") {
		d[tag] = digest
	}
	clk.Add(59 * time.Second)
	resolve("1.4.2", 1) // within the TTL the new tag is not seen yet
	clk.Add(time.Second)
	resolve("1.4.3", 2)
	resolve("1.4.3", 2)
}

func TestResolveConcurrentCallersShareOneTagList(t *testing.T) {
	reg := registrytest.Start(t)
	image := reg.Host() + "/acme/service-a"
	d := reg.PushTags(t, "acme/service-a", "1.4.1", "1.4.2")
	// A negative TTL disables reuse, so only sharing the request in flight
	// can keep the count at one.
	r := registry.NewResolver(registry.Options{Keychain: anonymous, TagListTTL: -1})
	release := reg.HoldTagLists()
	defer release()

	const callers = 8
	var wg sync.WaitGroup
	results := make([]registry.Resolved, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			results[i], errs[i] = r.Resolve(context.Background(), image, registry.ComponentVersion{Version: "^1.4"})
		})
	}
	// Wait for the first request, then give the others time to (wrongly)
	// send their own before letting it through.
	deadline := time.Now().Add(5 * time.Second)
	for reg.TagListRequests("acme/service-a") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	release()
	wg.Wait()

	if n := reg.TagListRequests("acme/service-a"); n != 1 {
		t.Errorf("tags/list requests = %d, want 1 for %d concurrent callers", n, callers)
	}
	want := registry.Resolved{Image: image, Tag: "1.4.2", Digest: d["1.4.2"]}
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: Resolve() error = %v", i, errs[i])
		}
		if diff := cmp.Diff(want, results[i]); diff != "" {
			t.Errorf("caller %d: Resolve() mismatch (-want +got):\n%s", i, diff)
		}
	}
}

func TestResolveWaiterOutlivesCancelledFetcher(t *testing.T) {
	reg := registrytest.Start(t)
	image := reg.Host() + "/acme/service-a"
	reg.PushTags(t, "acme/service-a", "1.4.2")
	r := registry.NewResolver(registry.Options{Keychain: anonymous, TagListTTL: -1})
	release := reg.HoldTagLists()
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, image, registry.ComponentVersion{Version: "1.x"})
		first <- err
	}()
	for reg.TagListRequests("acme/service-a") == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	second := make(chan error, 1)
	go func() {
		_, err := r.Resolve(context.Background(), image, registry.ComponentVersion{Version: "1.x"})
		second <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: error = %v, want context.Canceled", err)
	}
	release()
	if err := <-second; err != nil {
		t.Errorf("live caller inherited the cancellation: %v", err)
	}
}

// countingTransport counts the requests it carries to a real transport.
type countingTransport struct {
	mu   sync.Mutex
	n    int
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

func TestResolvePrivateRegistry(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ci", "s3cret"))
	image := reg.Host() + "/acme/private"
	d := reg.PushTags(t, "acme/private", "1.0.0", "1.1.0")
	spec := registry.ComponentVersion{Version: "1.x"}

	_, err := registry.NewResolver(registry.Options{Keychain: anonymous}).Resolve(context.Background(), image, spec)
	var re *registry.RegistryError
	if !errors.As(err, &re) || errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("anonymous Resolve() error = %v, want a *RegistryError that is not ErrNotFound", err)
	}

	counter := &countingTransport{next: http.DefaultTransport}
	r := registry.NewResolver(registry.Options{Keychain: reg.Keychain(), Transport: counter})
	got, err := r.Resolve(context.Background(), image, spec)
	if err != nil {
		t.Fatalf("Resolve() with credentials: %v", err)
	}
	if diff := cmp.Diff(registry.Resolved{Image: image, Tag: "1.1.0", Digest: d["1.1.0"]}, got); diff != "" {
		t.Errorf("Resolve() mismatch (-want +got):\n%s", diff)
	}
	if counter.n == 0 {
		t.Error("Options.Transport carried no request")
	}
	target := "oci://" + image
	if _, err := r.PushVector(context.Background(), target, "v1", []byte(vectorYAML)); err != nil {
		t.Fatalf("PushVector() with credentials: %v", err)
	}
	if b, err := r.PullVector(context.Background(), target, "v1"); err != nil || string(b) != vectorYAML {
		t.Fatalf("PullVector() with credentials = %q, %v", b, err)
	}
}

func TestResolveLogsSkippedTags(t *testing.T) {
	reg := registrytest.Start(t)
	image := reg.Host() + "/acme/service-a"
	reg.PushTags(t, "acme/service-a", "1.0.0", "latest", "main")
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 1})
	ctx := logr.NewContext(context.Background(), logger)
	got, err := registry.NewResolver(registry.Options{Keychain: anonymous}).Resolve(ctx, image, registry.ComponentVersion{Version: "1.x"})
	if err != nil {
		t.Fatalf("Resolve() error = %v", err)
	}
	if got.SkippedTags != 2 {
		t.Errorf("SkippedTags = %d, want 2", got.SkippedTags)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], `"skipped"=2`) || !strings.Contains(logged[0], `"examples"=["latest" "main"]`) {
		t.Errorf("V(1) log = %q, want one line with the 2 skipped tags", logged)
	}
}
