package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Observed is what one pass read and decided: the config repository's
// snapshot and the state it wrote (or found unchanged). Views of the state
// (the Kubernetes mirror, the web view) are built from it; they must not
// change it.
type Observed struct {
	// Repository and Branch are the config repository's URL and branch,
	// as the controller has them.
	Repository, Branch string
	Snapshot           *source.Snapshot
	// State is what the pass decided. On a pass that decided nothing it is
	// the state the pass read, and nil when the pass refused the state
	// branch.
	State *reconcilers.State
	// Decided says the pass decided (and wrote the state if it changed).
	// A pass that found the inputs the last decision was made on, or a
	// state branch it does not trust, decides nothing: views of
	// decisions (the Kubernetes mirror) skip it; views of the branches
	// (the web view) learn from it that the controller is still reading.
	Decided bool
	// StateBranch is the state branch as the pass left it; nil when the
	// pass could not tell (the verdict on its own commit could not be
	// read).
	StateBranch *ObservedState
}

// ObservedState is the state branch as a pass left it: the commit it
// wrote, or the one it read when it wrote none.
type ObservedState struct {
	Tip plumbing.Hash
	// Files are the files at Tip, as the commit holds them; nil when the
	// verdict is not trusted: the controller reads nothing past a
	// refusal. The map is the observer's; no one changes the bytes.
	Files map[string][]byte
	// Verdict is Tip's, judged against the keys Signers identifies
	// (StateTrust.Keys): a view trusting other keys must judge the branch
	// itself. Refusal describes an untrusted verdict.
	Verdict trust.CommitVerdict
	Refusal string
	Signers string
}

// Keys identifies the trusted keys: two StateTrusts with equal Keys give
// every commit the same verdict.
func (t *StateTrust) Keys() string { return t.keys }

// observe hands a pass to Options.Observe, when set.
func (c *Controller) observe(o Observed) {
	if c.opts.Observe == nil {
		return
	}
	o.Repository, o.Branch = c.opts.URL, c.opts.Branch
	if o.StateBranch != nil {
		o.StateBranch.Signers = c.trust.keys
	}
	c.opts.Observe(o)
}

// observeRead hands over a pass that decided nothing new: the state branch
// at tip, which an earlier pass verified, with the files and the state this
// pass read (its own copies, which it no longer uses).
func (c *Controller) observeRead(snap *source.Snapshot, tip plumbing.Hash, files map[string][]byte, state *reconcilers.State) {
	if c.opts.Observe == nil {
		return
	}
	o := Observed{Snapshot: snap, State: state}
	if v, ok := c.verdictKnown(tip); ok && v.Trusted {
		o.StateBranch = &ObservedState{Tip: tip, Files: files, Verdict: v}
	}
	c.observe(o)
}

// observeRefused hands over a pass that refused the state branch at tip.
func (c *Controller) observeRefused(snap *source.Snapshot, tip plumbing.Hash) {
	if c.opts.Observe == nil {
		return
	}
	o := Observed{Snapshot: snap}
	if v, ok := c.verdictKnown(tip); ok && !v.Trusted {
		o.StateBranch = &ObservedState{Tip: tip, Verdict: v, Refusal: v.Refused.Describe(c.opts.StateBranch, v.LastTrusted)}
	}
	c.observe(o)
}

// observeDecided hands over a deciding pass: decided is its decision; the
// state branch is files at tip when the pass wrote nothing (commit is
// zero), else files changed by diff (nil deletes) at commit.
func (c *Controller) observeDecided(ctx context.Context, snap *source.Snapshot, decided *reconcilers.State, tip plumbing.Hash,
	files map[string][]byte, commit plumbing.Hash, diff map[string][]byte) {
	if c.opts.Observe == nil {
		return
	}
	o := Observed{Snapshot: snap, State: decided, Decided: true}
	after := maps.Clone(files)
	if !commit.IsZero() {
		tip = commit
		for p, data := range diff {
			if data == nil {
				delete(after, p)
			} else {
				after[p] = data
			}
		}
	}
	v, err := trust.CommitVerdict{Trusted: true}, error(nil) // the empty branch
	if !tip.IsZero() {
		v, err = c.verdictOfWritten(snap, tip)
	}
	switch {
	case err != nil:
		c.opts.Log.V(1).Info("the verdict on the state commit is not known yet; views read the branch themselves", "commit", tip.String(), "error", err.Error())
	case v.Trusted:
		o.StateBranch = &ObservedState{Tip: tip, Files: after, Verdict: v}
	default:
		o.StateBranch = &ObservedState{Tip: tip, Verdict: v, Refusal: v.Refused.Describe(c.opts.StateBranch, v.LastTrusted)}
	}
	c.observe(o)
}

// verdictOfWritten judges the state commit this pass wrote, from the
// store the pass read (the writer builds its commits there); never with a
// fetch, which would cost the pass a round trip for a view's sake: when
// the store does not hold the commit, the next pass tells.
func (c *Controller) verdictOfWritten(snap *source.Snapshot, commit plumbing.Hash) (trust.CommitVerdict, error) {
	if v, ok := c.trust.Known(commit); ok {
		return v, nil
	}
	if c.stateRepo == nil && c.shared != nil {
		c.stateRepo = c.shared
	}
	if c.stateRepo == nil {
		return trust.CommitVerdict{}, errors.New("no store holds the state branch yet")
	}
	if _, err := object.GetCommit(c.stateRepo.Storer(), commit); err != nil {
		return trust.CommitVerdict{}, fmt.Errorf("read the state commit from the pass's store: %w", err)
	}
	v, err := c.trust.Verify(c.stateRepo.Storer(), commit, snap.Configs)
	if err != nil {
		return trust.CommitVerdict{}, err
	}
	c.exportTrustMemo(commit, v)
	return v, nil
}

// verdictKnown is the verdict on a commit the pass verified (or the empty
// branch's).
func (c *Controller) verdictKnown(tip plumbing.Hash) (trust.CommitVerdict, bool) {
	if tip.IsZero() {
		return trust.CommitVerdict{Trusted: true}, true
	}
	return c.trust.Known(tip)
}
