package gitwriter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWriteBackoff: a writer that lost a race waits 50ms before its first
// retry, doubling per retry up to 2s, each wait spread by ±50% so that
// competing writers drift apart; and it retries a batch at most 10 times.
func TestWriteBackoff(t *testing.T) {
	ms := time.Millisecond
	want := []struct{ low, high time.Duration }{ // per retry: [low, high)
		{25 * ms, 75 * ms},
		{50 * ms, 150 * ms},
		{100 * ms, 300 * ms},
		{200 * ms, 600 * ms},
		{400 * ms, 1200 * ms},
		{800 * ms, 2400 * ms},
		{1000 * ms, 3000 * ms},
		{1000 * ms, 3000 * ms},
		{1000 * ms, 3000 * ms},
	}
	w, err := NewWriter(WriterOptions{Identity: Identity{Name: "vectorflow", Email: "vectorflow@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if w.opts.MaxAttempts != 10 {
		t.Errorf("default MaxAttempts %d, want 10", w.opts.MaxAttempts)
	}
	const samples = 2000
	lowest := make([]time.Duration, len(want))
	highest := make([]time.Duration, len(want))
	for s := 0; s < samples; s++ {
		b := w.opts.Backoff // each batch steps its own copy
		for i, bounds := range want {
			d := b.Step()
			if d < bounds.low || d >= bounds.high {
				t.Fatalf("retry %d waited %v, want [%v, %v)", i+1, d, bounds.low, bounds.high)
			}
			if s == 0 || d < lowest[i] {
				lowest[i] = d
			}
			highest[i] = max(highest[i], d)
		}
	}
	// The spread uses the whole range: within 5% of either end.
	for i, bounds := range want {
		span := bounds.high - bounds.low
		if lowest[i] > bounds.low+span/20 || highest[i] < bounds.high-span/20 {
			t.Errorf("retry %d: %d waits spread over [%v, %v], want most of [%v, %v)", i+1, samples, lowest[i], highest[i], bounds.low, bounds.high)
		}
	}
	if diff := cmp.Diff(writeBackoff, w.opts.Backoff); diff != "" {
		t.Errorf("the writer's steps changed the default backoff (-want +got):\n%s", diff)
	}
}
