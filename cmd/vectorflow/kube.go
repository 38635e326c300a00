package main

import (
	"context"
	"os"

	fluxle "github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/kube"
)

// kubeFlags configure run on Kubernetes; none matters without --kubeconfig
// or a cluster to run in.
type kubeFlags struct {
	kubeconfig      string
	leaderElection  fluxle.Options
	leaseNamespace  string
	shards, shardID int
	mirrorNamespace string
}

func (f *kubeFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster to run on (Leases, the CRD mirror, deployment status); in a pod, its service account is used without it")
	// Flux's names and defaults, so one Secret and one set of flags fit
	// every controller of a cluster.
	f.leaderElection.BindFlags(fs)
	le := fs.Lookup("enable-leader-election")
	fs.VarPF(le.Value, "leader-elect", "", "the same as --enable-leader-election (controller-runtime's name)").NoOptDefVal = "true"
	_ = fs.SetAnnotation("leader-elect", flagAliasOf, []string{"enable-leader-election"})
	fs.StringVar(&f.leaseNamespace, "leader-election-namespace", "", "namespace of the shards' Leases (default: the pod's namespace)")
	fs.IntVar(&f.shards, "shards", 1, "how many shards the repositories are spread over, by a hash of their URL; each shard has its own Lease")
	fs.IntVar(&f.shardID, "shard-id", -1, "the shard this replica leads first (default: the ordinal at the end of a StatefulSet pod's name)")
	fs.StringVar(&f.mirrorNamespace, "mirror-namespace", "", "namespace to mirror the state branches into as custom resources, read-only (kubectl get vectorpromotions)")
}

func (f *kubeFlags) options() kube.Options {
	shardID := f.shardID
	if shardID < 0 {
		host, _ := os.Hostname()
		shardID = kube.Ordinal(host, f.shards)
	}
	return kube.Options{
		LeaderElection: f.leaderElection.Enable,
		Timing: kube.LeaseTiming{
			LeaseDuration: f.leaderElection.LeaseDuration, RenewDeadline: f.leaderElection.RenewDeadline,
			RetryPeriod: f.leaderElection.RetryPeriod, ReleaseOnCancel: f.leaderElection.ReleaseOnCancel,
		},
		Namespace:       f.leaseNamespace,
		Shards:          f.shards,
		ShardID:         shardID,
		MirrorNamespace: f.mirrorNamespace,
	}
}

// cluster is where run runs when it has a Kubernetes cluster.
type cluster struct {
	cfg  *rest.Config
	opts kube.Options
}

// cluster is the cluster to run on, nil without one (or with --once, which
// takes no Lease and mirrors nothing).
func (f *kubeFlags) cluster(once bool) (*cluster, error) {
	if once {
		return nil, nil
	}
	cfg, err := kube.RESTConfig(f.kubeconfig)
	if err != nil || cfg == nil {
		return nil, err
	}
	o := f.options()
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.MirrorNamespace != "" {
		o.Mirror = kube.NewMirror(o.MirrorNamespace)
	}
	return &cluster{cfg: cfg, opts: o}, nil
}

// observe is what the controllers hand their passes to: the mirror, when
// there is one.
func (c *cluster) observe() func(controller.Observed) {
	if c == nil || c.opts.Mirror == nil {
		return nil
	}
	return c.opts.Mirror.Observe
}

func (c *cluster) run(ctx context.Context, runner *controller.Runner, log logr.Logger) error {
	o := c.opts
	o.Log = log.WithName("kube")
	return kube.Run(ctx, c.cfg, o, runner)
}

// metricsRegistry is where the metrics go: on Kubernetes the manager's
// registry, else a registry of vectorflow's own; both with the Go and
// process collectors.
func metricsRegistry(c *cluster) interface {
	prometheus.Registerer
	prometheus.Gatherer
} {
	if c != nil {
		return kube.Registry()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
