package webhook

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// FuzzHandler sends arbitrary bodies, correctly signed, so every input gets
// past verification into the parsers. Whatever the input, the handler must
// not panic, must answer with one of its documented statuses, and must hand
// over only events that carry what their kind needs.
func FuzzHandler(f *testing.F) {
	seeds := []struct {
		provider uint8
		event    string
		file     string
	}{
		{0, "push", "github-push.json"},
		{0, "pull_request", "github-pull_request.json"},
		{0, "pull_request_review", "github-pull_request_review.json"},
		{0, "ping", "github-ping.json"},
		{1, "Push Hook", "gitlab-push.json"},
		{1, "Merge Request Hook", "gitlab-merge_request.json"},
		{2, "push", "gitea-push.json"},
		{2, "pull_request", "gitea-pull_request.json"},
		{2, "pull_request_review_approved", "gitea-pull_request_review_approved.json"},
		{3, "", "registry-envelope.json"},
	}
	for _, s := range seeds {
		f.Add(s.provider, s.event, "application/json", fixture(f, s.file))
	}
	f.Add(uint8(0), "push", "application/x-www-form-urlencoded", []byte("payload=%7B%22ref%22%3A1%7D"))
	f.Add(uint8(3), "", eventsMediaTypeV1, []byte(`{"events":[{"action":"push","target":{"repository":"a","url":"::"}}]}`))
	f.Add(uint8(1), "Merge Request Hook", "application/json", []byte(`{"object_attributes":{"iid":-1}}`))
	f.Add(uint8(2), "push", "application/json", []byte(`null`))
	for _, e := range []eventv1.Event{
		fluxEvent("ReconciliationSucceeded", eventv1.EventSeverityInfo, "main@sha1:"+testCommit, "done"),
		fluxEvent("HealthCheckFailed", eventv1.EventSeverityError, "main/"+testCommit, "timeout"),
		fluxEvent("Progressing", eventv1.EventSeverityInfo, "sha1:"+testCommit, "configured"),
	} {
		f.Add(uint8(4), "", "application/json", fluxBodyOf(f, e))
	}
	f.Add(uint8(4), "", "application/json", []byte(`{"involvedObject":{"kind":"Kustomization","name":"a","namespace":"b"},"reason":"ReconciliationSucceeded","metadata":{"revision":"@sha1:"},"timestamp":"2026-12-01T00:00:00Z"}`))
	n := readArgoNotifications(f)
	f.Add(uint8(5), "", "application/json", argocd(f, n, argoApp(f, nil), string(testSecret)).body)
	f.Add(uint8(5), "", "", argocd(f, n, argoApp(f, map[string]any{"status.sync.status": "OutOfSync"}), string(testSecret)).body)
	f.Add(uint8(5), "", "", []byte(`{"metadata":{"name":"a","namespace":"b"},"status":{"sync":{"status":"Synced","revision":7}}}`))
	argoReq := argocd(f, n, argoApp(f, nil), string(testSecret))
	for _, bomb := range testutil.HostileJSON() {
		for provider := uint8(0); provider < providerCount; provider++ {
			f.Add(provider, "push", "application/json", bomb)
		}
	}

	const maxBody = 4096
	f.Fuzz(func(t *testing.T, provider uint8, event, contentType string, body []byte) {
		var got []Event
		h := NewHandler(Options{Secret: testSecret, MaxBodyBytes: maxBody, OnEvent: func(e Event) { got = append(got, e) }})

		var r request
		switch provider % providerCount {
		case 0:
			r = github(event, body, testSecret)
		case 1:
			r = gitlab(event, body, string(testSecret))
		case 2:
			r = gitea(event, body, testSecret)
			r.header.Set("X-Gitea-Event", event) // unmapped hook types too
		case 3:
			r = registry(body, "Bearer "+string(testSecret), eventsMediaTypeV1)
		case 4:
			r = fluxBody(body, testSecret)
		default:
			r = withBody(argoReq, body)
			r.header = r.header.Clone()
		}
		r.header.Set("Content-Type", contentType)
		req := httptest.NewRequest(http.MethodPost, r.path, bytes.NewReader(body))
		req.Header = r.header
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)

		switch w.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnsupportedMediaType:
		case http.StatusRequestEntityTooLarge:
			if len(body) <= maxBody {
				t.Fatalf("413 for a %d-byte body under the %d cap", len(body), maxBody)
			}
		default:
			t.Fatalf("status %d for a correctly signed request: %s", w.Code, w.Body)
		}
		if len(got) > 0 && w.Code != http.StatusAccepted {
			t.Fatalf("event handed over but status %d", w.Code)
		}
		for _, e := range got {
			checkEventShape(t, e)
		}
	})
}

// providerCount is how many providers the fuzz target sends to.
const providerCount = 6

func checkEventShape(t *testing.T, e Event) {
	t.Helper()
	switch e.Kind {
	case KindPush, KindPullRequest, KindReview:
		if len(e.Repositories) == 0 {
			t.Fatalf("%s event without repositories: %+v", e.Kind, e)
		}
		for _, r := range e.Repositories {
			if r == "" {
				t.Fatalf("empty repository in %+v", e)
			}
		}
		if e.Kind != KindPush && e.PullRequest <= 0 {
			t.Fatalf("%s event without pull request number: %+v", e.Kind, e)
		}
	case KindImagePush:
		if e.Provider != ProviderRegistry || len(e.Images) == 0 {
			t.Fatalf("image push without images: %+v", e)
		}
	case KindDeployment:
		d := e.Deployment
		if d == nil || (e.Provider != ProviderFlux && e.Provider != ProviderArgoCD) {
			t.Fatalf("deployment event without a report or from %q: %+v", e.Provider, e)
		}
		if d.Deployment.Kind == "" || d.Deployment.Name == "" || d.Deployment.Namespace == "" || !isFullCommit(d.Revision) ||
			d.Revision != strings.ToLower(d.Revision) || d.At.IsZero() || len(d.Message) > maxReportMessage+len(" …(truncated)") {
			t.Fatalf("deployment report without what the core needs: %+v", d)
		}
		switch d.Outcome {
		case deployments.Healthy, deployments.Failed, deployments.Progressing:
		default:
			t.Fatalf("unknown outcome in %+v", d)
		}
	default:
		t.Fatalf("unknown kind in %+v", e)
	}
}

// The fuzz target signs with the helpers above; make sure a tampered body
// would still be refused there, so the fuzzer is not testing an open door.
func TestFuzzHelpersSignForReal(t *testing.T) {
	r := gitea("push", []byte(`{}`), testSecret)
	if !verifyGitea(r.header, []byte(`{}`), testSecret) || verifyGitea(r.header, []byte(`{ }`), testSecret) {
		t.Fatal("gitea helper signature does not bind the body")
	}
	if hmacHex(sha256.New, testSecret, nil) == hmacHex(sha256.New, []byte("x"), nil) {
		t.Fatal("hmacHex ignores the key")
	}
}
