package notify

import (
	"context"
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
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

var t0 = time.Date(2026, time.December, 1, 15, 0, 0, 0, time.UTC)

func succeeded() reconcilers.Event {
	return reconcilers.Event{Kind: "VectorPromotion", Name: "dev-to-test-4", Severity: reconcilers.SeverityInfo,
		Reason: "PromotionSucceeded", Action: reconcilers.ActionPromote, Message: "promoted vector app:1.2.3 to Stage test in Landscape main",
		Metadata: map[string]string{reconcilers.EventMetaRevision: "0123abcd", reconcilers.EventMetaVector: "app:1.2.3", reconcilers.EventMetaPromotion: "dev-to-test-4"}}
}

// collector is a receiver that records what it decoded, in order.
type collector struct {
	mu     sync.Mutex
	events []eventv1.Event
	bodies [][]byte
	heads  []http.Header
	got    chan struct{}
}

func newCollector() *collector { return &collector{got: make(chan struct{}, 100)} }

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var e eventv1.Event
	if err := json.Unmarshal(body, &e); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "not a Flux event", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.events, c.bodies, c.heads = append(c.events, e), append(c.bodies, body), append(c.heads, r.Header.Clone())
	c.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	c.got <- struct{}{}
}

func newNotifier(t *testing.T, o Options) (*Notifier, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer, o.Clock, o.Log = reg, func() time.Time { return t0 }, logr.Discard()
	if o.Backoff.Steps == 0 {
		o.Backoff = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 4}
	}
	n, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n, reg
}

func closeWithin(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFluxEventFormat: the notification-controller receives Flux's
// eventv1.Event, about our object, with metadata under our API group (the
// only keys notification-controller keeps).
func TestFluxEventFormat(t *testing.T) {
	recv := newCollector()
	srv := httptest.NewServer(recv)
	defer srv.Close()
	n, reg := newNotifier(t, Options{EventsAddr: srv.URL, Namespace: "flux-system"})
	n.Publish(logr.Discard(), "https://git.example/config.git", []reconcilers.Event{succeeded()})
	closeWithin(t, n)
	if len(recv.events) != 1 {
		t.Fatalf("received %d events, want 1", len(recv.events))
	}
	got := recv.events[0]
	got.ReportingInstance = ""
	want := eventv1.Event{
		InvolvedObject: corev1.ObjectReference{APIVersion: "vectorflow.dev/v1alpha1", Kind: "VectorPromotion", Name: "dev-to-test-4", Namespace: "flux-system"},
		Severity:       eventv1.EventSeverityInfo, Timestamp: metav1.NewTime(t0), Reason: "PromotionSucceeded", Action: "Promote",
		Message: "promoted vector app:1.2.3 to Stage test in Landscape main",
		Metadata: map[string]string{"vectorflow.dev/revision": "0123abcd", "vectorflow.dev/vector": "app:1.2.3",
			"vectorflow.dev/promotion": "dev-to-test-4", "vectorflow.dev/repository": "https://git.example/config.git"},
		ReportingController: "vectorflow",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	if s := recv.heads[0].Get(SignatureHeader); s != "" {
		t.Errorf("the notification-controller gets no signature, got %q", s)
	}
	if got := testutil.ToFloat64(n.counter.WithLabelValues("flux", "sent")); got != 1 {
		t.Errorf("sent counter %v, want 1", got)
	}
	_ = reg
}

// hmacReceiver checks X-Signature as a receiver behind Flux's generic-hmac
// provider does.
func hmacReceiver(secret string, next http.Handler, bad *int, mu *sync.Mutex) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig, ok := strings.CutPrefix(r.Header.Get("X-Signature"), "sha256=")
		got, err := hex.DecodeString(sig)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if !ok || err != nil || !hmac.Equal(got, mac.Sum(nil)) {
			mu.Lock()
			*bad++
			mu.Unlock()
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		next.ServeHTTP(w, r)
	})
}

// TestWebhookSignature: the generic receiver gets the same event, its
// metadata as notification-controller forwards it, signed; a receiver with
// another secret sees a bad signature, and a 401 is not retried.
func TestWebhookSignature(t *testing.T) {
	for _, tt := range []struct {
		name, receiverSecret string
		wantEvents, wantBad  int
	}{
		{"same secret", "s3cret", 1, 0},
		{"wrong secret", "other", 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recv := newCollector()
			var bad int
			var mu sync.Mutex
			srv := httptest.NewServer(hmacReceiver(tt.receiverSecret, recv, &bad, &mu))
			defer srv.Close()
			n, _ := newNotifier(t, Options{NotifyURL: srv.URL, NotifySecret: []byte("s3cret")})
			n.Publish(logr.Discard(), "", []reconcilers.Event{succeeded()})
			closeWithin(t, n)
			if len(recv.events) != tt.wantEvents || bad != tt.wantBad {
				t.Fatalf("events %d, bad signatures %d; want %d and %d", len(recv.events), bad, tt.wantEvents, tt.wantBad)
			}
			if tt.wantEvents == 1 {
				if diff := cmp.Diff(map[string]string{"revision": "0123abcd", "vector": "app:1.2.3", "promotion": "dev-to-test-4"}, recv.events[0].Metadata); diff != "" {
					t.Errorf("metadata (-want +got):\n%s", diff)
				}
			} else if got := testutil.ToFloat64(n.counter.WithLabelValues("webhook", "failed")); got != 1 {
				t.Errorf("failed counter %v, want 1", got)
			}
		})
	}
}

// TestRetries: a 5xx is retried with backoff until it passes; a duplicate
// (429, notification-controller's answer) is done.
func TestRetries(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	recv := newCollector()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		a := attempts
		mu.Unlock()
		if a <= 2 {
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		recv.ServeHTTP(w, r)
	}))
	defer srv.Close()
	n, _ := newNotifier(t, Options{EventsAddr: srv.URL})
	n.Publish(logr.Discard(), "", []reconcilers.Event{succeeded()})
	closeWithin(t, n)
	if attempts != 3 || len(recv.events) != 1 {
		t.Errorf("attempts %d, events %d; want 3 and 1", attempts, len(recv.events))
	}

	dup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		mu.Unlock()
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer dup.Close()
	attempts = 0
	n, _ = newNotifier(t, Options{EventsAddr: dup.URL})
	n.Publish(logr.Discard(), "", []reconcilers.Event{succeeded()})
	closeWithin(t, n)
	if attempts != 1 {
		t.Errorf("a duplicate was posted %d times, want 1", attempts)
	}
}

// TestPublishNeverBlocks: a receiver that hangs holds neither Publish nor
// the pass; what does not fit the queue is dropped and counted.
func TestPublishNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	n, _ := newNotifier(t, Options{EventsAddr: srv.URL, QueueSize: 2, HTTPClient: &http.Client{Timeout: 50 * time.Millisecond},
		Backoff: wait.Backoff{Duration: time.Millisecond, Steps: 1}})
	events := make([]reconcilers.Event, 10)
	for i := range events {
		events[i] = succeeded()
	}
	start := time.Now()
	n.Publish(logr.Discard(), "", events)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Publish took %v", d)
	}
	// The worker may have taken one off the queue already.
	if got := testutil.ToFloat64(n.counter.WithLabelValues("flux", "dropped")); got < 7 || got > 8 {
		t.Errorf("dropped %v events, want 7 or 8 of 10 with a queue of 2", got)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{}, "neither --events-addr nor --notify-url"},
		{Options{NotifyURL: "http://x/"}, "--notify-url needs --notify-secret-file"},
		{Options{EventsAddr: "notification-controller.flux-system"}, "want an http:// or https:// URL"},
	} {
		_, err := New(tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.o, err, tt.want)
		}
	}
}

// TestPublishAfterClose: events published after Close (a pass finishing
// during shutdown) are dropped and counted, never a panic.
func TestPublishAfterClose(t *testing.T) {
	srv := httptest.NewServer(newCollector())
	defer srv.Close()
	n, _ := newNotifier(t, Options{EventsAddr: srv.URL})
	closeWithin(t, n)
	n.Publish(logr.Discard(), "", []reconcilers.Event{succeeded(), succeeded()})
	if got := testutil.ToFloat64(n.counter.WithLabelValues("flux", "dropped")); got != 2 {
		t.Errorf("dropped %v, want 2", got)
	}
}
