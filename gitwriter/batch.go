package gitwriter

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
	"sync"
	"sync/atomic"
)

// branchKey names one branch of one remote: the unit of serialization.
type branchKey struct{ url, branch string }

// branchState serializes the writes to one remote branch and collects the
// Apply calls that arrive while a push is in flight, so they go out together
// in the next push.
type branchState struct {
	sem  chan struct{} // a mutex that a context can give up waiting on
	repo *repo
	// history indexes the promotion commits of the branch as this process
	// last saw it, so each batch reads only the commits that are new.
	history historyIndex

	qmu      sync.Mutex
	pending  []*applyRequest
	draining bool
}

type applyRequest struct {
	ctx     context.Context
	target  Target
	changes []Change

	done    chan struct{}
	results []Result
	err     error
}

func (w *Writer) branch(url, branch string) *branchState {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := branchKey{url, branch}
	st, ok := w.branches[k]
	if !ok {
		st = &branchState{sem: make(chan struct{}, 1), repo: newRepo(url, w.shared[url], w.made, w.receivers)}
		st.repo.held = w.heldLocked(url)
		w.branches[k] = st
	}
	return st
}

func (st *branchState) lock(ctx context.Context) error {
	select {
	case st.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (st *branchState) unlock() { <-st.sem }

// enqueue adds req to the branch's queue and, if no one is draining it,
// starts draining: each round takes everything queued and pushes it as one
// batch.
func (st *branchState) enqueue(w *Writer, req *applyRequest) {
	st.qmu.Lock()
	st.pending = append(st.pending, req)
	start := !st.draining
	st.draining = true
	st.qmu.Unlock()
	if start {
		go st.drain(w)
	}
}

func (st *branchState) drain(w *Writer) {
	for {
		st.qmu.Lock()
		batch := st.pending
		st.pending = nil
		if len(batch) == 0 {
			st.draining = false
			st.qmu.Unlock()
			return
		}
		st.qmu.Unlock()

		ctx, cancel := batchContext(batch)
		if err := st.lock(ctx); err != nil {
			for _, r := range batch {
				r.err = err
			}
		} else {
			w.runBatch(ctx, st, batch)
			st.unlock()
		}
		cancel()
		for _, r := range batch {
			close(r.done)
		}
	}
}

// batchContext lives until every caller in the batch has given up, so one
// caller's cancellation does not fail the others' writes.
func batchContext(batch []*applyRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	remaining := int32(len(batch))
	stops := make([]func() bool, 0, len(batch))
	for _, r := range batch {
		stops = append(stops, context.AfterFunc(r.ctx, func() {
			if atomic.AddInt32(&remaining, -1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// indexPushed brings the history index up to a tip this process just
// pushed, whose commits are all in memory: the next read of the branch
// (a pass deciding sequences, the next batch) then needs no fetch.
func (st *branchState) indexPushed(tip plumbing.Hash) {
	if st.history.current == nil {
		return // nobody reads this branch's promotions (the state branch)
	}
	_, _ = st.history.at(st.repo.s, tip) // on error the next read indexes again
}
