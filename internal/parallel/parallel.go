// Package parallel spreads independent work over the machine's cores.
package parallel

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls do for every index below n, on as many cores as there are 64
// indexes (a goroutine costs more than a few cheap calls), and returns when
// all are done. The calls must not depend on each other's effects.
func Each(n int, do func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	if workers <= 1 {
		for i := range n {
			do(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				do(i)
			}
		}()
	}
	wg.Wait()
}

// EachContext calls work for every index below n on as many goroutines as
// there are cores, for work that is slow on its own (a kustomize build, a
// file read and decode), and returns each call's error at its index. Once
// ctx is done no further call starts; the caller checks ctx.
func EachContext(ctx context.Context, n int, work func(i int) error) []error {
	errs := make([]error, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs[i] = work(i)
			}
		}()
	}
feed:
	for i := range n {
		if ctx.Err() != nil {
			break // a select would still pick a ready worker half the time
		}
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return errs
}
