package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/vectorflow-dev/vectorflow/controller"
)

// LeaseName is the Lease of a shard: whoever holds it reconciles the
// shard's repositories.
func LeaseName(shard int) string { return fmt.Sprintf("vectorflow-shard-%d", shard) }

// Ordinal is the shard a StatefulSet pod named like hostname leads first:
// the number after its last dash ("vectorflow-2" is 2), or -1 when the name
// ends in no number below shards (a Deployment's pod).
func Ordinal(hostname string, shards int) int {
	i := strings.LastIndex(hostname, "-")
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(hostname[i+1:])
	if err != nil || n < 0 || n >= shards {
		return -1
	}
	return n
}

// LeaseTiming is how Leases are held: Flux's flags and defaults.
type LeaseTiming struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ReleaseOnCancel gives the Leases up on shutdown, once the workers
	// have stopped, so another replica takes over at once rather than
	// after LeaseDuration.
	ReleaseOnCancel bool
}

// shardElector campaigns for the Lease of every shard, and runs the
// workers of a shard while it holds that shard's Lease. Its own shard (the
// pod's ordinal) it campaigns for at once, the others one lease duration
// later, so that replicas starting together each lead their own while any
// of them still takes over a dead replica's shard.
type shardElector struct {
	runner    *controller.Runner
	leases    coordinationv1client.LeasesGetter
	namespace string
	identity  string
	shards    int
	own       int // -1: no shard of its own; campaign for all at once
	timing    LeaseTiming
	log       logr.Logger
	held      []atomic.Bool
}

func newShardElector(runner *controller.Runner, leases coordinationv1client.LeasesGetter, namespace, identity string,
	shards, own int, timing LeaseTiming, log logr.Logger) *shardElector {
	s := &shardElector{runner: runner, leases: leases, namespace: namespace, identity: identity, shards: shards,
		own: own, timing: timing, log: log, held: make([]atomic.Bool, shards)}
	runner.ReadyOnly(func(c *controller.Controller) bool { return s.Holds(c.URL()) })
	return s
}

// Holds reports whether this replica leads the shard of repository url now.
func (s *shardElector) Holds(url string) bool {
	return s.held[controller.ShardOf(url, s.shards)].Load()
}

// Start campaigns until ctx ends, then returns once every worker stopped
// (and the Leases are released, with ReleaseOnCancel).
func (s *shardElector) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for shard := range s.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.campaign(ctx, shard)
		}()
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection is false: the shards' Leases are the election.
func (s *shardElector) NeedLeaderElection() bool { return false }

func (s *shardElector) campaign(ctx context.Context, shard int) {
	log := s.log.WithValues("shard", shard, "lease", s.namespace+"/"+LeaseName(shard))
	if s.own >= 0 && shard != s.own {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.timing.LeaseDuration):
		}
	}
	// The workers of the shard run under mu: a Lease lost and won again
	// starts them only once the previous run has stopped.
	var mu sync.Mutex
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:          s.lock(shard),
			LeaseDuration: s.timing.LeaseDuration,
			RenewDeadline: s.timing.RenewDeadline,
			RetryPeriod:   s.timing.RetryPeriod,
			Name:          LeaseName(shard),
			// Released by release below, after the workers stopped; the
			// elector's own release would come before.
			ReleaseOnCancel: false,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(leading context.Context) {
					mu.Lock()
					defer mu.Unlock()
					if leading.Err() != nil {
						return
					}
					s.held[shard].Store(true)
					log.Info("leading shard: reconciling its repositories")
					s.runner.RunWhere(leading, controller.InShard(shard, s.shards))
					s.held[shard].Store(false)
					log.Info("stopped leading shard: its workers stopped")
				},
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			log.Error(err, "cannot campaign for the shard")
			return
		}
		le.Run(ctx)
	}
	mu.Lock()
	defer mu.Unlock()
	if s.timing.ReleaseOnCancel {
		s.release(shard, log)
	}
}

func (s *shardElector) lock(shard int) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: LeaseName(shard), Namespace: s.namespace},
		Client:     s.leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.identity},
	}
}

// release gives the shard's Lease up if this replica holds it, as
// client-go's elector does: no holder, and a one-second lease.
func (s *shardElector) release(shard int, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timing.RenewDeadline)
	defer cancel()
	lock := s.lock(shard)
	rec, _, err := lock.Get(ctx)
	if err != nil || rec.HolderIdentity != s.identity {
		return
	}
	now := metav1.Now()
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	}); err != nil {
		log.Error(err, "could not release the shard's Lease; another replica takes over when it expires")
		return
	}
	log.Info("released the shard's Lease")
}
