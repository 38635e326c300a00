// Package parallel spreads independent work over the machine's cores.
package parallel

import (
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
