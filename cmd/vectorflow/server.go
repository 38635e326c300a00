package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/source/webhook"
)

// startServers serves webhooks on --listen and health and metrics on
// --metrics-listen (or --listen). Webhook events trigger an immediate pass
// of the repositories they concern.
func startServers(ctx context.Context, o runOptions, runner *controller.Runner, metrics *controller.Metrics, reg *prometheus.Registry, log logr.Logger) (*servers, error) {
	s := &servers{}
	if o.listen == "" && o.metricsListen == "" {
		return s, nil
	}
	ops := http.NewServeMux()
	ops.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	ops.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := runner.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	ops.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	if o.listen != "" {
		secret, err := readWebhookSecret(o.webhookSecretFile)
		if err != nil {
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("/hooks/", webhook.NewHandler(webhook.Options{
			Secret:  secret,
			Logger:  log.WithName("webhook"),
			Metrics: metrics.ObserveWebhook,
			OnEvent: func(e webhook.Event) { triggerFor(runner, e, log) },
		}))
		if o.metricsListen == "" {
			mux.Handle("/", ops)
		}
		if err := s.serve(ctx, o.listen, mux, log); err != nil {
			return nil, err
		}
	}
	if o.metricsListen != "" {
		if err := s.serve(ctx, o.metricsListen, ops, log); err != nil {
			s.shutdown()
			return nil, err
		}
	}
	return s, nil
}

// triggerFor asks for a pass of every repository the event concerns. It only
// signals the runner's workers, so the webhook answers at once.
func triggerFor(runner *controller.Runner, e webhook.Event, log logr.Logger) {
	n := 0
	for _, repo := range e.Repositories {
		n += runner.Trigger(repo, "")
	}
	for _, image := range e.Images {
		n += runner.Trigger("", image)
	}
	log.V(1).Info("webhook event", "provider", e.Provider, "kind", e.Kind, "repositories", e.Repositories,
		"images", e.Images, "triggered", n)
}

func (s *servers) serve(ctx context.Context, addr string, h http.Handler, log logr.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, BaseContext: func(net.Listener) context.Context { return ctx }, ReadHeaderTimeout: 10 * time.Second}
	s.list = append(s.list, srv)
	log.Info("listening", "address", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "server stopped", "address", addr)
		}
	}()
	return nil
}

func readWebhookSecret(file string) ([]byte, error) {
	if file == "" {
		return nil, fmt.Errorf("--listen serves webhooks, which need --webhook-secret-file (the HMAC key or token the providers send)")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read --webhook-secret-file: %w", err)
	}
	secret := strings.TrimRight(string(b), "\r\n")
	if secret == "" {
		return nil, fmt.Errorf("--webhook-secret-file %s is empty", file)
	}
	return []byte(secret), nil
}
