package gitwriter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
)

// Swap is a compare-and-swap of files on a branch, made along with a
// change of another branch of the same remote (ApplyAlong): the state
// commit that records a promotion's start, pushed with the promotion.
type Swap struct {
	Branch string
	// Expected is the tip the branch must have; zero: it must not exist.
	Expected plumbing.Hash
	// Files are written as one commit (nil content removes a file).
	Files   map[string][]byte
	Message string
}

// ErrNotTogether says ApplyAlong cannot push both branches in one atomic
// request (the writer does not share a store for the remote, or the server
// does not offer atomic pushes); nothing was written. The caller writes
// them one after the other instead.
var ErrNotTogether = errors.New("the branches cannot be pushed together")

// ApplyAlong commits change on target's branch and swap on another branch
// of the same remote and pushes both in one atomic request: both land or
// neither does. One request instead of two is what a promotion costs on a
// real network. When target's branch moved, change is re-applied on the
// new tip and the push retried, as Apply does; when swap's branch moved,
// nothing is written and the error is a ConflictError. It returns the
// change's result and swap's new tip (Expected when the files changed
// nothing). A change that needs no commit (already applied, or an earlier
// commit of the same promotion) still swaps. ErrNotTogether means nothing
// was written and the caller should write the branches apart.
func (w *Writer) ApplyAlong(ctx context.Context, target Target, change Change, swap Swap) (Result, plumbing.Hash, error) {
	if err := validTarget(target); err != nil {
		return Result{}, plumbing.ZeroHash, err
	}
	state := Target{Remote: target.Remote, Branch: swap.Branch}
	if err := validTarget(state); err != nil {
		return Result{}, plumbing.ZeroHash, err
	}
	if swap.Branch == target.Branch {
		return Result{}, plumbing.ZeroHash, fmt.Errorf("%w: the swap is on the target branch %s itself", ErrNotTogether, target.Branch)
	}
	w.mu.Lock()
	_, shared := w.shared[target.Remote.URL]
	apart := w.apart[target.Remote.URL]
	w.mu.Unlock()
	if !shared {
		return Result{}, plumbing.ZeroHash, fmt.Errorf("%w: no store is shared for %s", ErrNotTogether, target.Remote.URL)
	}
	if apart {
		return Result{}, plumbing.ZeroHash, fmt.Errorf("%w: %s does not offer atomic pushes", ErrNotTogether, target.Remote.URL)
	}
	st, sst := w.branch(target.Remote.URL, target.Branch), w.branch(target.Remote.URL, swap.Branch)
	// Always the target's lock first: Apply and CompareAndSwap take one
	// lock each, so this order cannot deadlock.
	if err := st.lock(ctx); err != nil {
		return Result{}, plumbing.ZeroHash, err
	}
	defer st.unlock()
	if err := sst.lock(ctx); err != nil {
		return Result{}, plumbing.ZeroHash, err
	}
	defer sst.unlock()
	if !sameObjects(st.repo, sst.repo) {
		return Result{}, plumbing.ZeroHash, fmt.Errorf("%w: the branches of %s keep their objects apart", ErrNotTogether, target.Remote.URL)
	}

	stateTip, cached := sst.repo.cachedTip(swap.Branch)
	if !cached || stateTip != swap.Expected || stateTip.IsZero() {
		var err error
		if stateTip, err = sst.repo.fetch(ctx, target.Remote, swap.Branch); err != nil {
			return Result{}, plumbing.ZeroHash, err
		}
	}
	conflict := func(actual plumbing.Hash) error {
		return &ConflictError{URL: target.Remote.URL, Branch: swap.Branch, Expected: swap.Expected, Actual: actual}
	}
	if stateTip != swap.Expected {
		return Result{}, plumbing.ZeroHash, conflict(stateTip)
	}
	paths := make([]string, 0, len(swap.Files))
	for p := range swap.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	stateChange := Change{Message: func([]FileDiff) string { return swap.Message }}
	for _, p := range paths {
		stateChange.Files = append(stateChange.Files, SetFile(p, swap.Files[p]))
	}
	stateRes, stateHead, err := w.commitChange(sst.repo, stateTip, nil, nil, stateChange)
	if err != nil {
		return Result{}, plumbing.ZeroHash, err
	}
	var updates []refUpdate
	if !stateRes.AlreadyApplied {
		updates = append(updates, refUpdate{branch: swap.Branch, old: stateTip, new: stateHead, base: stateTip})
	}

	useCache := true
	var last error
	backoff := w.opts.Backoff
	for attempt := 0; attempt < w.opts.MaxAttempts; {
		tip, cached := plumbing.ZeroHash, false
		if useCache {
			tip, cached = st.repo.cachedTip(target.Branch)
		}
		if !cached {
			if tip, err = st.repo.fetch(ctx, target.Remote, target.Branch); err != nil {
				return Result{}, plumbing.ZeroHash, err
			}
		}
		useCache = false
		var history *History
		if change.ID != "" {
			if history, err = st.history.at(st.repo.s, tip); err != nil {
				return Result{}, plumbing.ZeroHash, err
			}
		}
		res, head, err := w.commitChange(st.repo, tip, history, nil, change)
		if err != nil {
			// Nothing is pushed: the caller records the failure with the
			// swap, written alone.
			return Result{}, plumbing.ZeroHash, targetError(err, target)
		}
		all := updates
		if head != tip {
			all = append([]refUpdate{{branch: target.Branch, old: tip, new: head, base: tip}}, updates...)
		}
		if len(all) == 0 {
			return res, stateTip, nil
		}
		err = st.repo.pushAtomic(ctx, target.Remote, all)
		if err == nil {
			_ = sst.repo.s.SetReference(plumbing.NewHashReference(trackingRef(swap.Branch), stateHead))
			st.indexPushed(head)
			return res, stateHead, nil
		}
		if errors.Is(err, ErrNotTogether) {
			// Asked once per process: a server rarely gains the
			// capability while it runs.
			w.mu.Lock()
			w.apart[target.Remote.URL] = true
			w.mu.Unlock()
			return Result{}, plumbing.ZeroHash, err
		}
		// Where are the branches now? The atomic push moved both or neither.
		now, lerr := st.repo.list(ctx, target.Remote)
		var answered *answeredPush
		switch {
		case lerr != nil && errors.As(err, &answered):
			return Result{}, plumbing.ZeroHash, &RemoteError{Op: "push", URL: target.Remote.URL, Branch: target.Branch, Err: err}
		case lerr != nil:
			return Result{}, plumbing.ZeroHash, &UncertainPushError{URL: target.Remote.URL, Branch: target.Branch, Err: err}
		case landed(now, all):
			_ = sst.repo.s.SetReference(plumbing.NewHashReference(trackingRef(swap.Branch), stateHead))
			_ = st.repo.s.SetReference(plumbing.NewHashReference(trackingRef(target.Branch), head))
			st.indexPushed(head)
			return res, stateHead, nil
		case now[swap.Branch] != stateTip:
			return Result{}, plumbing.ZeroHash, conflict(now[swap.Branch])
		case now[target.Branch] == tip && errors.As(err, &answered) && !isMovedBranch(err):
			return Result{}, plumbing.ZeroHash, &RemoteError{Op: "push", URL: target.Remote.URL, Branch: target.Branch, Err: err}
		case now[target.Branch] == tip && !isMovedBranch(err):
			return Result{}, plumbing.ZeroHash, &UncertainPushError{URL: target.Remote.URL, Branch: target.Branch, Err: err}
		}
		// The target moved: re-apply on its new tip.
		if cached {
			continue // our copy was stale, not a race: no wait, no attempt spent
		}
		last = err
		attempt++
		if err := sleep(ctx, backoff.Step()); err != nil {
			return Result{}, plumbing.ZeroHash, err
		}
	}
	return Result{}, plumbing.ZeroHash, &RetriesExhaustedError{URL: target.Remote.URL, Branch: target.Branch, Attempts: w.opts.MaxAttempts, Err: last}
}

// sameObjects reports whether two repos keep their objects in one store.
func sameObjects(a, b *repo) bool {
	sa, ok1 := a.s.(sharedStorage)
	sb, ok2 := b.s.(sharedStorage)
	return ok1 && ok2 && sa.EncodedObjectStorer == sb.EncodedObjectStorer
}

// landed reports whether every update is what the remote's refs say.
func landed(now map[string]plumbing.Hash, updates []refUpdate) bool {
	for _, u := range updates {
		if now[u.branch] != u.new {
			return false
		}
	}
	return true
}

// refUpdate moves branch from old to new; the remote has base, which new
// was built on.
type refUpdate struct {
	branch         string
	old, new, base plumbing.Hash
}

// list is where the remote's branches are now, by short name.
func (r *repo) list(ctx context.Context, remote Remote) (map[string]plumbing.Hash, error) {
	refs, err := r.remote.ListContext(ctx, &git.ListOptions{Auth: remote.Auth})
	if err != nil {
		return nil, err
	}
	out := map[string]plumbing.Hash{}
	for _, ref := range refs {
		if ref.Name().IsBranch() {
			out[ref.Name().Short()] = ref.Hash()
		}
	}
	return out, nil
}

// pushAtomic pushes updates in one atomic request, each ref compared and
// swapped from its old tip. It reads the advertisement first (a cheap GET
// next to the push): a server that does not offer atomic pushes is not
// sent one (ErrNotTogether, nothing written), since it would apply some
// updates and refuse others; and a branch already elsewhere than its old
// tip is reported as moved without sending the pack.
func (r *repo) pushAtomic(ctx context.Context, remote Remote, updates []refUpdate) error {
	if kept, err := r.keep(updates); kept {
		return err
	}
	var objects []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	bases := map[plumbing.Hash]plumbing.Hash{}
	for _, u := range updates {
		objs, objBases, err := r.newObjects(u.new, u.base)
		if err != nil {
			return err
		}
		for _, h := range objs {
			if !seen[h] {
				seen[h] = true
				objects = append(objects, h)
			}
		}
		for older, newer := range objBases {
			if _, named := bases[older]; !named {
				bases[older] = newer
			}
		}
	}
	_, sess, err := receivePackSession(remote)
	if err != nil {
		return err
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	// Learned before anything else: the pushes one branch at a time that
	// follow a refusal of atomic pushes skip the advertisement.
	thin := r.receivers.advertised(remote.URL, adv.Capabilities)
	if !adv.Capabilities.Supports(capability.Atomic) || !adv.Capabilities.Supports(capability.ReportStatus) {
		return fmt.Errorf("%w: %s does not offer atomic pushes", ErrNotTogether, remote.URL)
	}
	refs, err := adv.AllReferences()
	if err != nil {
		return err
	}
	var messages bytes.Buffer
	req := updateRequest(adv.Capabilities, &messages)
	_ = req.Capabilities.Set(capability.Atomic)
	for _, u := range updates {
		dst := plumbing.NewBranchReferenceName(u.branch)
		now := plumbing.ZeroHash
		if ref, err := refs.Reference(dst); err == nil {
			now = ref.Hash()
		}
		if now != u.old {
			return fmt.Errorf("%w: %s is at %s, expected %s", errBranchMoved, dst, hashOrNone(now), hashOrNone(u.old))
		}
		req.Commands = append(req.Commands, &packp.Command{Name: dst, Old: u.old, New: u.new})
	}
	if err := r.sendPack(ctx, sess, req, objects, bases, thin, &messages); err != nil {
		return err
	}
	for _, u := range updates {
		r.made.forget(u.new, u.base)
		if err := r.s.SetReference(plumbing.NewHashReference(trackingRef(u.branch), u.new)); err != nil {
			return err
		}
	}
	return nil
}
