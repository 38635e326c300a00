package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// Metrics are vectorflow's Prometheus metrics. A nil *Metrics records
// nothing, so tests and the CLI need none.
type Metrics struct {
	reconcile  *prometheus.HistogramVec
	passErrors *prometheus.CounterVec
	promotions *prometheus.GaugeVec
	fetch      *prometheus.HistogramVec
	push       *prometheus.HistogramVec
	gitErrors  *prometheus.CounterVec
	webhooks   *prometheus.CounterVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconcile: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vectorflow_reconcile_duration_seconds", Help: "Duration of one reconcile pass of a repository.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"repository"}),
		passErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vectorflow_reconcile_errors_total", Help: "Reconcile passes that failed.",
		}, []string{"repository"}),
		promotions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vectorflow_promotions", Help: "Promotions on the state branch by state.",
		}, []string{"repository", "state"}),
		fetch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vectorflow_git_fetch_duration_seconds", Help: "Fetching and loading a config repository.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"repository"}),
		push: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vectorflow_git_push_duration_seconds", Help: "Pushing a state or promotion commit, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"repository"}),
		gitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vectorflow_git_errors_total", Help: "Failed git fetches and pushes (a rejected compare-and-swap is retried and counted).",
		}, []string{"repository", "op"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vectorflow_webhook_events_total", Help: "Webhook requests by provider and result.",
		}, []string{"provider", "result"}),
	}
	reg.MustRegister(m.reconcile, m.passErrors, m.promotions, m.fetch, m.push, m.gitErrors, m.webhooks)
	return m
}

// ObserveWebhook counts one webhook request.
func (m *Metrics) ObserveWebhook(provider, result string) {
	if m != nil {
		m.webhooks.WithLabelValues(provider, result).Inc()
	}
}

func (m *Metrics) observePass(repo string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.reconcile.WithLabelValues(repo).Observe(d.Seconds())
	if err != nil {
		m.passErrors.WithLabelValues(repo).Inc()
	}
}

func (m *Metrics) observeFetch(repo string, start, end time.Time, err error) {
	if m == nil {
		return
	}
	m.fetch.WithLabelValues(repo).Observe(end.Sub(start).Seconds())
	if err != nil {
		m.gitErrors.WithLabelValues(repo, "fetch").Inc()
	}
}

func (m *Metrics) observePush(repo string, start, end time.Time, err error) {
	if m == nil {
		return
	}
	m.push.WithLabelValues(repo).Observe(end.Sub(start).Seconds())
	if err != nil {
		m.gitErrors.WithLabelValues(repo, "push").Inc()
	}
}

func (m *Metrics) observePromotions(repo string, s *reconcilers.State) {
	if m == nil {
		return
	}
	counts := map[string]float64{}
	for _, st := range []string{"Waiting", "Ready", "InProgress", "Blocked", "Succeeded", "Failed", "Superseded"} {
		counts[st] = 0
	}
	for _, p := range s.Promotions {
		counts[string(reconcilers.DeriveState(p))]++
	}
	for st, n := range counts {
		m.promotions.WithLabelValues(repo, st).Set(n)
	}
}
