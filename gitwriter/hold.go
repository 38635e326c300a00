package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// held are the branch updates of one remote that the writer keeps back
// while it holds the remote (Hold): every push of a branch of it becomes a
// local move of the branch, and Flush makes them all at once. Branches
// under PromoteBranchPrefix are never held: a pull request is opened from
// them, so a forge must see them when they are written.
type held struct {
	mu sync.Mutex
	on bool
	// updates are by branch: old and base, the remote's tip when first
	// held (or last flushed), new where the held writes left it. A branch
	// stays here once flushed, with old at new, so its tip is still known
	// without a fetch.
	updates map[string]refUpdate
}

func (h *held) holds(branch string) bool {
	return h.on && !strings.HasPrefix(branch, PromoteBranchPrefix)
}

// pending reports whether branch has held commits the remote lacks.
func (h *held) pending(branch string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	u, ok := h.updates[branch]
	return ok && h.holds(branch) && u.old != u.new
}

// tip is where branch is while held: its newest held commit.
func (h *held) tip(branch string) (plumbing.Hash, bool) {
	if h == nil {
		return plumbing.ZeroHash, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	u, ok := h.updates[branch]
	if !h.holds(branch) || !ok {
		return plumbing.ZeroHash, false
	}
	return u.new, true
}

// keep records updates instead of pushing them when the remote is held; it
// reports whether it did. An update must start where the branch was left:
// the held tip, or the remote's own tip for a branch not held yet (this
// process just read it; the flush's compare-and-swap checks it is still
// there).
func (h *held) keep(updates []refUpdate) (bool, error) {
	if h == nil {
		return false, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	heldBranches := 0
	for _, u := range updates {
		if h.holds(u.branch) {
			heldBranches++
		}
	}
	switch heldBranches {
	case 0:
		return false, nil // pushed as always
	case len(updates):
	default:
		return true, fmt.Errorf("push of %d branches: only %d of them are held", len(updates), heldBranches)
	}
	for _, u := range updates {
		if prev, ok := h.updates[u.branch]; ok && prev.new != u.old {
			return true, fmt.Errorf("%w: held branch %s is at %s, expected %s", errBranchMoved, u.branch, hashOrNone(prev.new), hashOrNone(u.old))
		}
	}
	for _, u := range updates {
		if prev, ok := h.updates[u.branch]; ok {
			prev.new = u.new
			h.updates[u.branch] = prev
			continue
		}
		h.updates[u.branch] = refUpdate{branch: u.branch, old: u.old, new: u.new, base: u.old}
	}
	return true, nil
}

func (w *Writer) held(url string) *held {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.heldLocked(url)
}

func (w *Writer) heldLocked(url string) *held {
	h, ok := w.holds[url]
	if !ok {
		h = &held{updates: map[string]refUpdate{}}
		w.holds[url] = h
	}
	return h
}

// ErrCannotHold says the writer cannot hold a remote's pushes: it keeps the
// remote's branches in separate stores (no store is shared for it, see
// ShareStore), so one push could not carry them all.
var ErrCannotHold = errors.New("the remote's pushes cannot be held")

// Hold keeps back every push to the remote at url, except to pull-request
// branches, from now until Release or Drop: each write commits as always
// and moves the branch in this writer's copy, so the next write (and Held)
// builds on it, and nothing reaches the remote until Flush. A run that
// settles in several passes then makes one push instead of one a pass, and
// the world sees all of its commits at once or none of them.
func (w *Writer) Hold(url string) error {
	w.mu.Lock()
	objects, shared := w.shared[url]
	var apart []string // branches written before the store was shared
	for k, st := range w.branches {
		if s, ok := st.repo.s.(sharedStorage); k.url == url && (!ok || s.EncodedObjectStorer != objects) {
			apart = append(apart, k.branch)
		}
	}
	w.mu.Unlock()
	if !shared {
		return fmt.Errorf("%w: no store is shared for %s", ErrCannotHold, url)
	}
	if len(apart) > 0 {
		sort.Strings(apart)
		return fmt.Errorf("%w: branches %s of %s keep their objects apart", ErrCannotHold, strings.Join(apart, ", "), url)
	}
	h := w.held(url)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = true
	return nil
}

// Held is the tip of branch as the held writes to url left it (flushed or
// not), and whether there are any.
func (w *Writer) Held(url, branch string) (plumbing.Hash, bool) {
	return w.held(url).tip(branch)
}

// Flush pushes every held update of remote in one atomic request, each
// branch compared and swapped from the tip the remote had when it was
// first held: all of them land or none does. The remote stays held. A
// branch that moved meanwhile is a ConflictError and nothing is written:
// the caller drops the held writes (Drop) and starts again from a fetch. A
// server without atomic pushes gets one push a branch, last's last (the
// record of the others, which must never land before them).
func (w *Writer) Flush(ctx context.Context, remote Remote, last string) error {
	h := w.held(remote.URL)
	h.mu.Lock()
	defer h.mu.Unlock()
	updates := make([]refUpdate, 0, len(h.updates))
	for _, u := range h.updates {
		if u.old != u.new {
			updates = append(updates, u)
		}
	}
	if len(updates) == 0 {
		return nil
	}
	flushed := func(u refUpdate) {
		h.updates[u.branch] = refUpdate{branch: u.branch, old: u.new, new: u.new, base: u.new}
	}
	// The record last, so a push one branch at a time never lands it
	// before what it records.
	sort.Slice(updates, func(i, j int) bool {
		if (updates[i].branch == last) != (updates[j].branch == last) {
			return updates[j].branch == last
		}
		return updates[i].branch < updates[j].branch
	})
	w.mu.Lock()
	objects := w.shared[remote.URL]
	apart := w.apart[remote.URL]
	w.mu.Unlock()
	r := newRepo(remote.URL, objects, w.made, w.receivers)
	var err error
	if !apart {
		err = r.pushAtomic(ctx, remote, updates)
		if errors.Is(err, ErrNotTogether) {
			w.mu.Lock()
			w.apart[remote.URL] = true
			w.mu.Unlock()
			apart = true
		}
	}
	if apart {
		err = nil
		for i, u := range updates {
			if err = r.push(ctx, remote, u.branch, u.old, u.new, u.base); err != nil {
				updates = updates[i:]
				break
			}
			flushed(u)
		}
	}
	if err == nil {
		for _, u := range updates {
			flushed(u)
		}
		return nil
	}
	// Where are the branches now? An atomic push moved all or none.
	now, lerr := r.list(ctx, remote)
	var answered *answeredPush
	switch {
	case lerr != nil && errors.As(err, &answered):
		return &RemoteError{Op: "push", URL: remote.URL, Branch: updates[0].branch, Err: err}
	case lerr != nil:
		return &UncertainPushError{URL: remote.URL, Branch: updates[0].branch, Err: err}
	case landed(now, updates):
		for _, u := range updates {
			flushed(u)
		}
		return nil
	}
	for _, u := range updates {
		if now[u.branch] != u.old && now[u.branch] != u.new {
			return &ConflictError{URL: remote.URL, Branch: u.branch, Expected: u.old, Actual: now[u.branch]}
		}
	}
	if errors.As(err, &answered) {
		return &RemoteError{Op: "push", URL: remote.URL, Branch: updates[0].branch, Err: err}
	}
	return &UncertainPushError{URL: remote.URL, Branch: updates[0].branch, Err: err}
}

// Release stops holding url's pushes; what is still held stays in this
// writer's copy only (Flush first to keep it).
func (w *Writer) Release(url string) {
	h := w.held(url)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = false
	clear(h.updates)
}

// Drop forgets the held updates of url and stops holding it: each held
// branch is read from the remote again on its next write, and its
// promotion history is indexed afresh, as if the held commits had never
// been made.
func (w *Writer) Drop(ctx context.Context, url string) error {
	h := w.held(url)
	h.mu.Lock()
	branches := make([]string, 0, len(h.updates))
	for b := range h.updates {
		branches = append(branches, b)
	}
	clear(h.updates)
	h.on = false
	h.mu.Unlock()
	for _, b := range branches {
		st := w.branch(url, b)
		if err := st.lock(ctx); err != nil {
			return err
		}
		_ = st.repo.s.RemoveReference(trackingRef(b))
		st.history = historyIndex{}
		st.unlock()
	}
	return nil
}

// keep holds updates back when the remote is held, moving this copy's
// branches as a push would; it reports whether it did.
func (r *repo) keep(updates []refUpdate) (bool, error) {
	kept, err := r.held.keep(updates)
	if !kept || err != nil {
		return kept, err
	}
	for _, u := range updates {
		if err := r.s.SetReference(plumbing.NewHashReference(trackingRef(u.branch), u.new)); err != nil {
			return true, err
		}
	}
	return true, nil
}
