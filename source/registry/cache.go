package registry

import (
	"context"
	"errors"
	"sync"
	"time"
)

// flightCache reuses a fetched value for a TTL and lets concurrent callers
// of one key share a single fetch, so a registry sees one tags/list per
// repository however many components and reconciles ask at once. Failures
// are not cached: the next caller tries again.
type flightCache[V any] struct {
	ttl     time.Duration
	mu      sync.Mutex
	values  map[string]cached[V]
	flights map[string]*flight[V]
}

type cached[V any] struct {
	value V
	at    time.Time
}

// flight is a fetch in progress; done closes when value and err are set.
type flight[V any] struct {
	done  chan struct{}
	value V
	err   error
}

func newFlightCache[V any](ttl time.Duration) *flightCache[V] {
	return &flightCache[V]{ttl: ttl, values: map[string]cached[V]{}, flights: map[string]*flight[V]{}}
}

// get returns key's value: the cached one while younger than the TTL, the
// result of the fetch in flight, or a new fetch's. A waiter whose own
// context is live does not inherit the fetcher's cancellation: it fetches.
func (c *flightCache[V]) get(ctx context.Context, key string, now func() time.Time, fetch func(context.Context) (V, error)) (V, error) {
	for {
		c.mu.Lock()
		if v, ok := c.values[key]; ok && now().Sub(v.at) < c.ttl {
			c.mu.Unlock()
			return v.value, nil
		}
		if f, ok := c.flights[key]; ok {
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				var zero V
				return zero, ctx.Err()
			}
			if isCancellation(f.err) && ctx.Err() == nil {
				continue
			}
			return f.value, f.err
		}
		f := &flight[V]{done: make(chan struct{})}
		c.flights[key] = f
		c.mu.Unlock()

		f.value, f.err = fetch(ctx)

		c.mu.Lock()
		delete(c.flights, key)
		if f.err == nil {
			c.store(key, f.value, now())
		}
		c.mu.Unlock()
		close(f.done)
		return f.value, f.err
	}
}

func isCancellation(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// sweepAbove is the size past which store drops expired values, so a
// long-running process that resolved many repositories once stays small.
const sweepAbove = 1024

func (c *flightCache[V]) store(key string, value V, at time.Time) {
	if len(c.values) >= sweepAbove {
		for k, v := range c.values {
			if at.Sub(v.at) >= c.ttl {
				delete(c.values, k)
			}
		}
	}
	c.values[key] = cached[V]{value: value, at: at}
}
