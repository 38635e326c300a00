package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestServerHandsFluxReportsToTheRunner: a signed Flux event posted to the
// real server reaches the runner's controller as a deployment report; an
// unsigned one is refused with 401 and reaches no one. An Argo CD
// notification with the bearer token is reported too.
func TestServerHandsFluxReportsToTheRunner(t *testing.T) {
	const secret = "hunter2"
	const commit = "5f1e7a9c3b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	reports := &logLines{}
	log := funcr.New(reports.add, funcr.Options{Verbosity: 1})
	log = logr.New(&addressSink{LogSink: log.GetSink(), addrs: addrs})

	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signer, err := gitwriter.LoadSigner(writeFile(t, t.TempDir(), "controller.asc", key.PrivateArmored), "", "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	// Never run: the report waits in its queue, and the server's answer
	// does not depend on a pass.
	ctl, err := controller.New(controller.Options{URL: "https://git.example.com/acme/deploy.git", Branch: "main", Writer: w, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	runner := controller.NewRunner(time.Hour, log, ctl)
	reg := prometheus.NewRegistry()
	metrics := controller.NewMetrics(reg)
	srv, err := startServers(ctx, runOptions{listen: "127.0.0.1:0", webhookSecretFile: writeFile(t, t.TempDir(), "secret", []byte(secret+"\n"))},
		runner, metrics, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.shutdown()
	var addr string
	select {
	case addr = <-addrs:
	case <-time.After(5 * time.Second):
		t.Fatal("the server logged no address")
	}

	body, err := json.Marshal(eventv1.Event{
		InvolvedObject:      corev1.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "acme-dev", APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
		Severity:            eventv1.EventSeverityInfo,
		Timestamp:           metav1.NewTime(time.Date(2026, 12, 1, 9, 30, 5, 0, time.UTC)),
		Message:             "Reconciliation finished in 1.2s, next run in 10m0s",
		Reason:              "ReconciliationSucceeded",
		Metadata:            map[string]string{eventv1.MetaRevisionKey: "main@sha1:" + commit},
		ReportingController: "kustomize-controller",
	})
	if err != nil {
		t.Fatal(err)
	}
	post := func(signature string) int {
		t.Helper()
		return postDeployHook(t, "http://"+addr+"/hooks/flux", body, "X-Signature", signature)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)

	if got := post(""); got != http.StatusUnauthorized {
		t.Errorf("unsigned event: status %d, want 401", got)
	}
	if got := post("sha256=" + hex.EncodeToString(mac.Sum(nil)[:31]) + "00"); got != http.StatusUnauthorized {
		t.Errorf("wrongly signed event: status %d, want 401", got)
	}
	if got := reports.matching("deployment report"); len(got) != 0 {
		t.Fatalf("a refused event was reported: %v", got)
	}
	if got := post("sha256=" + hex.EncodeToString(mac.Sum(nil))); got != http.StatusAccepted {
		t.Errorf("signed event: status %d, want 202", got)
	}
	got := reports.matching("deployment report")
	if len(got) != 1 {
		t.Fatalf("deployment reports logged: %v, want one", got)
	}
	for _, want := range []string{`"revision"="` + commit + `"`, `"outcome"="Healthy"`, `"controllers"=1`, `"name"="acme-dev"`} {
		if !strings.Contains(got[0], want) {
			t.Errorf("report %s lacks %s", got[0], want)
		}
	}
	argo := []byte(`{"metadata":{"name":"acme-dev","namespace":"argocd"},"status":{"sync":{"status":"Synced","revision":"` + commit +
		`"},"health":{"status":"Degraded","message":"Deployment \"service-a\" exceeded its progress deadline"},"reconciledAt":"2026-12-01T09:25:10Z"}}`)
	if got := postDeployHook(t, "http://"+addr+"/hooks/argocd", argo, "Authorization", "Bearer nope"); got != http.StatusUnauthorized {
		t.Errorf("Argo CD notification with a wrong token: status %d, want 401", got)
	}
	if got := postDeployHook(t, "http://"+addr+"/hooks/argocd", argo, "Authorization", "Bearer "+secret); got != http.StatusAccepted {
		t.Errorf("Argo CD notification: status %d, want 202", got)
	}
	got = reports.matching("deployment report")
	if len(got) != 2 {
		t.Fatalf("deployment reports logged: %v, want two", got)
	}
	for _, want := range []string{`"kind"="Application"`, `"outcome"="Failed"`, `"controllers"=1`} {
		if !strings.Contains(got[1], want) {
			t.Errorf("report %s lacks %s", got[1], want)
		}
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "vectorflow_webhook_events_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			counted[strings.Join(labels, " ")] = m.GetCounter().GetValue()
		}
	}
	if diff := cmp.Diff(map[string]float64{"flux accepted": 1, "flux unauthorized": 2, "argocd accepted": 1, "argocd unauthorized": 1}, counted); diff != "" {
		t.Errorf("vectorflow_webhook_events_total by provider and result (-want +got):\n%s", diff)
	}
}

func postDeployHook(t *testing.T, url string, body []byte, header, value string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if value != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// logLines collects what a funcr logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *logLines) matching(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, `"msg"="`+msg+`"`) {
			out = append(out, line)
		}
	}
	return out
}
