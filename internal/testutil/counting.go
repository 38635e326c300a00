package testutil

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Kinds of smart-HTTP git request a CountingProxy tells apart.
const (
	// ListForFetch is GET info/refs?service=git-upload-pack: the ref
	// advertisement a fetch (or an ls-remote) starts with.
	ListForFetch = "info/refs upload-pack"
	// ListForPush is GET info/refs?service=git-receive-pack.
	ListForPush = "info/refs receive-pack"
	// Fetch is POST git-upload-pack: the negotiation and the pack.
	Fetch = "git-upload-pack"
	// Push is POST git-receive-pack: the ref updates and their pack.
	Push = "git-receive-pack"
)

// RequestCounts is how many requests of each kind a CountingProxy passed.
// Kinds it does not know are counted under their method and path.
type RequestCounts map[string]int

// Total is the number of requests of every kind.
func (c RequestCounts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String lists the counts in a fixed order, for test messages.
func (c RequestCounts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests:", c.Total())
	for _, k := range []string{ListForFetch, Fetch, ListForPush, Push} {
		fmt.Fprintf(&b, " %s=%d", k, c[k])
	}
	for k, v := range c {
		switch k {
		case ListForFetch, Fetch, ListForPush, Push:
		default:
			fmt.Fprintf(&b, " %s=%d", k, v)
		}
	}
	return b.String()
}

// CountingProxy stands in front of a GitServer's HTTP side and counts the
// requests that pass, by kind: the round trips a client makes, which is
// what a promotion costs on a real network.
type CountingProxy struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy

	mu     sync.Mutex
	counts RequestCounts
	spent  time.Duration
	pushed int64 // bytes of the push requests' bodies
	// before runs once when the server has answered the next request of
	// its kind, before the client gets the answer.
	before map[string]func()
	// advertise is added to the capabilities a push's advertisement lists.
	advertise string
}

// StartCountingProxy proxies g; it is stopped when the test ends.
func StartCountingProxy(t testing.TB, g *GitServer) *CountingProxy {
	t.Helper()
	backend, err := url.Parse(g.srv.HTTPAddress())
	if err != nil {
		t.Fatal(err)
	}
	p := &CountingProxy{proxy: httputil.NewSingleHostReverseProxy(backend), counts: RequestCounts{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the URL of repository name through the proxy.
func (p *CountingProxy) URL(name string) string { return p.srv.URL + "/" + name }

// Reset returns the counts so far and starts counting from zero.
func (p *CountingProxy) Reset() RequestCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts, p.spent, p.pushed = RequestCounts{}, 0, 0
	return c
}

// Pushed is how many bytes the push requests since the last Reset sent:
// their commands and packs, what a push costs on the wire.
func (p *CountingProxy) Pushed() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pushed
}

// Spent is the time the requests since the last Reset took to answer,
// summed: the part of a client's wall time that is the server's and the
// network's.
func (p *CountingProxy) Spent() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spent
}

// Counts are the counts so far.
func (p *CountingProxy) Counts() RequestCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := make(RequestCounts, len(p.counts))
	for k, v := range p.counts {
		c[k] = v
	}
	return c
}

// BeforeAnswering runs fn once, when the server has answered the next
// request of kind but before the client gets the answer: a change that
// lands between two requests of one client, at a moment a test chooses.
func (p *CountingProxy) BeforeAnswering(kind string, fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.before == nil {
		p.before = map[string]func(){}
	}
	p.before[kind] = fn
}

// Advertise adds capability to what the server's advertisement for a
// push offers (as a server that cannot fix thin packs adds no-thin).
func (p *CountingProxy) Advertise(capability string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advertise = capability
}

func (p *CountingProxy) serve(w http.ResponseWriter, r *http.Request) {
	kind := requestKind(r)
	p.mu.Lock()
	p.counts[kind]++
	before := p.before[kind]
	delete(p.before, kind)
	advertise := p.advertise
	p.mu.Unlock()
	if kind == Push {
		r.Body = &countedBody{ReadCloser: r.Body, p: p}
	}
	if kind != ListForPush {
		advertise = ""
	}
	start := time.Now()
	if before == nil && advertise == "" {
		p.proxy.ServeHTTP(w, r)
	} else {
		answer := httptest.NewRecorder()
		p.proxy.ServeHTTP(answer, r)
		if before != nil {
			before()
		}
		body := answer.Body.Bytes()
		if advertise != "" {
			body = withCapability(body, advertise)
		}
		for k, v := range answer.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(answer.Code)
		_, _ = w.Write(body)
	}
	p.mu.Lock()
	p.spent += time.Since(start)
	p.mu.Unlock()
}

// withCapability adds capability to the capabilities of an advertisement
// (pkt-lines; the first ref's line lists them after a NUL).
func withCapability(adv []byte, capability string) []byte {
	var out []byte
	for len(adv) >= 4 {
		n, err := strconv.ParseUint(string(adv[:4]), 16, 16)
		if err != nil || int(n) > len(adv) {
			break
		}
		if n < 4 { // a flush or delimiter packet
			out, adv = append(out, adv[:4]...), adv[4:]
			continue
		}
		line := adv[4:n]
		adv = adv[n:]
		if bytes.IndexByte(line, 0) >= 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = append(append(slices.Clone(line), " "+capability...), '\n')
		}
		out = append(out, fmt.Sprintf("%04x", len(line)+4)...)
		out = append(out, line...)
	}
	return append(out, adv...)
}

// countedBody adds what is read of a request's body to its proxy's count.
type countedBody struct {
	io.ReadCloser
	p *CountingProxy
}

func (b *countedBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	b.p.mu.Lock()
	b.p.pushed += int64(n)
	b.p.mu.Unlock()
	return n, err
}

func requestKind(r *http.Request) string {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
		switch r.URL.Query().Get("service") {
		case "git-upload-pack":
			return ListForFetch
		case "git-receive-pack":
			return ListForPush
		}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		return Fetch
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
		return Push
	}
	return r.Method + " " + r.URL.Path
}
