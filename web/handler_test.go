package web

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"golang.org/x/crypto/bcrypt"
)

func newTestHandler(t testing.TB, repo Repository, auth *Auth, events *Broker) http.Handler {
	t.Helper()
	h, err := NewHandler(Options{Repositories: []Repository{repo}, Auth: auth, Events: events,
		Now: func() time.Time { return fixtureNow }, Log: testr.New(t.(*testing.T))})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestPages asks every page, and every kind of bad request, for its status
// and what it must and must not say.
func TestPages(t *testing.T) {
	h := newTestHandler(t, newFakeRepository(2, 3), nil, nil)
	cases := []struct {
		name, target string
		status       int
		want, absent []string
	}{
		{"every pipeline", "/", 200, []string{"c0-s0", "c0-s1", "c0-s2", "c1-s2", "acme:2026.12.1-100000000Z", "acme:2026.11.30-100000000Z",
			"for 1d 2h", `class="node h1 drifted" id="n-l1/c0-s1"`, `href="/r/acme/promotions/c0-s0-to-s1-2"`, "drift: PromotionOffered", "2 open promotions"}, nil},
		{"one pipeline", "/r/acme/", 200, []string{"c1-s1", `href="/r/acme/stages/l1/c1-s1"`}, nil},
		{"unknown repository", "/r/nope/", 404, []string{"no repository &#34;nope&#34;"}, nil},
		{"pipeline takes no query", "/r/acme/?x=1", 400, []string{"unknown query parameter &#34;x&#34;"}, nil},
		{"promotions", "/r/acme/promotions", 200, []string{"c0-s0-to-s1-2", "c0-s0-to-s1-1", "Waiting", "Succeeded"}, nil},
		{"promotions by state", "/r/acme/promotions?state=Waiting", 200, []string{"c0-s0-to-s1-2", "c1-s0-to-s1-2"}, []string{">c0-s0-to-s1-1<"}},
		{"promotions by config", "/r/acme/promotions?config=c1-s0-to-s1", 200, []string{"c1-s0-to-s1-2"}, []string{">c0-s0-to-s1-2<"}},
		{"promotions by stage", "/r/acme/promotions?stage=l1/c0-s1&state=Succeeded", 200, []string{">c0-s0-to-s1-1<"}, []string{">c0-s0-to-s1-2<"}},
		{"promotions by stage, none", "/r/acme/promotions?stage=l2/c0-s2", 200, []string{"No promotion matches."}, nil},
		{"unknown state", "/r/acme/promotions?state=Done", 400, []string{"state=&#34;Done&#34;: not a promotion state; use one of Waiting"}, nil},
		{"unknown config", "/r/acme/promotions?config=nope", 400, []string{"config=&#34;nope&#34;: https://git.example.com/acme.git has no VectorPromotionConfig"}, nil},
		{"unknown stage", "/r/acme/promotions?stage=c0-s1", 400, []string{"give `landscape/name`"}, nil},
		{"unknown parameter", "/r/acme/promotions?sort=name", 400, []string{"unknown query parameter &#34;sort&#34;: use config, stage, state"}, nil},
		{"parameter twice", "/r/acme/promotions?state=Waiting&state=Failed", 400, []string{"given 2 times"}, nil},
		{"bad escape", "/r/acme/promotions?state=%zz", 400, []string{"does not parse"}, nil},
		{"huge query", "/r/acme/promotions?state=" + strings.Repeat("A", MaxQuery), 414, []string{"too long"}, nil},
		{"huge path", "/r/acme/promotions/" + strings.Repeat("a", MaxPath), 414, []string{"too long"}, nil},
		{"waiting promotion", "/r/acme/promotions/c0-s0-to-s1-2", 200, []string{
			"vectorflow approve c0-s0-to-s1-2 --repo https://git.example.com/acme.git --vector acme:2026.12.1-100000000Z --signing-key YOUR_KEY",
			"WaitingForApproval", "waiting for an approval &lt;b&gt;by alice&lt;/b&gt;", "1 of alice",
			"<code>1.0.0</code>", "<code>1.0.1</code>", "sha256:0000000000000000000000000000000000000000000000000000000000000011",
			"~ changed <code>Deployment acme/api</code>", "1 changed", "No approval counted"},
			[]string{"<b>by alice</b>"}},
		{"finished promotion", "/r/acme/promotions/c0-s0-to-s1-1", 200, []string{"alice", "✓ verified", "<code>abcdef012345</code>", "PromotionSucceeded"},
			[]string{"YOUR_KEY", "What it changes"}},
		{"unknown promotion", "/r/acme/promotions/nope-1", 404, []string{"no promotion &#34;nope-1&#34; on vectorflow/state"}, nil},
		{"stage", "/r/acme/stages/l1/c0-s1", 200, []string{"c0-s0-to-s1", "111111111111", "✓ vectorflow", "✗ unsigned",
			"hand edit &lt;script&gt;", `href="/r/acme/promotions/c0-s0-to-s1-2"`, "→ c0-s1-to-s2 → l2/c0-s2",
			"Versions kept for rollback", `<tr><td class="vec">acme:2026.12.1-100000000Z</td><td>target</td><td><span class="cond good"`,
			`<tr><td class="vec">acme:2026.11.30-100000000Z</td><td></td>`}, []string{"hand edit <script>", "acme:1999.1.1"}},
		{"unknown stage page", "/r/acme/stages/l1/nope", 404, []string{"no Stage nope in Landscape l1"}, nil},
		{"stage in the wrong landscape", "/r/acme/stages/l0/c0-s1", 404, nil, nil},
		{"vectors", "/r/acme/vectors", 200, []string{"acme:2026.12.1-100000000Z", "latest", `href="/r/acme/stages/l0/c0-s0"`, "1.0.1",
			"registry.example.com/acme/api"}, nil},
		{"no such page", "/nope", 404, []string{"no page at /nope"}, nil},
		{"static css", "/static/view.css", 200, []string{".pipeline"}, nil},
		{"no listing of the assets", "/static/", 404, nil, []string{`href="view.css"`}},
		{"static js", "/static/live.js", 200, []string{"EventSource"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := get(h, http.MethodGet, c.target)
			body := w.Body.String()
			if w.Code != c.status {
				t.Fatalf("GET %s: status %d, want %d\n%s", c.target, w.Code, c.status, body)
			}
			for _, s := range c.want {
				if !strings.Contains(body, s) {
					t.Errorf("GET %s lacks %q:\n%s", c.target, s, body)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(body, s) {
					t.Errorf("GET %s holds %q", c.target, s)
				}
			}
			hd := w.Header()
			if csp := hd.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") ||
				strings.Contains(csp, "unsafe-inline") {
				t.Errorf("GET %s: Content-Security-Policy %q", c.target, csp)
			}
			if hd.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: X-Content-Type-Options %q", c.target, hd.Get("X-Content-Type-Options"))
			}
		})
	}
}

// TestPagesHaveNoInlineScript: the CSP allows no inline script, so a page
// holding one would break; and none holds a style attribute either.
func TestPagesHaveNoInlineScript(t *testing.T) {
	h := newTestHandler(t, newFakeRepository(2, 3), nil, nil)
	for _, target := range []string{"/", "/r/acme/promotions", "/r/acme/promotions/c0-s0-to-s1-2", "/r/acme/stages/l1/c0-s1", "/r/acme/vectors"} {
		body := get(h, http.MethodGet, target).Body.String()
		if strings.Count(body, "<script") != 1 || !strings.Contains(body, `<script src="/static/live.js" defer></script>`) {
			t.Errorf("GET %s: want exactly the one external script", target)
		}
		if strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
			t.Errorf("GET %s holds an inline style or handler", target)
		}
		if !strings.Contains(body, `<meta name="viewport" content="width=device-width, initial-scale=1">`) {
			t.Errorf("GET %s has no viewport meta", target)
		}
	}
}

func TestReadOnly(t *testing.T) {
	h := newTestHandler(t, newFakeRepository(1, 2), nil, nil)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if w := get(h, m, "/r/acme/promotions/c0-s0-to-s1-2"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: status %d, Allow %q; want 405 and GET, HEAD", m, w.Code, w.Header().Get("Allow"))
		}
	}
	for _, target := range []string{"/", "/events"} {
		if w := get(h, http.MethodHead, target); w.Code != 200 || w.Body.Len() != 0 {
			t.Errorf("HEAD %s: status %d, %d bytes", target, w.Code, w.Body.Len())
		}
	}
}

// TestUnverifiedAndRefusedState: the pages say when the state is not
// checked, or when it was refused and what is shown instead, and never mark
// an approval verified then.
func TestUnverifiedAndRefusedState(t *testing.T) {
	repo := newFakeRepository(1, 2)
	repo.snap.Verified = false
	h := newTestHandler(t, repo, nil, nil)
	body := get(h, http.MethodGet, "/r/acme/promotions/c0-s0-to-s1-1").Body.String()
	if !strings.Contains(body, "Unverified") || strings.Contains(body, "✓ verified") || !strings.Contains(body, "✗ not verified") {
		t.Errorf("unverified state: the page does not say so, or marks the approval verified:\n%s", body)
	}
	repo.snap.Verified = true
	repo.snap.State.Verdict.Trusted = false
	repo.snap.State.Refusal = "state commit 3f2a is signed by mallory, who may not change promotions/."
	body = get(h, http.MethodGet, "/").Body.String()
	if !strings.Contains(body, "State refused") || !strings.Contains(body, "signed by mallory") {
		t.Errorf("refused state: the page does not say so:\n%s", body)
	}
	repo.snap.Problem = "fetch branch main of https://bob:hunter2@git.example.com/prod.git: connection refused"
	if body = get(h, http.MethodGet, "/r/acme/vectors").Body.String(); !strings.Contains(body, "Not current") || strings.Contains(body, "hunter2") {
		t.Errorf("failed read: the page does not say so, or shows the credentials in a URL:\n%s", body)
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokenAuth(t *testing.T) {
	if _, err := LoadTokenFile(writeTemp(t, "short", "abc\n")); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a short token: %v", err)
	}
	token := "0123456789abcdef0123456789abcdef"
	auth, err := LoadTokenFile(writeTemp(t, "token", token+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHandler(t, newFakeRepository(1, 2), auth, nil)
	for _, c := range []struct {
		name   string
		header []string
		status int
	}{
		{"none", nil, 401},
		{"wrong bearer", []string{"Authorization", "Bearer " + token[:31] + "0"}, 401},
		{"bearer", []string{"Authorization", "Bearer " + token}, 200},
		{"basic with the token", []string{"Authorization", basic("anyone", token)}, 200},
		{"basic wrong", []string{"Authorization", basic("anyone", "nope")}, 401},
	} {
		for _, target := range []string{"/", "/static/view.css", "/events", "/nope"} {
			if c.status == 200 && target == "/events" {
				continue // a stream; TestEvents covers it
			}
			w := get(h, http.MethodGet, target, c.header...)
			want := c.status
			if target == "/nope" && want == 200 {
				want = 404
			}
			if w.Code != want {
				t.Errorf("%s: GET %s: status %d, want %d", c.name, target, w.Code, want)
			}
			if w.Code == 401 && (w.Header().Get("WWW-Authenticate") == "" || strings.Contains(w.Body.String(), "c0-s0")) {
				t.Errorf("%s: GET %s: 401 without a challenge, or with the page", c.name, target)
			}
		}
	}
}

func basic(user, password string) string {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, password)
	return r.Header.Get("Authorization")
}

func TestBasicAuth(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ content, want string }{
		{"alice:s3cret\n", "not a bcrypt hash"},
		{"# nobody\n", "lists no user"},
		{"alice\n", "want `user:bcrypt-hash`"},
		{"alice:" + string(hash) + "\nalice:" + string(hash) + "\n", "listed twice"},
	} {
		if _, err := LoadBasicAuthFile(writeTemp(t, "htpasswd", c.content)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("basic auth file %q: error %v, want %q", c.content, err, c.want)
		}
	}
	// htpasswd -nB writes $2y$, which bcrypt reads like $2a$.
	y := strings.Replace(string(hash), "$2a$", "$2y$", 1)
	auth, err := LoadBasicAuthFile(writeTemp(t, "htpasswd", "# the approvers\nalice:"+y+"\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHandler(t, newFakeRepository(1, 2), auth, nil)
	for _, c := range []struct {
		user, password string
		status         int
	}{{"alice", "s3cret", 200}, {"alice", "s3cret", 200}, {"alice", "wrong", 401}, {"bob", "s3cret", 401}, {"", "", 401}} {
		if w := get(h, http.MethodGet, "/", "Authorization", basic(c.user, c.password)); w.Code != c.status {
			t.Errorf("%s:%s: status %d, want %d", c.user, c.password, w.Code, c.status)
		}
	}
}

// TestUnknownUserTakesAsLongAsAWrongPassword: answering for a user the
// file does not list must cost what a known user's wrong password costs,
// or the time of a 401 tells an attacker which user names exist. The
// users' hashes set that cost (htpasswd -nB writes cost 5, -C up to 17),
// not a fixed one: an unknown user was checked against a hash of the
// lowest cost, 4, in about a 60th of a cost-10 user's time.
func TestUnknownUserTakesAsLongAsAWrongPassword(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), 10)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := LoadBasicAuthFile(writeTemp(t, "htpasswd", "alice:"+string(hash)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHandler(t, newFakeRepository(1, 2), auth, nil)
	took := func(user string) time.Duration {
		start := time.Now()
		if w := get(h, http.MethodGet, "/", "Authorization", basic(user, "wrong")); w.Code != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong password: status %d, want 401", user, w.Code)
		}
		return time.Since(start)
	}
	known, unknown := took("alice"), took("mallory")
	// Noise only adds time, and the two costs differ sixtyfold when they
	// differ: a third is a wide margin either way.
	if unknown < known/3 {
		t.Errorf("a wrong password took %v for alice, who exists, and %v for mallory, who does not: the time gives the user names away", known, unknown)
	}
}

// TestEvents: a change reaches an open stream as an event, a heartbeat
// keeps it open, and beyond the client limit the stream is refused.
func TestEvents(t *testing.T) {
	events := NewBroker(1, 50*time.Millisecond)
	srv := httptest.NewServer(newTestHandler(t, newFakeRepository(1, 2), nil, events))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewReader(resp.Body)
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			l, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("waiting for %q: %v", want, err)
			}
			if strings.TrimSpace(l) == want {
				return
			}
		}
		t.Fatalf("no %q within 5s", want)
	}
	waitFor(": connected")
	waitFor(": heartbeat")
	for events.Clients() != 1 {
		time.Sleep(10 * time.Millisecond)
	}
	second, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "too many live pages") {
		t.Errorf("a second stream beyond the limit of 1: status %d %s", second.StatusCode, body)
	}
	events.Publish("acme")
	waitFor("event: state")
	waitFor("data: acme")
}

func TestRepositoryIDs(t *testing.T) {
	got := RepositoryIDs([]string{"https://user:pw@git.example.com/acme/shop.git", "git@github.com:acme/shop.git", "/srv/git/shop-2",
		"file:///tmp/<x>/", "https://git.example.com/"})
	want := []string{"shop", "shop-2", "shop-2-2", "x", "git.example.com"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("RepositoryIDs = %v, want %v", got, want)
	}
}

// TestLoopbackHostsOnly: an open view on loopback answers only to this
// machine's names, so a site whose name resolves to 127.0.0.1 cannot read it.
func TestLoopbackHostsOnly(t *testing.T) {
	h, err := NewHandler(Options{Repositories: []Repository{newFakeRepository(1, 2)}, LoopbackHostsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"localhost:8080": 200, "127.0.0.1:8080": 200, "[::1]:8080": 200, "vf.localhost": 200,
		"attacker.example:8080": 421, "127.0.0.1.nip.io": 421, "": 421} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: status %d, want %d", host, w.Code, want)
		}
	}
}

// TestEventsOutliveWriteTimeout: run --listen's server ends every response
// 30 s after it starts (WriteTimeout); the event stream moves that deadline
// at each write, so it stays open.
func TestEventsOutliveWriteTimeout(t *testing.T) {
	srv := httptest.NewUnstartedServer(newTestHandler(t, newFakeRepository(1, 2), nil, NewBroker(4, 50*time.Millisecond)))
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	start, beats := time.Now(), 0
	for time.Since(start) < time.Second {
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended after %s (%d heartbeats): %v", time.Since(start), beats, err)
		}
		if strings.TrimSpace(l) == ": heartbeat" {
			beats++
		}
	}
}
