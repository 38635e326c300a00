// Package memo remembers the answers of pure functions that a process asks
// again and again: the same approver keys in thousands of configs, the
// same image names in every pass's checks.
package memo

import "sync"

// Bounded remembers values by key, at most Max of them (the last one put
// when Max is not positive). When full it forgets everything rather than
// grow or keep an order: what is asked next is mostly what was asked last,
// so the few answers lost are computed again once. Safe for concurrent use.
type Bounded[K comparable, V any] struct {
	Max int
	mu  sync.Mutex
	m   map[K]V
}

// Get returns the value remembered for key.
func (b *Bounded[K, V]) Get(key K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[key]
	return v, ok
}

// Put remembers v for key.
func (b *Bounded[K, V]) Put(key K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= b.Max {
		b.m = make(map[K]V)
	}
	b.m[key] = v
}

// Len is how many values are remembered.
func (b *Bounded[K, V]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}
