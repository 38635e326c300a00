package registry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestFlightCacheDoesNotKeepFailures(t *testing.T) {
	c := newFlightCache[string](time.Minute)
	now := func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }
	fetches := 0
	results := []error{errors.New("registry down"), nil}
	fetch := func(context.Context) (string, error) {
		err := results[fetches]
		fetches++
		if err != nil {
			return "", err
		}
		return "sha256:ok", nil
	}
	if _, err := c.get(context.Background(), "k", now, fetch); err == nil {
		t.Fatal("first get: error = nil, want the fetch error")
	}
	for range 2 {
		if v, err := c.get(context.Background(), "k", now, fetch); err != nil || v != "sha256:ok" {
			t.Fatalf("get() = %q, %v; want sha256:ok", v, err)
		}
	}
	if fetches != 2 {
		t.Errorf("fetches = %d, want 2 (the failure retried once, the success reused)", fetches)
	}
}

func TestFlightCacheSweepsExpiredValues(t *testing.T) {
	c := newFlightCache[int](time.Minute)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i := range sweepAbove {
		c.store(fmt.Sprint(i), i, t0)
	}
	c.store("fresh", 1, t0.Add(30*time.Second))
	if len(c.values) != sweepAbove+1 {
		t.Fatalf("within the TTL: %d values, want %d", len(c.values), sweepAbove+1)
	}
	c.store("later", 2, t0.Add(2*time.Minute))
	if len(c.values) != 1 {
		t.Errorf("after the TTL: %d values, want only the new one", len(c.values))
	}
}

// BenchmarkSelectTag picks from a repository with many tags, most of them
// not in the range and some not versions, as a busy CI registry has.
func BenchmarkSelectTag(b *testing.B) {
	tags := make([]string, 0, 5000)
	for i := range 4500 {
		tags = append(tags, fmt.Sprintf("%d.%d.%d", i/300, i/20%15, i%20))
	}
	for i := range 500 {
		tags = append(tags, fmt.Sprintf("sha-%07x", i))
	}
	spec := ComponentVersion{Version: ">=7.3.0 <8.0.0"}
	b.ReportAllocs()
	for b.Loop() {
		if sel, err := SelectTag(tags, spec); err != nil || sel.Tag != "7.14.19" {
			b.Fatalf("SelectTag() = %+v, %v", sel, err)
		}
	}
}
