package parallel

import (
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
