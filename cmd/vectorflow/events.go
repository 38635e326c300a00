package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/notify"
)

// eventFlags say where run sends its events.
type eventFlags struct {
	addr, namespace, notifyURL, notifySecretFile string
}

func (f *eventFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "events-addr", "", "Flux notification-controller event receiver URL (e.g. http://notification-controller.flux-system.svc.cluster.local./): promotion and stage events in Flux's event format, for Flux Alerts")
	fs.StringVar(&f.namespace, "events-namespace", "flux-system", "namespace of the objects events are about, what Flux Alerts' eventSources match")
	fs.StringVar(&f.notifyURL, "notify-url", "", "generic webhook receiver URL: the same events as JSON, signed with \"X-Signature: sha256=<hex HMAC-SHA256>\"")
	fs.StringVar(&f.notifySecretFile, "notify-secret-file", "", "file holding the HMAC key of --notify-url")
}

// eventsCloseTimeout bounds how long run waits at exit for queued events.
const eventsCloseTimeout = 30 * time.Second

// notifier returns the publisher the flags ask for, nil when none; close
// waits (bounded) for the queued events to go out.
func (f *eventFlags) notifier(log logr.Logger, reg prometheus.Registerer) (controller.EventPublisher, func(), error) {
	if f.addr == "" && f.notifyURL == "" {
		if f.notifySecretFile != "" {
			return nil, nil, fmt.Errorf("--notify-secret-file is given without --notify-url")
		}
		return nil, func() {}, nil
	}
	var secret []byte
	if f.notifyURL != "" {
		if f.notifySecretFile == "" {
			return nil, nil, fmt.Errorf("--notify-url needs --notify-secret-file: the receiver checks every event's signature with that secret")
		}
		data, err := os.ReadFile(f.notifySecretFile)
		if err != nil {
			return nil, nil, fmt.Errorf("read --notify-secret-file: %w", err)
		}
		secret = []byte(strings.TrimSpace(string(data)))
		if len(secret) == 0 {
			return nil, nil, fmt.Errorf("--notify-secret-file %s is empty: write the HMAC key the receiver checks signatures with", f.notifySecretFile)
		}
	}
	n, err := notify.New(notify.Options{EventsAddr: f.addr, NotifyURL: f.notifyURL, NotifySecret: secret,
		Namespace: f.namespace, Log: log.WithName("events"), Registerer: reg})
	if err != nil {
		return nil, nil, err
	}
	return n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), eventsCloseTimeout)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			log.Error(err, "events not sent")
		}
	}, nil
}
