package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PromoteBranchPrefix is the namespace of branches vectorflow owns for
// pull-request promotions; only these are ever force-updated.
const PromoteBranchPrefix = "vectorflow/promote/"

// Remote is a git repository and the credentials to write to it
// (go-git's http.BasicAuth or ssh.PublicKeys).
type Remote struct {
	URL  string
	Auth transport.AuthMethod
}

// Target is a branch of a remote.
type Target struct {
	Remote Remote
	Branch string
}

// Change is one commit: semantic file edits and the message describing them.
type Change struct {
	// ID is the promotion name. When set, the message must carry it as its
	// Vectorflow-Promotion trailer, and the branch's history is the
	// ratchet (see History.Check): a commit of the same promotion with
	// another vector, or of a newer sequence of its config, refuses the
	// change with a *HistoryError; a commit of the same promotion and
	// vector is reported (Existing) when the edits would change nothing.
	ID string
	// Message builds the commit message from what the edits did.
	Message func(diffs []FileDiff) string
	Files   []FileEdit
	// Check, when set, is shown the whole repository tree as the commit
	// would have it, before the commit is made: on every re-application
	// after a lost race, and when the edits change nothing (the branch then
	// already holds that tree). An error drops the change as a *CheckError;
	// nothing of it is pushed.
	Check func(tree *object.Tree) error
}

// Result is what became of one Change.
type Result struct {
	ID string
	// Commit is the new commit; with Existing, the earlier commit of the same
	// promotion; with AlreadyApplied, the commit whose tree already had the
	// change.
	Commit plumbing.Hash
	// AlreadyApplied means the edits changed nothing, so no commit was made.
	AlreadyApplied bool
	// Existing means a commit of the same promotion and vector is on the
	// branch and the branch still holds what it wrote.
	Existing bool
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Identity is the author and committer.
	Identity Identity
	// Signer signs every commit; nil writes unsigned commits.
	Signer git.Signer
	// Clock stamps commits; default time.Now.
	Clock func() time.Time
	// MaxAttempts bounds pushes per batch when the branch keeps moving;
	// default 10.
	MaxAttempts int
	// Backoff spaces the retries of a push that lost a race; default
	// writeBackoff, 50ms doubling up to 2s, each wait spread by ±50%.
	Backoff wait.Backoff
}

// Writer commits to git remotes without a worktree: it fetches a branch into
// memory, edits blobs and trees, signs, and pushes without force. Writes to
// one remote branch are serialized and batched inside the process. A Writer
// is safe for concurrent use.
type Writer struct {
	opts WriterOptions

	mu       sync.Mutex
	branches map[branchKey]*branchState
	// shared are the object stores readers fetch into, by remote URL.
	shared map[string]storer.EncodedObjectStorer
	// apart are the remotes that offer no atomic push (ApplyAlong).
	apart map[string]bool
	// holds are the pushes kept back, by remote URL (Hold).
	holds map[string]*held
	// made lists what each commit of this writer wrote, for its push.
	made *madeCommits
	// receivers is what pushes learned of the remotes' receive-packs.
	receivers *receivers
}

// NewWriter returns a Writer with o's defaults filled in.
func NewWriter(o WriterOptions) (*Writer, error) {
	if o.Identity.Name == "" || o.Identity.Email == "" {
		return nil, errors.New("writer identity needs a name and an email (the commit author)")
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.Backoff == (wait.Backoff{}) {
		o.Backoff = writeBackoff
	}
	return &Writer{opts: o, branches: map[branchKey]*branchState{}, shared: map[string]storer.EncodedObjectStorer{}, apart: map[string]bool{}, holds: map[string]*held{}, made: newMadeCommits(),
		receivers: newReceivers()}, nil
}

// ShareStore makes the writer keep the objects of the remote at url in s,
// the store a reader (source.Repository) fetches that remote into, so a
// branch the reader just fetched is written on without being fetched
// again (see Saw). s must be safe for concurrent use: readers fetch into
// it while the writer writes. Branches the writer already used keep the
// store they had; a second store for the same URL is ignored.
func (w *Writer) ShareStore(url string, s storer.EncodedObjectStorer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.shared[url]; !ok && s != nil {
		w.shared[url] = s
	}
}

// Saw tells the writer that target's branch was just read at tip, a commit
// the store shared for its URL holds with its history: the next write
// builds on tip without a fetch, and the push's compare-and-swap finds out
// whether the branch moved since (then it fetches and retries as always).
// It reports whether the tip was taken; a tip the store does not hold is
// ignored.
func (w *Writer) Saw(ctx context.Context, target Target, tip plumbing.Hash) (bool, error) {
	if err := validTarget(target); err != nil {
		return false, err
	}
	st := w.branch(target.Remote.URL, target.Branch)
	if err := st.lock(ctx); err != nil {
		return false, err
	}
	defer st.unlock()
	return st.repo.saw(target.Branch, tip), nil
}

// SigningKey is the public key the writer signs commits with, in the shape
// of a TrustedKey's PublicKey; "" when it does not sign or its signer cannot
// say (a go-git Signer that is not ours).
func (w *Writer) SigningKey() string {
	if s, ok := w.opts.Signer.(interface{ PublicKey() string }); ok {
		return s.PublicKey()
	}
	return ""
}

// Apply commits changes, one commit each in order, on top of target's
// branch and pushes them in one push; concurrent Apply calls for the same
// branch are coalesced into the same push. When the branch moved, the edits
// are re-applied on the new tip and the push retried. Either every commit of
// the call is pushed or none is.
func (w *Writer) Apply(ctx context.Context, target Target, changes ...Change) ([]Result, error) {
	if err := validTarget(target); err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, nil
	}
	st := w.branch(target.Remote.URL, target.Branch)
	req := &applyRequest{ctx: ctx, target: target, changes: changes, done: make(chan struct{})}
	st.enqueue(w, req)
	select {
	case <-req.done:
		return req.results, req.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PushBranch commits change on top of base and pushes it to branch, a
// vectorflow/promote/ branch a pull request is opened from. It is
// idempotent: when base already holds the promotion, or branch already holds
// it with nothing left to change, that commit is returned as Existing.
// Otherwise branch is (re)created on base's tip, force-updated with a lease
// on the tip it had, since the same promotion is re-made there.
func (w *Writer) PushBranch(ctx context.Context, remote Remote, base, branch string, change Change) (Result, error) {
	if err := validTarget(Target{Remote: remote, Branch: base}); err != nil {
		return Result{}, err
	}
	if !strings.HasPrefix(branch, PromoteBranchPrefix) || branch == PromoteBranchPrefix {
		return Result{}, fmt.Errorf("promotion branch %q must be under %s: only those may be force-updated", branch, PromoteBranchPrefix)
	}
	st := w.branch(remote.URL, base)
	if err := st.lock(ctx); err != nil {
		return Result{}, err
	}
	defer st.unlock()
	if st.repo.held.pending(base) {
		// A pull request from it would carry commits the remote has not seen.
		return Result{}, fmt.Errorf("push %s: its base %s has held writes; flush them first", branch, base)
	}

	var last error
	backoff := w.opts.Backoff
	for attempt := 1; attempt <= w.opts.MaxAttempts; attempt++ {
		if attempt > 1 {
			if err := sleep(ctx, backoff.Step()); err != nil {
				return Result{}, err
			}
		}
		baseTip, err := st.repo.fetch(ctx, remote, base)
		if err != nil {
			return Result{}, err
		}
		if baseTip.IsZero() {
			return Result{}, &RemoteError{Op: "fetch", URL: remote.URL, Branch: base, Err: errors.New("the base branch does not exist")}
		}
		promoTip, err := st.repo.fetch(ctx, remote, branch)
		if err != nil {
			return Result{}, err
		}
		history, err := st.history.at(st.repo.s, baseTip)
		if err != nil {
			return Result{}, err
		}
		if !promoTip.IsZero() {
			if done, err := w.holdsChange(st.repo, promoTip, change); err != nil {
				return Result{}, err
			} else if done {
				return Result{ID: change.ID, Commit: promoTip, Existing: true}, nil
			}
		}
		res, head, err := w.commitChange(st.repo, baseTip, history, nil, change)
		if err != nil || res.AlreadyApplied || res.Existing {
			return res, targetError(err, Target{Remote: remote, Branch: base})
		}
		err = st.repo.push(ctx, remote, branch, promoTip, head, baseTip)
		if err == nil {
			return res, nil
		}
		switch st.repo.classifyPush(ctx, remote, branch, promoTip, head, err) {
		case pushLanded:
			return res, nil
		case pushRefused:
			return Result{}, &RemoteError{Op: "push", URL: remote.URL, Branch: branch, Err: err}
		}
		last = err
	}
	return Result{}, &RetriesExhaustedError{URL: remote.URL, Branch: branch, Attempts: w.opts.MaxAttempts, Err: last}
}

// CompareAndSwap writes files (nil content removes a file) as one commit on
// target's branch, only if its tip is expectedTip; the zero hash means the
// branch must not exist yet and is created. A moved tip is a ConflictError
// (errors.Is ErrConflict) and nothing is written: the caller re-reads and
// re-decides. It returns the new tip (the old one when nothing changed).
func (w *Writer) CompareAndSwap(ctx context.Context, target Target, expectedTip plumbing.Hash, files map[string][]byte, message string) (plumbing.Hash, error) {
	if err := validTarget(target); err != nil {
		return plumbing.ZeroHash, err
	}
	st := w.branch(target.Remote.URL, target.Branch)
	if err := st.lock(ctx); err != nil {
		return plumbing.ZeroHash, err
	}
	defer st.unlock()

	// When our copy already is at the expected tip, the push's own check on
	// the remote ref is the compare-and-swap; no fetch needed.
	tip, cached := st.repo.cachedTip(target.Branch)
	if !cached || tip != expectedTip || tip.IsZero() {
		var err error
		if tip, err = st.repo.fetch(ctx, target.Remote, target.Branch); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	conflict := func(actual plumbing.Hash) error {
		return &ConflictError{URL: target.Remote.URL, Branch: target.Branch, Expected: expectedTip, Actual: actual}
	}
	if tip != expectedTip {
		return plumbing.ZeroHash, conflict(tip)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	change := Change{Message: func([]FileDiff) string { return message }}
	for _, p := range paths {
		change.Files = append(change.Files, SetFile(p, files[p]))
	}
	res, head, err := w.commitChange(st.repo, tip, nil, nil, change)
	if err != nil || res.AlreadyApplied {
		return tip, err
	}
	err = st.repo.push(ctx, target.Remote, target.Branch, tip, head, tip)
	if err == nil {
		return head, nil
	}
	switch st.repo.classifyPush(ctx, target.Remote, target.Branch, tip, head, err) {
	case pushLanded:
		return head, nil
	case pushRefused:
		return plumbing.ZeroHash, &RemoteError{Op: "push", URL: target.Remote.URL, Branch: target.Branch, Err: err}
	case pushUncertain:
		return plumbing.ZeroHash, &UncertainPushError{URL: target.Remote.URL, Branch: target.Branch, Err: err}
	}
	actual, ferr := st.repo.fetch(ctx, target.Remote, target.Branch)
	if ferr != nil {
		actual = plumbing.ZeroHash
	}
	return plumbing.ZeroHash, conflict(actual)
}

// Read returns target's branch tip (zero when the branch does not exist)
// and the files under dir ("" for all), the starting point of a
// compare-and-swap.
func (w *Writer) Read(ctx context.Context, target Target, dir string) (plumbing.Hash, map[string][]byte, error) {
	if err := validTarget(target); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	st := w.branch(target.Remote.URL, target.Branch)
	if err := st.lock(ctx); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	defer st.unlock()
	tip, err := st.repo.fetch(ctx, target.Remote, target.Branch)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if tip.IsZero() {
		return tip, map[string][]byte{}, nil
	}
	c, err := object.GetCommit(st.repo.s, tip)
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("read commit %s of %s: %w", tip, target.Remote.URL, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("read tree of %s: %w", tip, err)
	}
	files, err := readTreeFiles(tree, dir)
	return tip, files, err
}

// History returns the promotion history of target's branch, read at least
// as far as tip (the commit a snapshot saw; zero: wherever the branch is
// now). It fetches only when this process has not read tip yet, so a pass
// over a branch that did not change costs no round trip and no walk.
func (w *Writer) History(ctx context.Context, target Target, tip plumbing.Hash) (*History, error) {
	if err := validTarget(target); err != nil {
		return nil, err
	}
	st := w.branch(target.Remote.URL, target.Branch)
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.unlock()
	if !tip.IsZero() && st.history.contains(tip) {
		return st.history.current, nil
	}
	// A tip a reader just fetched into the shared store is read there.
	fetched := tip
	if !st.repo.saw(target.Branch, tip) {
		var err error
		if fetched, err = st.repo.fetch(ctx, target.Remote, target.Branch); err != nil {
			return nil, err
		}
	}
	h, err := st.history.at(st.repo.s, fetched)
	if err != nil {
		return nil, fmt.Errorf("read the promotion history of branch %s of %s: %w", target.Branch, target.Remote.URL, err)
	}
	return h, nil
}

// splitAfter is how many lost races a batch of several requests takes
// before it is split in two.
const splitAfter = 3

// runBatch makes the commits of every request on one tip and pushes them
// together, retrying from a fresh fetch while the branch moves. The first
// try builds on the tip this process last saw, skipping the fetch: if the
// branch moved since, the push is refused and costs one round trip, the
// same as the fetch would have. A request whose edits fail is dropped from
// the batch with its error; the others still go out.
func (w *Writer) runBatch(ctx context.Context, st *branchState, batch []*applyRequest) {
	target := batch[0].target
	fail := func(err error) {
		for _, r := range batch {
			if r.err == nil {
				r.err, r.results = err, nil
			}
		}
	}
	useCache := true
	var last error
	backoff := w.opts.Backoff
	for attempt := 0; ; {
		tip, cached := plumbing.ZeroHash, false
		if useCache {
			tip, cached = st.repo.cachedTip(target.Branch)
		}
		if !cached {
			var err error
			if tip, err = st.repo.fetch(ctx, target.Remote, target.Branch); err != nil {
				fail(err)
				return
			}
		}
		useCache = false
		var history *History
		var err error
		if promotes(batch) {
			if history, err = st.history.at(st.repo.s, tip); err != nil {
				fail(err)
				return
			}
		}
		head := tip
		var pending []HistoryEntry // the batch's commits, not in history yet
		for _, r := range batch {
			r.results, r.err = nil, nil
			start, before := head, len(pending)
			for _, ch := range r.changes {
				res, next, err := w.commitChange(st.repo, head, history, &pending, ch)
				if err != nil {
					r.results, r.err, head, pending = nil, targetError(err, target), start, pending[:before]
					break
				}
				r.results, head = append(r.results, res), next
			}
		}
		if head == tip {
			if cached {
				continue // "nothing to do" must be checked against the remote
			}
			return
		}
		err = st.repo.push(ctx, target.Remote, target.Branch, tip, head, tip)
		if err == nil {
			st.indexPushed(head)
			return
		}
		switch st.repo.classifyPush(ctx, target.Remote, target.Branch, tip, head, err) {
		case pushLanded:
			st.indexPushed(head)
			return
		case pushRefused:
			fail(&RemoteError{Op: "push", URL: target.Remote.URL, Branch: target.Branch, Err: err})
			return
		case pushUncertain:
			// The commits may be on the branch: the caller's next attempt
			// reads it and finds them (Existing) or makes them again.
			fail(&UncertainPushError{URL: target.Remote.URL, Branch: target.Branch, Err: err})
			return
		}
		if cached {
			continue // our copy was stale, not a race: no wait, no attempt spent
		}
		last = err
		if attempt++; attempt >= splitAfter && len(batch) > 1 {
			// A neighbour that pushes faster than this batch is rebuilt
			// wins every race; halves are rebuilt faster and make progress.
			// Each request stays whole, so a caller's commits still go out
			// together or not at all.
			half := len(batch) / 2
			w.runBatch(ctx, st, batch[:half])
			w.runBatch(ctx, st, batch[half:])
			return
		}
		if attempt >= w.opts.MaxAttempts {
			fail(&RetriesExhaustedError{URL: target.Remote.URL, Branch: target.Branch, Attempts: attempt, Err: last})
			return
		}
		if err := sleep(ctx, backoff.Step()); err != nil {
			fail(err)
			return
		}
	}
}

// promotes reports whether any change of the batch is a promotion, the
// only kind the branch's history is read for.
func promotes(batch []*applyRequest) bool {
	for _, r := range batch {
		for _, ch := range r.changes {
			if ch.ID != "" {
				return true
			}
		}
	}
	return false
}

// commitChange makes change's commit on head. history is the branch's
// history at the tip the batch builds on, and pending the commits made on
// top of it so far (appended to); a nil history turns the promotion checks
// off. It returns the result and the new head.
func (w *Writer) commitChange(r *repo, head plumbing.Hash, history *History, pending *[]HistoryEntry, change Change) (Result, plumbing.Hash, error) {
	res := Result{ID: change.ID}
	headTree, err := treeOf(r, head)
	if err != nil {
		return Result{}, head, err
	}
	tree, diffs, err := r.trees.edit(headTree, change.ID, change.Files)
	if err != nil {
		return Result{}, head, err
	}
	if err := checkTree(r, tree, change); err != nil {
		return Result{}, head, err
	}
	unchanged := tree == headTree && !head.IsZero()
	if unchanged && change.ID == "" {
		res.Commit, res.AlreadyApplied = head, true
		return res, head, nil
	}
	msg, err := changeMessage(change, diffs)
	if err != nil {
		return Result{}, head, err
	}
	var trailers Trailers
	if change.ID != "" && history != nil {
		trailers, _ = ParseTrailers(msg) // changeMessage checked they parse
		var before []HistoryEntry
		if pending != nil {
			before = *pending
		}
		// An unchanged tree writes nothing, so only the identity is checked:
		// the overlay already says what the promotion would.
		earlier, err := history.Check(trailers, before, unchanged)
		if err != nil {
			return Result{}, head, err
		}
		if unchanged && earlier != nil {
			res.Commit, res.Existing = earlier.Commit, true
			return res, head, nil
		}
	}
	if unchanged {
		res.Commit, res.AlreadyApplied = head, true
		return res, head, nil
	}
	c, err := w.writeCommit(r, head, tree, msg)
	if err != nil {
		return Result{}, head, &SignError{Change: change.ID, Err: err}
	}
	r.made.add(c, head, r.trees.written, r.trees.replaced)
	noteVersions(r.s, r.trees.replaced)
	if pending != nil && change.ID != "" {
		*pending = append(*pending, entryOf(trailers, c))
	}
	res.Commit = c
	return res, c, nil
}

// checkTree shows change's Check the edited tree.
func checkTree(r *repo, tree plumbing.Hash, change Change) error {
	if change.Check == nil {
		return nil
	}
	if tree.IsZero() {
		return &CheckError{Change: change.ID, Err: errors.New("the edits leave the repository empty")}
	}
	t, err := object.GetTree(r.s, tree)
	if err != nil {
		return fmt.Errorf("read edited tree %s: %w", tree, err)
	}
	if err := change.Check(t); err != nil {
		return &CheckError{Change: change.ID, Err: err}
	}
	return nil
}

// targetError names the branch in a *HistoryError.
func targetError(err error, target Target) error {
	var h *HistoryError
	if errors.As(err, &h) && h.Branch == "" {
		h.URL, h.Branch = target.Remote.URL, target.Branch
	}
	return err
}

// holdsChange reports whether tip is a commit of change whose tree already
// has everything change would write.
func (w *Writer) holdsChange(r *repo, tip plumbing.Hash, change Change) (bool, error) {
	c, err := object.GetCommit(r.s, tip)
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", tip, err)
	}
	if t, ok := ParseTrailers(c.Message); !ok || t.Promotion != change.ID {
		return false, nil
	}
	tree, _, err := r.trees.edit(c.TreeHash, change.ID, change.Files)
	if err != nil {
		return false, err
	}
	return tree == c.TreeHash, nil
}

// writeCommit writes a (signed) commit object; only a signing failure can
// make it fail, because the storage is memory.
func (w *Writer) writeCommit(r *repo, parent, tree plumbing.Hash, message string) (plumbing.Hash, error) {
	sig := object.Signature{Name: w.opts.Identity.Name, Email: w.opts.Identity.Email, When: w.opts.Clock()}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if w.opts.Signer != nil {
		unsigned := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		s, err := w.opts.Signer.Sign(rd)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		c.PGPSignature = string(s)
	}
	obj := r.s.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.s.SetEncodedObject(obj)
}

// changeMessage builds the message and checks that it names the change's
// promotion, without which the idempotency check could never find it again.
func changeMessage(change Change, diffs []FileDiff) (string, error) {
	if change.Message == nil {
		return "", &EditError{Change: change.ID, Path: "(commit message)", Err: errors.New("the change has no message")}
	}
	msg := change.Message(diffs)
	if strings.TrimSpace(msg) == "" {
		return "", &EditError{Change: change.ID, Path: "(commit message)", Err: errors.New("the commit message is empty")}
	}
	if change.ID != "" {
		if t, ok := ParseTrailers(msg); !ok || t.Promotion != change.ID {
			return "", &EditError{Change: change.ID, Path: "(commit message)",
				Err: fmt.Errorf("the message must end with the trailer %s: %s", TrailerPromotion, change.ID)}
		}
	}
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg, nil
}

func treeOf(r *repo, commit plumbing.Hash) (plumbing.Hash, error) {
	if commit.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(r.s, commit)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	return c.TreeHash, nil
}

func validTarget(t Target) error {
	if t.Remote.URL == "" {
		return errors.New("the remote has no URL")
	}
	if t.Branch == "" || strings.HasPrefix(t.Branch, "refs/") {
		return fmt.Errorf("branch %q of %s must be a short branch name", t.Branch, t.Remote.URL)
	}
	return nil
}

// writeBackoff spreads retries of competing writers apart: 50ms doubling
// per attempt, capped at 2s, times a random factor in [0.5, 1.5). wait's
// jitter only adds, from d to d·(1+Jitter), so the base is half of that and
// the jitter 2; the cap is reached at the sixth step.
var writeBackoff = wait.Backoff{Duration: 25 * time.Millisecond, Factor: 2, Jitter: 2, Steps: 6, Cap: time.Second}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noteVersions tells a store that packs its objects itself (source's
// on-disk store, source.VersionNoter) which object the commit just made
// wrote in place of which, so it packs the older versions as deltas.
func noteVersions(s storer.EncodedObjectStorer, replaced map[plumbing.Hash]plumbing.Hash) {
	if shared, ok := s.(sharedStorage); ok {
		s = shared.EncodedObjectStorer
	}
	if n, ok := s.(interface {
		NoteVersions(map[plumbing.Hash]plumbing.Hash)
	}); ok && len(replaced) > 0 {
		n.NoteVersions(replaced)
	}
}
