package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

const (
	testCommit = "5f1e7a9c3b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f"
	// The Argo CD example, read by the tests so the documented template,
	// service and header are the ones proven here.
	argoNotificationsFile = "../../examples/argocd/notifications.yaml"
)

var fluxAt = time.Date(2026, 12, 1, 9, 30, 5, 0, time.UTC)

// fluxEvent is what kustomize-controller emits for a Kustomization, as
// notification-controller forwards it: metadata keys stripped of the
// kustomize.toolkit.fluxcd.io/ prefix.
func fluxEvent(reason, severity, revision, message string) eventv1.Event {
	e := eventv1.Event{
		InvolvedObject: corev1.ObjectReference{
			Kind:            "Kustomization",
			Namespace:       "flux-system",
			Name:            "acme-dev",
			UID:             "5b8c3f3e-0b7b-4b43-9a5c-0c8f1d2e3a4b",
			APIVersion:      "kustomize.toolkit.fluxcd.io/v1",
			ResourceVersion: "183552",
		},
		Severity:            severity,
		Timestamp:           metav1.NewTime(fluxAt),
		Message:             message,
		Reason:              reason,
		ReportingController: "kustomize-controller",
		ReportingInstance:   "kustomize-controller-7f5d6b9c8d-x2x9l",
	}
	if revision != "" {
		e.Metadata = map[string]string{eventv1.MetaRevisionKey: revision}
	}
	return e
}

func fluxReport(outcome deployments.Outcome, reason, message string) *deployments.Report {
	return &deployments.Report{
		Deployment: v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "acme-dev", Namespace: "flux-system"},
		Revision:   testCommit,
		Outcome:    outcome,
		Reason:     reason,
		Message:    message,
		At:         fluxAt,
		Channel:    deployments.ChannelFlux,
	}
}

// flux posts as notification-controller's generic-hmac forwarder does: the
// event marshalled to JSON, X-Signature: sha256=<hex HMAC-SHA256 of it>.
func flux(t testing.TB, e eventv1.Event, secret []byte) request {
	t.Helper()
	body, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return fluxBody(body, secret)
}

func fluxBody(body, secret []byte) request {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Gotk-Component", "kustomize-controller")
	h.Set("User-Agent", "Go-http-client/1.1")
	h.Set("X-Signature", "sha256="+hmacHex(sha256.New, secret, body))
	return request{method: http.MethodPost, path: "/hooks/flux", body: body, header: h}
}

func TestFluxEvents(t *testing.T) {
	const healthFailed = "Health check failed after 5m0s: timeout waiting for: [Deployment/acme-dev/service-a status: 'InProgress']"
	withMeta := func(e eventv1.Event, kv ...string) eventv1.Event {
		e.Metadata = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			e.Metadata[kv[i]] = kv[i+1]
		}
		return e
	}
	succeeded := fluxEvent("ReconciliationSucceeded", eventv1.EventSeverityInfo, "main@sha1:"+testCommit, "Reconciliation finished in 1.2s, next run in 10m0s")
	helmRelease := succeeded
	helmRelease.InvolvedObject.Kind, helmRelease.InvolvedObject.APIVersion = "HelmRelease", "helm.toolkit.fluxcd.io/v2"
	gitRepository := fluxEvent("NewArtifact", eventv1.EventSeverityInfo, "main@sha1:"+testCommit, "stored artifact for commit")
	gitRepository.InvolvedObject.Kind, gitRepository.InvolvedObject.APIVersion = "GitRepository", "source.toolkit.fluxcd.io/v1"
	otherGroup := succeeded
	otherGroup.InvolvedObject.APIVersion = "kustomize.config.k8s.io/v1beta1"
	noName := succeeded
	noName.InvolvedObject.Name = ""
	noTime := succeeded
	noTime.Timestamp = metav1.Time{}
	long := fluxEvent("HealthCheckFailed", eventv1.EventSeverityError, "main@sha1:"+testCommit, "x"+strings.Repeat("é", 30000))

	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantResult string
		want       *deployments.Report
	}{
		{
			name:       "reconciliation succeeded: applied and healthy",
			req:        flux(t, succeeded, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Healthy, "ReconciliationSucceeded", "Reconciliation finished in 1.2s, next run in 10m0s"),
		},
		{
			name:       "health check failed",
			req:        flux(t, fluxEvent("HealthCheckFailed", eventv1.EventSeverityError, "main@sha1:"+testCommit, healthFailed), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Failed, "HealthCheckFailed", healthFailed),
		},
		{
			name:       "reconciliation failed",
			req:        flux(t, fluxEvent("ReconciliationFailed", eventv1.EventSeverityError, "main@sha1:"+testCommit, "Deployment/acme-dev/service-a dry-run failed"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Failed, "ReconciliationFailed", "Deployment/acme-dev/service-a dry-run failed"),
		},
		{
			name:       "dependency not ready (sent as info)",
			req:        flux(t, fluxEvent("DependencyNotReady", eventv1.EventSeverityInfo, "main@sha1:"+testCommit, "dependency 'flux-system/infra' is not ready"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Failed, "DependencyNotReady", "dependency 'flux-system/infra' is not ready"),
		},
		{
			name:       "build failed",
			req:        flux(t, fluxEvent("BuildFailed", eventv1.EventSeverityError, "main@sha1:"+testCommit, "kustomize build failed"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Failed, "BuildFailed", "kustomize build failed"),
		},
		{
			name:       "detached commit revision sha1:<commit>",
			req:        flux(t, withMeta(succeeded, "revision", "sha1:"+testCommit), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Healthy, "ReconciliationSucceeded", succeeded.Message),
		},
		{
			name:       "ref with slashes and an @ in it",
			req:        flux(t, withMeta(succeeded, "revision", "refs/heads/feature/a@b@sha1:"+testCommit), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Healthy, "ReconciliationSucceeded", succeeded.Message),
		},
		{
			name:       "Flux before 2.0: <branch>/<commit>, upper case",
			req:        flux(t, withMeta(succeeded, "revision", "main/"+strings.ToUpper(testCommit)), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Healthy, "ReconciliationSucceeded", succeeded.Message),
		},
		{
			name:       "metadata as kustomize-controller records it, with the API group",
			req:        flux(t, withMeta(succeeded, "kustomize.toolkit.fluxcd.io/revision", "main@sha1:"+testCommit, "kustomize.toolkit.fluxcd.io/token", "x"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Healthy, "ReconciliationSucceeded", succeeded.Message),
		},
		{
			name:       "OCI source: the origin revision names the commit",
			req:        flux(t, withMeta(succeeded, "revision", "latest@sha256:"+strings.Repeat("ab", 32), "originRevision", "main@sha1:"+testCommit), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Healthy, "ReconciliationSucceeded", succeeded.Message),
		},
		{
			name:       "a long message is cut on a character boundary",
			req:        flux(t, long, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: fluxReport(deployments.Failed, "HealthCheckFailed", "x"+strings.Repeat("é", maxReportMessage/2-1)+" …(truncated)"),
		},

		// Verified, but nothing that says what runs.
		{
			name:       "progressing (the apply's change set) is ignored",
			req:        flux(t, fluxEvent("Progressing", eventv1.EventSeverityInfo, "main@sha1:"+testCommit, "Deployment/acme-dev/service-a configured"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "health checks canceled by a newer revision are ignored",
			req:        flux(t, fluxEvent("HealthCheckCanceled", eventv1.EventSeverityInfo, "main@sha1:"+testCommit, "Health checks canceled"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "an ignored reason needs no revision",
			req:        flux(t, fluxEvent("AccessDenied", eventv1.EventSeverityError, "", "cross-namespace references are not allowed"), testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "HelmRelease is ignored",
			req:        flux(t, helmRelease, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "GitRepository is ignored",
			req:        flux(t, gitRepository, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},
		{
			name:       "a Kustomization of another API group is ignored",
			req:        flux(t, otherGroup, testSecret),
			wantStatus: http.StatusAccepted, wantResult: ResultIgnored,
		},

		// Refused.
		{
			name:       "unsigned",
			req:        without(flux(t, succeeded, testSecret), "X-Signature"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "signed with another secret",
			req:        flux(t, succeeded, []byte("not the secret")),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "body changed after signing",
			req:        withBody(flux(t, succeeded, testSecret), bytes.Replace(fluxBodyOf(t, succeeded), []byte("acme-dev"), []byte("acme-prd"), 1)),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "signature without sha256= prefix",
			req:        with(flux(t, succeeded, testSecret), "X-Signature", hmacHex(sha256.New, testSecret, fluxBodyOf(t, succeeded))),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "a GitHub signature is not a Flux one",
			req:        without(with(flux(t, succeeded, testSecret), "X-Hub-Signature-256", "sha256="+hmacHex(sha256.New, testSecret, fluxBodyOf(t, succeeded))), "X-Signature"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "malformed JSON",
			req:        fluxBody([]byte(`{"involvedObject": {"kind": "Kustomization"`), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "timestamp not a time",
			req:        fluxBody([]byte(`{"involvedObject":{"kind":"Kustomization","name":"a","namespace":"b"},"reason":"ReconciliationSucceeded","timestamp":"yesterday"}`), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "involvedObject without a name",
			req:        flux(t, noName, testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "outcome without a revision",
			req:        flux(t, fluxEvent("ReconciliationSucceeded", eventv1.EventSeverityInfo, "", "done"), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "short commit",
			req:        flux(t, withMeta(succeeded, "revision", "main@sha1:"+testCommit[:12]), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "branch name only",
			req:        flux(t, withMeta(succeeded, "revision", "main"), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "an OCI digest without an origin revision is no commit",
			req:        flux(t, withMeta(succeeded, "revision", "latest@sha256:"+strings.Repeat("ab", 32)), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "a 40-character non-hex commit",
			req:        flux(t, withMeta(succeeded, "revision", "main@sha1:"+strings.Repeat("z", 40)), testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "outcome without a timestamp",
			req:        flux(t, noTime, testSecret),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "oversized body",
			req:        chunked(fluxBody(append(fluxBodyOf(t, succeeded), bytes.Repeat([]byte(" "), int(DefaultMaxBodyBytes))...), testSecret)),
			wantStatus: http.StatusRequestEntityTooLarge, wantResult: ResultTooLarge,
		},
		{
			name:       "GET",
			req:        request{method: http.MethodGet, path: "/hooks/flux"},
			wantStatus: http.StatusMethodNotAllowed, wantResult: ResultMethodNotAllowed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDeploymentRequest(t, tc.req, tc.wantStatus, ProviderFlux, tc.wantResult, tc.want)
		})
	}
}

func fluxBodyOf(t testing.TB, e eventv1.Event) []byte {
	t.Helper()
	return flux(t, e, testSecret).body
}

// checkDeploymentRequest sends one request through a real server and checks
// the status, the metric and the one report handed over, if any.
func checkDeploymentRequest(t *testing.T, req request, wantStatus int, provider, wantResult string, want *deployments.Report) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(NewHandler(Options{Secret: testSecret, OnEvent: rec.event, Metrics: rec.metric, Logger: testr.New(t)}))
	defer srv.Close()
	resp := send(t, srv, req)
	if resp.StatusCode != wantStatus {
		t.Errorf("status = %d, want %d", resp.StatusCode, wantStatus)
	}
	if diff := cmp.Diff([]string{provider + " " + wantResult}, rec.metrics()); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	var wantEvents []Event
	if want != nil {
		wantEvents = []Event{{Provider: provider, Kind: KindDeployment, Deployment: want}}
	}
	if diff := cmp.Diff(wantEvents, rec.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// argoNotifications is the part of examples/argocd/notifications.yaml Argo
// CD reads: the webhook service, the template and the trigger.
type argoNotifications struct {
	service struct {
		URL     string `json:"url"`
		Headers []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"headers"`
	}
	method string
	body   *template.Template
}

func readArgoNotifications(t testing.TB) argoNotifications {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(argoNotificationsFile))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatalf("%s: %v", argoNotificationsFile, err)
	}
	var n argoNotifications
	if err := yaml.UnmarshalStrict([]byte(cm.Data["service.webhook.vectorflow"]), &n.service); err != nil {
		t.Fatalf("%s: service.webhook.vectorflow: %v", argoNotificationsFile, err)
	}
	var tmpl struct {
		Webhook map[string]struct {
			Method string `json:"method"`
			Body   string `json:"body"`
		} `json:"webhook"`
	}
	if err := yaml.UnmarshalStrict([]byte(cm.Data["template.vectorflow-report"]), &tmpl); err != nil {
		t.Fatalf("%s: template.vectorflow-report: %v", argoNotificationsFile, err)
	}
	hook, ok := tmpl.Webhook["vectorflow"]
	if !ok || hook.Body == "" {
		t.Fatalf("%s: template.vectorflow-report has no webhook.vectorflow.body", argoNotificationsFile)
	}
	n.method = hook.Method
	// Argo CD renders with text/template and Sprig's functions; toJson is
	// the one the template uses, and Sprig's is json.Marshal.
	n.body, err = template.New("vectorflow-report").Funcs(template.FuncMap{"toJson": func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}}).Parse(hook.Body)
	if err != nil {
		t.Fatalf("%s: template.vectorflow-report body: %v", argoNotificationsFile, err)
	}
	return n
}

// argoApp is the Application in testdata, as Argo CD hands it to templates
// (an unstructured object), with status fields replaced.
func argoApp(t testing.TB, set map[string]any) map[string]any {
	t.Helper()
	var app map[string]any
	if err := json.Unmarshal(fixture(t, "argocd-application.json"), &app); err != nil {
		t.Fatal(err)
	}
	for path, v := range set {
		m := app
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			m = m[k].(map[string]any)
		}
		if v == nil {
			delete(m, keys[len(keys)-1])
		} else {
			m[keys[len(keys)-1]] = v
		}
	}
	return app
}

var argoSecretRef = regexp.MustCompile(`[$][\w-]+`)

// argocd renders the example's template for app and sends it the way Argo
// CD's webhook service does: the method, the service URL's path, and the
// service headers with $key references replaced from
// argocd-notifications-secret.
func argocd(t testing.TB, n argoNotifications, app map[string]any, secret string) request {
	t.Helper()
	var body bytes.Buffer
	if err := n.body.Execute(&body, map[string]any{"app": app, "context": map[string]string{}, "serviceType": "webhook", "recipient": ""}); err != nil {
		t.Fatalf("rendering the template: %v", err)
	}
	u, err := url.Parse(n.service.URL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for _, hd := range n.service.Headers {
		h.Set(hd.Name, argoSecretRef.ReplaceAllStringFunc(hd.Value, func(ref string) string {
			if ref == "$vectorflow-webhook-secret" {
				return secret
			}
			return ref
		}))
	}
	return request{method: n.method, path: u.Path, body: body.Bytes(), header: h}
}

func TestArgoCDNotifications(t *testing.T) {
	n := readArgoNotifications(t)
	at := time.Date(2026, 12, 1, 9, 25, 10, 0, time.UTC)
	report := func(outcome deployments.Outcome, reason, message string) *deployments.Report {
		return &deployments.Report{
			Deployment: v1alpha1.DeploymentReference{Kind: "Application", Name: "acme-dev", Namespace: "argocd"},
			Revision:   testCommit,
			Outcome:    outcome,
			Reason:     reason,
			Message:    message,
			At:         at,
			Channel:    deployments.ChannelArgoCD,
		}
	}
	health := func(status, message string) map[string]any {
		h := map[string]any{"status": status, "lastTransitionTime": "2026-12-01T09:25:03Z"}
		if message != "" {
			h["message"] = message
		}
		return h
	}
	const degraded = `Deployment "service-a" exceeded its progress deadline`

	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantResult string
		want       *deployments.Report
	}{
		{
			name:       "synced and healthy",
			req:        argocd(t, n, argoApp(t, nil), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: report(deployments.Healthy, "Healthy", "Argo CD Application argocd/acme-dev: sync status Synced, health Healthy"),
		},
		{
			name:       "synced and degraded, a quote in the message",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.health": health("Degraded", degraded)}), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: report(deployments.Failed, "Degraded", degraded),
		},
		{
			name: "degraded after the last comparison: the health change is when it was seen",
			req: argocd(t, n, argoApp(t, map[string]any{"status.health": map[string]any{"status": "Degraded", "message": degraded, "lastTransitionTime": "2026-12-01T09:27:41Z"}}),
				string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: func() *deployments.Report {
				r := report(deployments.Failed, "Degraded", degraded)
				r.At = time.Date(2026, 12, 1, 9, 27, 41, 0, time.UTC)
				return r
			}(),
		},
		{
			name:       "health lastTransitionTime not a time",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.health": map[string]any{"status": "Healthy", "lastTransitionTime": "later"}}), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "synced and missing",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.health": health("Missing", "")}), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: report(deployments.Failed, "Missing", "Argo CD Application argocd/acme-dev: sync status Synced, health Missing"),
		},
		{
			name:       "synced and progressing",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.health": health("Progressing", "Waiting for rollout to finish")}), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: report(deployments.Progressing, "Progressing", "Waiting for rollout to finish"),
		},
		{
			name: "out of sync and degraded blames no revision: the degraded one is still the old",
			req: argocd(t, n, argoApp(t, map[string]any{"status.sync.status": "OutOfSync", "status.health": health("Degraded", degraded)}),
				string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: report(deployments.Progressing, "OutOfSync", degraded),
		},
		{
			name:       "out of sync and healthy is not healthy at the new revision",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.sync.status": "OutOfSync"}), string(testSecret)),
			wantStatus: http.StatusAccepted, wantResult: ResultAccepted,
			want: report(deployments.Progressing, "OutOfSync", "Argo CD Application argocd/acme-dev: sync status OutOfSync, health Healthy"),
		},

		// Refused.
		{
			name:       "wrong token",
			req:        argocd(t, n, argoApp(t, nil), "guess"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "the secret reference left unresolved",
			req:        argocd(t, n, argoApp(t, nil), "$vectorflow-webhook-secret"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "no Authorization header",
			req:        without(argocd(t, n, argoApp(t, nil), string(testSecret)), "Authorization"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "a Flux signature is not the Argo CD token",
			req:        without(with(argocd(t, n, argoApp(t, nil), string(testSecret)), "X-Signature", "sha256="+hmacHex(sha256.New, testSecret, nil)), "Authorization"),
			wantStatus: http.StatusUnauthorized, wantResult: ResultUnauthorized,
		},
		{
			name:       "multi-source Application has no status.sync.revision",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.sync.revision": nil, "status.sync.revisions": []any{testCommit, testCommit}}), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "a Helm chart version is no commit",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.sync.revision": "1.4.2"}), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "no health",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.health": nil}), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "never reconciled",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.reconciledAt": nil}), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "reconciledAt not a time",
			req:        argocd(t, n, argoApp(t, map[string]any{"status.reconciledAt": "now"}), string(testSecret)),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "not JSON (a message template sent to the hook)",
			req:        withBody(argocd(t, n, argoApp(t, nil), string(testSecret)), []byte("Application acme-dev sync is Synced.")),
			wantStatus: http.StatusBadRequest, wantResult: ResultBadRequest,
		},
		{
			name:       "oversized body",
			req:        chunked(withBody(argocd(t, n, argoApp(t, nil), string(testSecret)), bytes.Repeat([]byte(" "), int(DefaultMaxBodyBytes)+1))),
			wantStatus: http.StatusRequestEntityTooLarge, wantResult: ResultTooLarge,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkDeploymentRequest(t, tc.req, tc.wantStatus, ProviderArgoCD, tc.wantResult, tc.want)
		})
	}
}

// The example sends what the handler needs to accept it: a POST to
// /hooks/argocd with "Authorization: Bearer $<key>".
func TestArgoCDExampleSendsTheBearerToken(t *testing.T) {
	n := readArgoNotifications(t)
	req := argocd(t, n, argoApp(t, nil), string(testSecret))
	if req.method != http.MethodPost || req.path != "/hooks/argocd" {
		t.Errorf("%s: template sends %s %s, want POST /hooks/argocd", argoNotificationsFile, req.method, req.path)
	}
	if got := req.header.Get("Authorization"); got != "Bearer "+string(testSecret) {
		t.Errorf("%s: Authorization = %q, want Bearer and the secret", argoNotificationsFile, got)
	}
}
