// Package notify sends vectorflow's events out: to Flux's
// notification-controller (--events-addr) in Flux's event format, and to a
// generic webhook (--notify-url) as the same JSON signed with HMAC-SHA256.
//
// Sending never blocks or fails a pass: Publish puts the events on a bounded
// queue per receiver and returns; a worker posts them in order, retrying
// with backoff. An event that cannot be queued or delivered is logged and
// counted (vectorflow_notifications_total), never retried forever.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>", the form
// Flux's generic-hmac provider sends, so one receiver checks both.
const SignatureHeader = "X-Signature"

// ReportingController is the controller name on every event.
const ReportingController = "vectorflow"

// MetaRepository is the metadata key naming the config repository.
const MetaRepository = "repository"

// Options configure a Notifier; at least one of EventsAddr and NotifyURL.
type Options struct {
	// EventsAddr is the notification-controller's event receiver URL.
	EventsAddr string
	// NotifyURL is a generic webhook receiver, and NotifySecret the HMAC
	// key its requests are signed with (required with NotifyURL).
	NotifyURL    string
	NotifySecret []byte
	// Namespace is the involved objects' namespace: Flux Alerts match
	// event sources in their own namespace by default.
	Namespace string
	// QueueSize bounds the events waiting per receiver; default 256.
	QueueSize int
	// Backoff spaces the attempts of one event; default 5 attempts from
	// 1s, doubling.
	Backoff wait.Backoff
	// HTTPClient posts the events; default a client with a 10s timeout.
	HTTPClient *http.Client
	Clock      func() time.Time
	Log        logr.Logger
	// Registerer receives the notifications counter; nil registers none.
	Registerer prometheus.Registerer
}

// Notifier sends events to its receivers.
type Notifier struct {
	receivers []*receiver
	clock     func() time.Time
	counter   *prometheus.CounterVec
	wg        sync.WaitGroup
	// mu guards closed: Publish after Close drops instead of sending on a
	// closed queue.
	mu     sync.RWMutex
	closed bool
}

// receiver is one destination with its queue.
type receiver struct {
	name   string // "flux" or "webhook", the metric label
	url    string
	encode func(e item) ([]byte, error)
	sign   []byte
	queue  chan item
}

type item struct {
	repository string
	at         time.Time
	event      reconcilers.Event
}

// New returns a Notifier whose workers run until Close.
func New(o Options) (*Notifier, error) {
	if o.EventsAddr == "" && o.NotifyURL == "" {
		return nil, errors.New("notify: neither --events-addr nor --notify-url is set")
	}
	if o.NotifyURL != "" && len(o.NotifySecret) == 0 {
		return nil, errors.New("--notify-url needs --notify-secret-file: the receiver checks every event's signature with that secret")
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 256
	}
	if o.Backoff.Steps == 0 {
		o.Backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 5}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	n := &Notifier{clock: o.Clock, counter: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vectorflow_notifications_total",
		Help: "Events sent out by receiver (flux, webhook) and result (sent, failed, dropped).",
	}, []string{"receiver", "result"})}
	if o.Registerer != nil {
		if err := o.Registerer.Register(n.counter); err != nil {
			return nil, fmt.Errorf("notify: register metrics: %w", err)
		}
	}
	host, _ := os.Hostname()
	if o.EventsAddr != "" {
		if err := checkURL("--events-addr", o.EventsAddr); err != nil {
			return nil, err
		}
		n.receivers = append(n.receivers, &receiver{name: "flux", url: o.EventsAddr, queue: make(chan item, o.QueueSize),
			encode: func(it item) ([]byte, error) {
				return json.Marshal(FluxEvent(it.event, it.repository, o.Namespace, host, it.at, true))
			}})
	}
	if o.NotifyURL != "" {
		if err := checkURL("--notify-url", o.NotifyURL); err != nil {
			return nil, err
		}
		n.receivers = append(n.receivers, &receiver{name: "webhook", url: o.NotifyURL, sign: o.NotifySecret, queue: make(chan item, o.QueueSize),
			encode: func(it item) ([]byte, error) {
				return json.Marshal(FluxEvent(it.event, it.repository, o.Namespace, host, it.at, false))
			}})
	}
	for _, r := range n.receivers {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.work(r, o)
		}()
	}
	return n, nil
}

func checkURL(flag, u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("%s %q: want an http:// or https:// URL", flag, source.RedactURL(u))
	}
	return nil
}

// Publish queues the events of a repository for every receiver and returns
// at once; an event that does not fit a full queue is dropped, logged and
// counted.
func (n *Notifier) Publish(log logr.Logger, repository string, events []reconcilers.Event) {
	if n == nil {
		return
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	at := n.clock()
	for _, r := range n.receivers {
		if n.closed {
			n.counter.WithLabelValues(r.name, "dropped").Add(float64(len(events)))
			log.Error(errors.New("notifier closed"), "events dropped", "receiver", r.name, "count", len(events))
			continue
		}
		for _, e := range events {
			select {
			case r.queue <- item{repository: repository, at: at, event: e}:
			default:
				n.counter.WithLabelValues(r.name, "dropped").Inc()
				log.Error(errors.New("queue full"), "event dropped", "receiver", r.name, "kind", e.Kind, "name", e.Name, "reason", e.Reason)
			}
		}
	}
}

// Close stops taking events and waits until the queued ones are sent or
// ctx ends (run --once exits after its last pass).
func (n *Notifier) Close(ctx context.Context) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		for _, r := range n.receivers {
			close(r.queue)
		}
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("events not sent before exit: %w", ctx.Err())
	}
}

// work posts r's events in order until its queue is closed and empty.
func (n *Notifier) work(r *receiver, o Options) {
	for it := range r.queue {
		log := o.Log.WithValues("receiver", r.name, "kind", it.event.Kind, "name", it.event.Name, "reason", it.event.Reason)
		body, err := r.encode(it)
		if err == nil {
			err = n.deliver(r, o, body)
		}
		if err != nil {
			n.counter.WithLabelValues(r.name, "failed").Inc()
			log.Error(err, "event not sent")
			continue
		}
		n.counter.WithLabelValues(r.name, "sent").Inc()
		log.V(1).Info("event sent")
	}
}

// deliver posts body, retrying a network error or a 5xx with backoff. A
// 429 is the notification-controller saying it has this event already.
func (n *Notifier) deliver(r *receiver, o Options, body []byte) error {
	var last error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := wait.ExponentialBackoffWithContext(ctx, o.Backoff, func(ctx context.Context) (bool, error) {
		retry, err := post(ctx, o.HTTPClient, r.url, body, r.sign)
		if err == nil {
			return true, nil
		}
		last = err
		if !retry {
			return false, err
		}
		return false, nil
	})
	if wait.Interrupted(err) && last != nil {
		return fmt.Errorf("after %d attempts: %w", o.Backoff.Steps, last)
	}
	return err
}

// post sends one request; retry says whether a failure may pass.
func post(ctx context.Context, client *http.Client, url string, body, secret []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("post event to %s: %w", source.RedactURL(url), err)
	}
	req.Header.Set("Content-Type", "application/json")
	if len(secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(body, secret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return true, fmt.Errorf("post event to %s: %w", source.RedactURL(url), source.RedactError(err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode < 300, resp.StatusCode == http.StatusTooManyRequests:
		return false, nil
	case resp.StatusCode >= 500:
		return true, fmt.Errorf("post event to %s: %s: %s", source.RedactURL(url), resp.Status, strings.TrimSpace(string(msg)))
	default:
		return false, fmt.Errorf("post event to %s: %s: %s (not retried)", source.RedactURL(url), resp.Status, strings.TrimSpace(string(msg)))
	}
}

// Sign is the X-Signature value of body: "sha256=" and the hex HMAC-SHA256.
func Sign(body, secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// FluxEvent is e in Flux's event format. For the notification-controller
// (prefixed) every metadata key carries the API group, the only keys it
// keeps and forwards (without the prefix); a generic receiver gets them as
// notification-controller would forward them.
func FluxEvent(e reconcilers.Event, repository, namespace, instance string, at time.Time, prefixed bool) eventv1.Event {
	md := make(map[string]string, len(e.Metadata)+1)
	for k, v := range e.Metadata {
		md[k] = v
	}
	if repository != "" {
		md[MetaRepository] = repository
	}
	if prefixed {
		withGroup := make(map[string]string, len(md))
		for k, v := range md {
			withGroup[v1alpha1.GroupVersion.Group+"/"+k] = v
		}
		md = withGroup
	}
	return eventv1.Event{
		InvolvedObject: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: e.Kind, Name: e.Name, Namespace: namespace,
		},
		Severity:            e.Severity,
		Timestamp:           metav1.NewTime(at.UTC()),
		Message:             e.Message,
		Reason:              e.Reason,
		Action:              e.Action,
		Metadata:            md,
		ReportingController: ReportingController,
		ReportingInstance:   instance,
	}
}
