package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
)

var testSecret = []byte("It's a Secret to Everybody")

// The events the testdata payloads must turn into.
var (
	githubRepos = []string{"github.com/Codertocat/Hello-World"}
	gitlabPush  = Event{Provider: ProviderGitLab, Kind: KindPush, Repositories: []string{"example.com/mike/diaspora"}, Branch: "master"}
	gitlabMR    = Event{Provider: ProviderGitLab, Kind: KindPullRequest, Repositories: []string{"example.com/gitlabhq/gitlab-test"}, PullRequest: 1}
	// Gitea's SSH runs on a non-default port, so its URL names a different
	// address than the HTTP clone URL; both are reported.
	giteaRepos    = []string{"localhost:3000/gitea/webhooks", "localhost:2222/gitea/webhooks"}
	registryPush  = Event{Provider: ProviderRegistry, Kind: KindImagePush, Images: []string{"registry.example.com:5000/team/app:1.4.2", "registry.example.com:5000/team/worker"}}
	registryPulls = `{"events":[{"action":"pull","target":{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","repository":"team/app","tag":"1.4.2","url":"https://registry.example.com/v2/team/app/manifests/1.4.2"},"request":{"host":"registry.example.com"}},` +
		`{"action":"push","target":{"mediaType":"application/vnd.docker.container.image.rootfs.diff+x-gtar","repository":"team/app","url":"https://registry.example.com/v2/team/app/blobs/sha256:c3b3"},"request":{"host":"registry.example.com"}}]}`
)

type request struct {
	method string
	path   string
	body   []byte
	header http.Header
	// chunked hides the length so only http.MaxBytesReader can catch an
	// oversized body.
	chunked bool
}

func TestHandler(t *testing.T) {
	githubPush := fixture(t, "github-push.json")
	gitlabMRBody := fixture(t, "gitlab-merge_request.json")
	giteaReview := fixture(t, "gitea-pull_request_review_approved.json")
	registryBody := fixture(t, "registry-envelope.json")
	oversized := append(bytes.Repeat([]byte(" "), int(DefaultMaxBodyBytes)), githubPush...)

	tests := []struct {
		name       string
		secret     []byte // the server's; testSecret when nil
		req        request
		wantStatus int
		wantResult string
		want       []Event
	}{
		// GitHub, signed as GitHub signs: X-Hub-Signature-256 over the raw body.
		{
			name:       "github push",
			req:        github("push", githubPush, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitHub, Kind: KindPush, Repositories: githubRepos, Branch: "main"}},
		},
		{
			name:       "github pull_request",
			req:        github("pull_request", fixture(t, "github-pull_request.json"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitHub, Kind: KindPullRequest, Repositories: githubRepos, PullRequest: 2}},
		},
		{
			name:       "github pull_request_review",
			req:        github("pull_request_review", fixture(t, "github-pull_request_review.json"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitHub, Kind: KindReview, Repositories: githubRepos, PullRequest: 2}},
		},
		{
			name:       "github ping answers 200 and hands over nothing",
			req:        github("ping", fixture(t, "github-ping.json"), testSecret),
			wantStatus: http.StatusOK, wantResult: ResultPing,
		},
		{
			name:       "github form-encoded push, signature over the form body",
			req:        githubForm("push", githubPush, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitHub, Kind: KindPush, Repositories: githubRepos, Branch: "main"}},
		},
		{
			name:       "github tag push has no branch",
			req:        github("push", bytes.Replace(githubPush, []byte(`"refs/heads/main"`), []byte(`"refs/tags/v1.0.0"`), 1), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitHub, Kind: KindPush, Repositories: githubRepos}},
		},
		{
			name:       "github unknown event is ignored",
			req:        github("issues", []byte(`{"action":"opened"}`), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "github signed with another secret",
			req:        github("push", githubPush, []byte("not the secret")),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "github body changed after signing",
			req:        withBody(github("push", githubPush, testSecret), bytes.Replace(githubPush, []byte("Hello-World"), []byte("Evil-World"), -1)),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "github missing signature",
			req:        without(github("push", githubPush, testSecret), "X-Hub-Signature-256"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "github legacy sha1 signature alone is not enough",
			req:        without(with(github("push", githubPush, testSecret), "X-Hub-Signature", "sha1="+hmacHex(sha1.New, testSecret, githubPush)), "X-Hub-Signature-256"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "github signature without sha256= prefix",
			req:        with(github("push", githubPush, testSecret), "X-Hub-Signature-256", hmacHex(sha256.New, testSecret, githubPush)),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "unknown event without signature is refused before it is read",
			req:        without(github("issues", []byte(`{}`), testSecret), "X-Hub-Signature-256"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "no secret configured refuses even a request signed with the empty key",
			secret:     []byte{},
			req:        github("push", githubPush, []byte{}),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "github malformed JSON",
			req:        github("push", []byte(`{"ref": "refs/heads/main", "repository": `), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "github push naming no repository",
			req:        github("push", []byte(`{"ref":"refs/heads/main","repository":{}}`), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "github pull_request without a number",
			req:        github("pull_request", []byte(`{"action":"opened","repository":{"clone_url":"https://github.com/o/r.git"}}`), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "github form body without payload field",
			req:        withContentType(github("push", []byte("other=1"), testSecret), "application/x-www-form-urlencoded"),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "oversized body with Content-Length",
			req:        github("push", oversized, testSecret),
			wantStatus: http.StatusRequestEntityTooLarge, wantResult: ResultTooLarge,
		},
		{
			name:       "oversized chunked body",
			req:        chunked(github("push", oversized, testSecret)),
			wantStatus: http.StatusRequestEntityTooLarge, wantResult: ResultTooLarge,
		},
		{
			name:       "body exactly at the cap is read",
			req:        github("push", append(bytes.Repeat([]byte(" "), int(DefaultMaxBodyBytes)-len(githubPush)), githubPush...), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitHub, Kind: KindPush, Repositories: githubRepos, Branch: "main"}},
		},
		{
			name:       "github GET",
			req:        request{method: http.MethodGet, path: "/hooks/github"},
			wantStatus: http.StatusMethodNotAllowed, wantResult: ResultMethodNotAllowed,
		},

		// GitLab: X-Gitlab-Token carries the secret itself.
		{
			name:       "gitlab push",
			req:        gitlab("Push Hook", fixture(t, "gitlab-push.json"), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{gitlabPush},
		},
		{
			name:       "gitlab merge request",
			req:        gitlab("Merge Request Hook", gitlabMRBody, string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{gitlabMR},
		},
		{
			name:       "gitlab merge request approval is a review",
			req:        gitlab("Merge Request Hook", bytes.Replace(gitlabMRBody, []byte(`"action": "open"`), []byte(`"action": "approved"`), 1), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitLab, Kind: KindReview, Repositories: gitlabMR.Repositories, PullRequest: 1}},
		},
		{
			name:       "gitlab pipeline hook is ignored",
			req:        gitlab("Pipeline Hook", []byte(`{"object_kind":"pipeline"}`), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "gitlab wrong token",
			req:        gitlab("Push Hook", fixture(t, "gitlab-push.json"), "guess"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "gitlab token with a suffix",
			req:        gitlab("Push Hook", fixture(t, "gitlab-push.json"), string(testSecret)+"x"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "gitlab missing token",
			req:        without(gitlab("Push Hook", fixture(t, "gitlab-push.json"), string(testSecret)), "X-Gitlab-Token"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "gitlab malformed JSON",
			req:        gitlab("Merge Request Hook", []byte(`{"object_attributes": {"iid": "one"}}`), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "gitlab PUT",
			req:        request{method: http.MethodPut, path: "/hooks/gitlab", body: []byte("{}")},
			wantStatus: http.StatusMethodNotAllowed, wantResult: ResultMethodNotAllowed,
		},

		// Gitea: X-Gitea-Signature is the bare hex HMAC-SHA256.
		{
			name:       "gitea push",
			req:        gitea("push", fixture(t, "gitea-push.json"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitea, Kind: KindPush, Repositories: giteaRepos, Branch: "develop"}},
		},
		{
			name:       "gitea pull request",
			req:        gitea("pull_request", fixture(t, "gitea-pull_request.json"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitea, Kind: KindPullRequest, Repositories: giteaRepos, PullRequest: 7}},
		},
		{
			name:       "gitea synchronized pull request",
			req:        gitea("pull_request_sync", fixture(t, "gitea-pull_request.json"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitea, Kind: KindPullRequest, Repositories: giteaRepos, PullRequest: 7}},
		},
		{
			name:       "gitea review approved",
			req:        gitea("pull_request_review_approved", giteaReview, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitea, Kind: KindReview, Repositories: giteaRepos, PullRequest: 7}},
		},
		{
			name:       "gitea review rejected",
			req:        gitea("pull_request_review_rejected", giteaReview, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitea, Kind: KindReview, Repositories: giteaRepos, PullRequest: 7}},
		},
		{
			name: "gitea sender without X-Gitea-Event-Type nor X-Gitea-Signature (older Gitea, Gogs-style headers)",
			req: without(without(gitea("pull_request_review_approved", giteaReview, testSecret),
				"X-Gitea-Event-Type"), "X-Gitea-Signature"),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{{Provider: ProviderGitea, Kind: KindReview, Repositories: giteaRepos, PullRequest: 7}},
		},
		{
			name:       "gitea plain comment on a pull request is ignored",
			req:        gitea("pull_request_comment", giteaReview, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "gitea wrong X-Gitea-Signature is not rescued by a right X-Hub-Signature-256",
			req:        with(gitea("push", fixture(t, "gitea-push.json"), testSecret), "X-Gitea-Signature", hmacHex(sha256.New, []byte("nope"), fixture(t, "gitea-push.json"))),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "gitea signed with another secret",
			req:        gitea("push", fixture(t, "gitea-push.json"), []byte("nope")),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "gitea missing signature",
			req:        without(without(gitea("push", fixture(t, "gitea-push.json"), testSecret), "X-Gitea-Signature"), "X-Hub-Signature-256"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "gitea malformed JSON",
			req:        gitea("push", []byte(`{"ref": 7}`), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "gitea GET",
			req:        request{method: http.MethodGet, path: "/hooks/gitea"},
			wantStatus: http.StatusMethodNotAllowed, wantResult: ResultMethodNotAllowed,
		},

		// Registry: the Authorization header the endpoint configuration sends.
		{
			name:       "registry envelope",
			req:        registry(registryBody, "Bearer "+string(testSecret), eventsMediaTypeV1),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{registryPush},
		},
		{
			name:       "registry v3 media type and Token scheme",
			req:        registry(registryBody, "Token "+string(testSecret), eventsMediaTypeV2),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: []Event{registryPush},
		},
		{
			name:       "registry envelope with only pulls and blob pushes is ignored",
			req:        registry([]byte(registryPulls), "Bearer "+string(testSecret), eventsMediaTypeV1),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "registry wrong token",
			req:        registry(registryBody, "Bearer guess", eventsMediaTypeV1),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "registry basic auth is not the token",
			req:        registry(registryBody, "Basic "+string(testSecret), eventsMediaTypeV1),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "registry missing authorization",
			req:        without(registry(registryBody, "x", eventsMediaTypeV1), "Authorization"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "registry malformed envelope",
			req:        registry([]byte(`{"events": {"action": "push"}}`), "Bearer "+string(testSecret), eventsMediaTypeV1),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "registry wrong media type",
			req:        registry(registryBody, "Bearer "+string(testSecret), "text/plain"),
			wantStatus: http.StatusUnsupportedMediaType, wantResult: ResultUnsupportedMediaType,
		},
		{
			name:       "registry GET",
			req:        request{method: http.MethodGet, path: "/hooks/registry"},
			wantStatus: http.StatusMethodNotAllowed, wantResult: ResultMethodNotAllowed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			secret := tc.secret
			if secret == nil {
				secret = testSecret
			}
			rec := &recorder{}
			srv := httptest.NewServer(NewHandler(Options{Secret: secret, OnEvent: rec.event, Metrics: rec.metric, Logger: testr.New(t)}))
			defer srv.Close()

			resp := send(t, srv, tc.req)
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
				t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
			}
			provider := strings.TrimPrefix(tc.req.path, "/hooks/")
			if diff := cmp.Diff([]string{provider + " " + tc.wantResult}, rec.metrics()); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, rec.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandlerUnknownProviderPath(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(NewHandler(Options{Secret: testSecret, OnEvent: rec.event}))
	defer srv.Close()
	req := github("push", fixture(t, "github-push.json"), testSecret)
	req.path = "/hooks/bitbucket"
	if resp := send(t, srv, req); resp.StatusCode != http.StatusNotFound {
		t.Errorf("status = %d, want 404", resp.StatusCode)
	}
	if got := rec.events(); got != nil {
		t.Errorf("events = %v, want none", got)
	}
}

func TestHandlerMaxBodyBytesOption(t *testing.T) {
	body := fixture(t, "gitlab-push.json")
	for _, tc := range []struct {
		name       string
		max        int64
		wantStatus int
	}{
		{"cap one byte short", int64(len(body)) - 1, http.StatusRequestEntityTooLarge},
		{"cap at the body size", int64(len(body)), http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			srv := httptest.NewServer(NewHandler(Options{Secret: testSecret, MaxBodyBytes: tc.max, OnEvent: rec.event}))
			defer srv.Close()
			if resp := send(t, srv, chunked(gitlab("Push Hook", body, string(testSecret)))); resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
		})
	}
}

// github signs as GitHub does: X-Hub-Signature-256: sha256=<hex HMAC-SHA256>,
// alongside the legacy SHA-1 header.
func github(event string, body, secret []byte) request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Hook-ID", "292430182")
	h.Set("X-Hub-Signature", "sha1="+hmacHex(sha1.New, secret, body))
	h.Set("X-Hub-Signature-256", "sha256="+hmacHex(sha256.New, secret, body))
	return request{method: http.MethodPost, path: "/hooks/github", body: body, header: h}
}

// githubForm is GitHub's "application/x-www-form-urlencoded" content type:
// the JSON in a payload field, the signature over the encoded form.
func githubForm(event string, payload, secret []byte) request {
	form := []byte(url.Values{"payload": {string(payload)}}.Encode())
	return withContentType(github(event, form, secret), "application/x-www-form-urlencoded")
}

// gitlab sends the secret token as is.
func gitlab(event string, body []byte, token string) request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitLab/17.0.0")
	h.Set("X-Gitlab-Event", event)
	h.Set("X-Gitlab-Event-UUID", "13792a34-cac6-4fda-95a8-c58e00a3954e")
	h.Set("X-Gitlab-Instance", "https://gitlab.example.com")
	h.Set("X-Gitlab-Token", token)
	return request{method: http.MethodPost, path: "/hooks/gitlab", body: body, header: h}
}

// gitea sets the headers Gitea's webhook deliverer sets for a hook type:
// X-Gitea-Event is the coarse event, X-Gitea-Event-Type the hook type, and the
// same HMAC under Gitea, Gogs and GitHub names.
func gitea(hookType string, body, secret []byte) request {
	event := map[string]string{
		"push":                         "push",
		"pull_request":                 "pull_request",
		"pull_request_sync":            "pull_request",
		"pull_request_comment":         "issue_comment",
		"pull_request_review_approved": "pull_request_approved",
		"pull_request_review_rejected": "pull_request_rejected",
		"pull_request_review_comment":  "pull_request_comment",
	}[hookType]
	sig256 := hmacHex(sha256.New, secret, body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Gitea-Delivery", "f6266f16-1bf3-46a5-9ea4-602e06ead473")
	h.Set("X-Gitea-Event", event)
	h.Set("X-Gitea-Event-Type", hookType)
	h.Set("X-Gitea-Signature", sig256)
	h.Set("X-Gogs-Event", event)
	h.Set("X-Gogs-Signature", sig256)
	h.Set("X-Hub-Signature", "sha1="+hmacHex(sha1.New, secret, body))
	h.Set("X-Hub-Signature-256", "sha256="+sig256)
	h["X-GitHub-Event"] = []string{event}
	h["X-GitHub-Event-Type"] = []string{hookType}
	return request{method: http.MethodPost, path: "/hooks/gitea", body: body, header: h}
}

// registry is a distribution notification with the endpoint's configured
// Authorization header.
func registry(body []byte, authorization, mediaType string) request {
	h := http.Header{}
	h.Set("Content-Type", mediaType)
	h.Set("Authorization", authorization)
	return request{method: http.MethodPost, path: "/hooks/registry", body: body, header: h}
}

func with(r request, key, value string) request {
	r.header = r.header.Clone()
	r.header.Set(key, value)
	return r
}

func without(r request, key string) request {
	r.header = r.header.Clone()
	r.header.Del(key)
	return r
}

func withContentType(r request, ct string) request { return with(r, "Content-Type", ct) }

func withBody(r request, body []byte) request {
	r.body = body
	return r
}

func chunked(r request) request {
	r.chunked = true
	return r
}

func hmacHex(h func() hash.Hash, secret, body []byte) string {
	mac := hmac.New(h, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func send(t *testing.T, srv *httptest.Server, r request) *http.Response {
	t.Helper()
	var body io.Reader = bytes.NewReader(r.body)
	if r.chunked {
		body = io.MultiReader(body) // not a known-length type: sent chunked
	}
	req, err := http.NewRequest(r.method, srv.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading response: %v", err)
	}
	return resp
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// recorder collects what the handler hands out; requests may be concurrent.
type recorder struct {
	mu     sync.Mutex
	evs    []Event
	result []string
}

func (r *recorder) event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
}

func (r *recorder) metric(provider, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.result = append(r.result, provider+" "+result)
}

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.evs
}

func (r *recorder) metrics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result
}
