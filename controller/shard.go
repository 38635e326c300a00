package controller

import (
	"context"
	"hash/fnv"
	"sync"

	"github.com/vectorflow-dev/vectorflow/source/webhook"
)

// ShardOf is the shard of a config repository among shards: FNV-1a of its
// normalized URL, modulo shards. Every spelling of one URL lands in the same
// shard, and the assignment never depends on which other repositories
// there are, so replicas agree on it without talking.
func ShardOf(url string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(webhook.NormalizeRepoURL(url)))
	return int(h.Sum32() % uint32(shards))
}

// InShard keeps the controllers of the repositories in shard.
func InShard(shard, shards int) func(*Controller) bool {
	return func(c *Controller) bool { return ShardOf(c.opts.URL, shards) == shard }
}

// URL is the config repository's URL, without credentials.
func (c *Controller) URL() string { return c.opts.URL }

// RunWhere runs the workers of the controllers keep accepts until ctx
// ends, and returns when they have stopped. A replica calls it once per
// shard it leads; the shards are disjoint, so no worker runs twice.
func (r *Runner) RunWhere(ctx context.Context, keep func(*Controller) bool) {
	var wg sync.WaitGroup
	for _, w := range r.workers {
		if !keep(w.c) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx, w)
		}()
	}
	wg.Wait()
}

// ReadyOnly makes Ready (and so /readyz) look only at the workers of the
// controllers keep accepts: those of the shards this replica leads. A
// replica leading none is ready: it stands by.
func (r *Runner) ReadyOnly(keep func(*Controller) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.only = keep
}

// Controllers are the runner's controllers, in the order given.
func (r *Runner) Controllers() []*Controller {
	out := make([]*Controller, len(r.workers))
	for i, w := range r.workers {
		out[i] = w.c
	}
	return out
}
