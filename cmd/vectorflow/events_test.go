package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// eventReceiver is a receiver of Flux events: with a secret it checks the
// X-Signature header as a receiver behind Flux's generic-hmac provider does,
// and counts what it refused.
type eventReceiver struct {
	secret string
	mu     sync.Mutex
	events []eventv1.Event
	bad    int
}

func (r *eventReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secret != "" {
		sig, ok := strings.CutPrefix(req.Header.Get("X-Signature"), "sha256=")
		got, err := hex.DecodeString(sig)
		mac := hmac.New(sha256.New, []byte(r.secret))
		mac.Write(body)
		if !ok || err != nil || !hmac.Equal(got, mac.Sum(nil)) {
			r.bad++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}
	var e eventv1.Event
	if err := json.Unmarshal(body, &e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.events = append(r.events, e)
	w.WriteHeader(http.StatusAccepted)
}

// about returns the reasons of the events about one object, in order.
func (r *eventReceiver) about(kind, name string) (reasons []string, events []eventv1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			reasons, events = append(reasons, e.Reason), append(events, e)
		}
	}
	return reasons, events
}

// TestEventsOut: run --once over the real git server sends a promotion's
// events to Flux's notification-controller and to a signed webhook: the
// promotion waits for approval, an untrusted approval is refused, and it
// succeeds, in that order, with the promotion commit as the revision. A receiver holding another secret sees
// every signature as bad.
func TestEventsOut(t *testing.T) {
	f := newFlowFixture(t)
	flux, hook, wrong := &eventReceiver{}, &eventReceiver{secret: "hook-secret"}, &eventReceiver{secret: "not-the-secret"}
	fluxSrv, hookSrv, wrongSrv := httptest.NewServer(flux), httptest.NewServer(hook), httptest.NewServer(wrong)
	defer fluxSrv.Close()
	defer hookSrv.Close()
	defer wrongSrv.Close()
	secret := writeFile(t, t.TempDir(), "notify-secret", []byte("hook-secret\n"))
	run := func(hookURL string) {
		f.cli(t, "run", "--once", "--signing-key", f.controller, "--events-addr", fluxSrv.URL+"/",
			"--notify-url", hookURL, "--notify-secret-file", secret)
	}

	run(hookSrv.URL)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionWaiting)
	// Mallory is no approver: her approval is refused, an error event.
	f.pushApprovalFile(t, f.mallory, "approvals/dev-to-test-2/mallory.yaml", approvalYAML("dev-to-test-2", ps["dev-to-test-2"].Spec.Vector))
	run(hookSrv.URL)
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	run(hookSrv.URL)
	ps = f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSucceeded)
	commit := ps["dev-to-test-2"].Status.Commit

	for name, recv := range map[string]*eventReceiver{"flux": flux, "webhook": hook} {
		reasons, events := recv.about("VectorPromotion", "dev-to-test-2")
		if strings.Join(reasons, ",") != "WaitingForApproval,ApprovalRefused,PromotionSucceeded" {
			t.Fatalf("%s received events %q about dev-to-test-2, want WaitingForApproval, ApprovalRefused, PromotionSucceeded", name, reasons)
		}
		if refused := events[1]; refused.Severity != eventv1.EventSeverityError || !strings.Contains(refused.Message, "not one of the approvers") {
			t.Errorf("%s: ApprovalRefused event %+v, want severity error naming the untrusted key", name, refused)
		}
		done := events[2]
		key := "revision"
		if name == "flux" {
			key = "vectorflow.dev/revision" // notification-controller keeps only keys of the object's group
		}
		if got, _ := done.Metadata[key]; got != commit || done.Severity != eventv1.EventSeverityInfo ||
			done.InvolvedObject.APIVersion != "vectorflow.dev/v1alpha1" || done.InvolvedObject.Namespace != "flux-system" ||
			done.ReportingController != "vectorflow" {
			t.Errorf("%s: PromotionSucceeded event %+v, want revision %s, severity info, vectorflow.dev/v1alpha1 in flux-system", name, done, commit)
		}
		if reasons, _ := recv.about("VectorPromotion", "dev-to-test-1"); !strings.Contains(strings.Join(reasons, ","), "PromotionSuperseded") {
			t.Errorf("%s: events about dev-to-test-1 %q lack PromotionSuperseded", name, reasons)
		}
	}
	if hook.bad != 0 {
		t.Errorf("the receiver with the same secret refused %d signatures", hook.bad)
	}

	// Another template version makes a new promotion and new events; a
	// receiver with the wrong secret refuses every one of them.
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	run(wrongSrv.URL)
	if wrong.bad == 0 || len(wrong.events) != 0 {
		t.Errorf("the receiver with another secret saw %d bad signatures and accepted %d events; want some and none", wrong.bad, len(wrong.events))
	}
}
