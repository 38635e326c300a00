package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
)

// Options configure vectorflow on Kubernetes.
type Options struct {
	// LeaderElection turns the shards' Leases on. Off, a replica runs the
	// shard ShardID (every repository with one shard) without asking.
	LeaderElection bool
	Timing         LeaseTiming
	// Namespace holds the Leases; default: the pod's namespace.
	Namespace string
	// Shards is how many shards the repositories are spread over (at
	// least 1); ShardID is this replica's own, -1 when it has none.
	Shards, ShardID int
	// Identity names this replica in the Leases; default: host name and a
	// random suffix.
	Identity string
	// MirrorNamespace, when set, is where the state branches are mirrored
	// as custom resources.
	MirrorNamespace string
	// Mirror receives the passes' observations (controller.Options.Observe)
	// when MirrorNamespace is set; see NewMirror.
	Mirror *Mirror
	Log    logr.Logger
}

// RESTConfig is the cluster to run on: the kubeconfig file when one is
// given, else the cluster the process runs in; nil when neither, and then
// vectorflow runs without Kubernetes. A KUBECONFIG variable alone does not
// count: a laptop's current cluster is not where to take Leases.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the in-cluster configuration (the pod's service account): %w", err)
	}
	return cfg, nil
}

// Check says what is wrong with o before anything starts.
func (o Options) Check() error {
	if o.Shards < 1 {
		return fmt.Errorf("--shards %d: want at least 1", o.Shards)
	}
	if o.ShardID >= o.Shards {
		return fmt.Errorf("--shard-id %d: the shards are 0 to %d (--shards %d)", o.ShardID, o.Shards-1, o.Shards)
	}
	if !o.LeaderElection && o.Shards > 1 && o.ShardID < 0 {
		return fmt.Errorf("--shards %d without --enable-leader-election needs --shard-id (or a StatefulSet pod name ending in the ordinal): which shard does this replica run?", o.Shards)
	}
	if o.LeaderElection {
		t := o.Timing
		if t.RetryPeriod <= 0 || t.RenewDeadline <= t.RetryPeriod || t.LeaseDuration <= t.RenewDeadline {
			return fmt.Errorf("leader election wants --leader-election-retry-period (%s) < --leader-election-renew-deadline (%s) < --leader-election-lease-duration (%s)",
				t.RetryPeriod, t.RenewDeadline, t.LeaseDuration)
		}
	}
	return nil
}

// Registry is where metrics go on Kubernetes: controller-runtime's, which
// its metrics server and the client's metrics use, with the Go and process
// collectors. controller-runtime registers both itself (all of the Go
// runtime's metrics); they are added here only where missing, as a second
// Go collector would clash with the first.
func Registry() ctrlmetrics.RegistererGatherer {
	have := map[string]bool{}
	if mfs, err := ctrlmetrics.Registry.Gather(); err == nil {
		for _, mf := range mfs {
			have[mf.GetName()] = true
		}
	}
	if !have["go_goroutines"] {
		ctrlmetrics.Registry.MustRegister(collectors.NewGoCollector())
	}
	if !have["process_cpu_seconds_total"] && !have["process_start_time_seconds"] {
		ctrlmetrics.Registry.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return ctrlmetrics.Registry
}

// Run starts a controller-runtime manager that runs the runner's workers
// (as the shards' Leases allow), the mirror and the deployment watches,
// until ctx ends; it returns once they have stopped.
func Run(ctx context.Context, cfg *rest.Config, o Options, runner *controller.Runner) error {
	if err := o.Check(); err != nil {
		return err
	}
	if o.Namespace == "" {
		o.Namespace = podNamespace()
	}
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = host + "_" + uuid.NewString()
	}
	log := o.Log
	// controller-runtime and client-go (the Lease elections) log through
	// vectorflow's logger, so one process writes one format.
	ctrl.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	shutdown := 30 * time.Second
	var cacheOpts cache.Options
	if o.Mirror != nil {
		// The mirror's kinds are read from its namespace only, what its
		// Role allows.
		cacheOpts.ByObject = map[client.Object]cache.ByObject{}
		for _, k := range mirroredKinds {
			cacheOpts.ByObject[k.newObject()] = cache.ByObject{Namespaces: map[string]cache.Config{o.Mirror.Namespace(): {}}}
		}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Cache:  cacheOpts,
		Scheme: scheme,
		Logger: log,
		// vectorflow serves /metrics, /healthz and /readyz itself, from
		// this manager's registry (Registry), beside the webhooks.
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &shutdown,
	})
	if err != nil {
		return fmt.Errorf("start the controller-runtime manager: %w", err)
	}

	owns := func(string) bool { return true }
	if o.LeaderElection {
		// Leases renewed through a client that gives up before the
		// renew deadline, as client-go advises: one hung request must not
		// cost the shard.
		leaseCfg := rest.CopyConfig(cfg)
		leaseCfg.Timeout = max(o.Timing.RenewDeadline/2, time.Second)
		clients, err := kubernetes.NewForConfig(rest.AddUserAgent(leaseCfg, "vectorflow-shards"))
		if err != nil {
			return err
		}
		s := newShardElector(runner, clients.CoordinationV1(), o.Namespace, o.Identity, o.Shards, o.ShardID, o.Timing, log.WithName("shards"))
		owns = s.Holds
		err = mgr.Add(s)
		if err != nil {
			return err
		}
		log.Info("campaigning for the shards' Leases", "namespace", o.Namespace, "identity", o.Identity,
			"shards", o.Shards, "ownShard", o.ShardID)
	} else {
		shard := max(o.ShardID, 0)
		keep := controller.InShard(shard, o.Shards)
		runner.ReadyOnly(keep)
		owns = func(url string) bool { return controller.ShardOf(url, o.Shards) == shard }
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			runner.RunWhere(ctx, keep)
			return nil
		})); err != nil {
			return err
		}
	}
	if o.Mirror != nil {
		if err := o.Mirror.start(mgr, owns, log.WithName("mirror")); err != nil {
			return err
		}
		log.Info("mirroring the state branches", "namespace", o.Mirror.Namespace())
	}
	if err := watchDeployments(mgr, runner, log.WithName("deployments")); err != nil {
		return err
	}
	log.Info("running on Kubernetes", "host", cfg.Host)
	return mgr.Start(ctx)
}

// podNamespace is the namespace of the pod's service account, or
// "vectorflow-system" out of a cluster.
func podNamespace() string {
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "vectorflow-system"
}
