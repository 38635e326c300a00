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

// serverLimits bound what one client can hold of a server. Without them a
// client sending a body one byte every few seconds holds its connection
// (and a file descriptor) forever, and a few hundred such clients starve
// /healthz and /readyz.
type serverLimits struct {
	ReadHeaderTimeout time.Duration // request line and headers
	ReadTimeout       time.Duration // the whole request, body included
	WriteTimeout      time.Duration // from the end of the headers to the end of the response
	IdleTimeout       time.Duration // a kept-alive connection between requests
	MaxHeaderBytes    int
	// MaxConcurrentHooks is how many webhook requests are handled at once;
	// one more is answered 503 at once, so the probes never wait behind them.
	MaxConcurrentHooks int
}

// defaultServerLimits: webhook bodies are at most a few MB and providers
// send them in well under a second; they retry on 503.
func defaultServerLimits() serverLimits {
	return serverLimits{
		ReadHeaderTimeout:  10 * time.Second,
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		IdleTimeout:        120 * time.Second,
		MaxHeaderBytes:     64 << 10,
		MaxConcurrentHooks: 32,
	}
}

// startServers serves webhooks on --listen and health and metrics on
// --metrics-listen (or --listen). Webhook events trigger an immediate pass
// of the repositories they concern.
func startServers(ctx context.Context, o runOptions, runner *controller.Runner, metrics *controller.Metrics, reg prometheus.Gatherer, log logr.Logger) (*servers, error) {
	return startServersWithLimits(ctx, o, defaultServerLimits(), runner, metrics, reg, log)
}

func startServersWithLimits(ctx context.Context, o runOptions, limits serverLimits, runner *controller.Runner, metrics *controller.Metrics, reg prometheus.Gatherer, log logr.Logger) (*servers, error) {
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
		mux.Handle("/hooks/", limitConcurrency(limits.MaxConcurrentHooks, webhook.NewHandler(webhook.Options{
			Secret:  secret,
			Logger:  log.WithName("webhook"),
			Metrics: metrics.ObserveWebhook,
			OnEvent: func(e webhook.Event) { triggerFor(runner, e, log) },
		})))
		if o.metricsListen == "" {
			for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
				mux.Handle(p, ops)
			}
		}
		if o.uiHandler != nil {
			mux.Handle("/", o.uiHandler)
		}
		if err := s.serve(ctx, o.listen, mux, limits, log); err != nil {
			return nil, err
		}
	}
	if o.metricsListen != "" {
		if err := s.serve(ctx, o.metricsListen, ops, limits, log); err != nil {
			s.shutdown()
			return nil, err
		}
	}
	return s, nil
}

// triggerFor asks for a pass of every repository the event concerns, or
// hands a deployer's report to the controllers. It only queues and signals
// the runner's workers, so the webhook answers at once.
func triggerFor(runner *controller.Runner, e webhook.Event, log logr.Logger) {
	if e.Deployment != nil {
		n := runner.ReportDeployment(*e.Deployment)
		log.V(1).Info("deployment report", "provider", e.Provider, "deployment", e.Deployment.Deployment,
			"revision", e.Deployment.Revision, "outcome", e.Deployment.Outcome, "controllers", n)
		return
	}
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

// limitConcurrency answers 503 at once when n requests are in h already:
// a flood of slow webhook requests waits for no one and holds no more.
func limitConcurrency(n int, h http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			// Close rather than read the unread body of a client that may
			// be sending it slowly.
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "5")
			http.Error(w, "too many webhook requests in progress; retry later", http.StatusServiceUnavailable)
		}
	})
}

func (s *servers) serve(ctx context.Context, addr string, h http.Handler, limits serverLimits, log logr.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
	}
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
