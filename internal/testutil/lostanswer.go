package testutil

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// LostAnswerProxy stands in front of a GitServer's HTTP side and loses the
// answer to one push: the push reaches the real git server and is applied,
// then the client's connection is closed without a response, and the server
// stays unreachable (every request's connection is closed) until Restore.
// That is a server that crashed, or a network that failed, right after
// receiving a push.
type LostAnswerProxy struct {
	srv     *httptest.Server
	backend *url.URL
	proxy   *httputil.ReverseProxy

	mu      sync.Mutex
	armed   string // a ref name: the next push updating it loses its answer
	down    bool
	dropped int
}

// StartLostAnswerProxy proxies g; it is stopped when the test ends.
func StartLostAnswerProxy(t testing.TB, g *GitServer) *LostAnswerProxy {
	t.Helper()
	backend, err := url.Parse(g.srv.HTTPAddress())
	if err != nil {
		t.Fatal(err)
	}
	p := &LostAnswerProxy{backend: backend, proxy: httputil.NewSingleHostReverseProxy(backend)}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the URL of repository name through the proxy.
func (p *LostAnswerProxy) URL(name string) string { return p.srv.URL + "/" + name }

// LoseNextPush arms the proxy: the next push that updates ref
// (refs/heads/main) is applied and its answer lost, and the server is down
// from then on.
func (p *LostAnswerProxy) LoseNextPush(ref string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = ref
}

// Restore brings the server back.
func (p *LostAnswerProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// Dropped is how many requests lost their answer.
func (p *LostAnswerProxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *LostAnswerProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	down, armed := p.down, p.armed
	p.mu.Unlock()
	if down {
		p.hangUp(w)
		return
	}
	if armed == "" || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		p.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The commands come first in the request, in pkt-lines naming the ref.
	if !bytes.Contains(body[:min(len(body), 4096)], []byte(" "+armed)) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.proxy.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	p.armed, p.down = "", true
	p.mu.Unlock()
	// Let the real server receive and apply the push, read its whole answer
	// (so the ref update is done), and then never deliver it.
	// Detached from the client's request: however the client fares, the
	// push is applied, which is what this proxy promises its tests.
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.backend.Scheme, p.backend.Host
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	if res, err := http.DefaultTransport.RoundTrip(out); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
	p.hangUp(w)
}

// hangUp closes the client's connection without an answer.
func (p *LostAnswerProxy) hangUp(w http.ResponseWriter) {
	p.mu.Lock()
	p.dropped++
	p.mu.Unlock()
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("the test HTTP server cannot hand over its connections")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}
