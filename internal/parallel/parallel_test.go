package parallel

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000} {
		calls := make([]atomic.Int32, n)
		Each(n, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d called %d times", n, i, c)
			}
		}
	}
}

// A large batch runs on more than one goroutine when there are cores for
// it: the first of two calls waits for the second, which one goroutine
// would only start once the wait gave up.
func TestEachSpreadsLargeBatches(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core")
	}
	arrived := make(chan struct{})
	var first atomic.Bool
	Each(128, func(i int) {
		if i > 1 {
			return
		}
		if first.CompareAndSwap(false, true) {
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Error("the calls ran one after the other")
			}
			return
		}
		close(arrived)
	})
}

func TestEachContextReturnsEachError(t *testing.T) {
	errs := EachContext(context.Background(), 10, func(i int) error {
		if i%3 == 0 {
			return fmt.Errorf("index %d", i)
		}
		return nil
	})
	for i, err := range errs {
		if want := i%3 == 0; (err != nil) != want || want && err.Error() != fmt.Sprintf("index %d", i) {
			t.Errorf("index %d: error %v", i, err)
		}
	}
}

// Slow work runs two at a time even in a small batch: the first call
// waits for the second.
func TestEachContextSpreadsSmallBatches(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core")
	}
	arrived := make(chan struct{})
	var first atomic.Bool
	EachContext(context.Background(), 2, func(int) error {
		if first.CompareAndSwap(false, true) {
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Error("the calls ran one after the other")
			}
			return nil
		}
		close(arrived)
		return nil
	})
}

// Once ctx is done no further call starts.
func TestEachContextStopsWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	EachContext(ctx, 1000, func(int) error {
		if calls.Add(1) == 1 {
			cancel()
		}
		return nil
	})
	if c := calls.Load(); c > int32(runtime.GOMAXPROCS(0))+1 {
		t.Errorf("%d calls after ctx was done, want at most one per core", c)
	}
}
