package controller

import (
	"context"
	"maps"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Observed is what one pass read and decided: the config repository's
// snapshot and the state it wrote (or found unchanged). Views of the state
// (the Kubernetes mirror, the web view) are built from it; they must not
// change it.
type Observed struct {
	// Repository is the config repository's URL, without credentials.
	Repository string
	Snapshot   *source.Snapshot
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
	// Read is the state branch as the pass left it: the commit it wrote,
	// or the one it read when it wrote none, that commit's files, what
	// they decode to (as any reader of the commit decodes them), and the
	// commit's verdict against the keys StateSigners names. When the
	// verdict is not trusted, only Tip, Verdict and Refusal are set: the
	// controller reads nothing past a refusal. Read is nil when the pass
	// could not tell (the verdict on its own commit could not be read).
	// Its maps and objects are the observer's: the controller keeps no
	// reference to them.
	Read *VerifiedState
	// StateSigners identifies the keys Read.Verdict was judged against
	// (StateTrust.Keys): a view trusting other keys must judge the branch
	// itself.
	StateSigners string
}

// Keys identifies the trusted keys: two StateTrusts with equal Keys give
// every commit the same verdict.
func (t *StateTrust) Keys() string { return t.keys }

// observe hands a pass to Options.Observe, when set.
func (c *Controller) observe(o Observed) {
	if c.opts.Observe == nil {
		return
	}
	o.Repository, o.StateSigners = c.opts.URL, c.trust.keys
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
	if v, ok := c.verdictKnown(tip); ok {
		o.Read = &VerifiedState{Tip: tip, Files: files, State: state, Verdict: v}
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
		o.Read = &VerifiedState{Tip: tip, Verdict: v, Refusal: v.Refused.Describe(c.opts.StateBranch, v.LastTrusted)}
	}
	c.observe(o)
}

// observeDecided hands over a deciding pass: decided is its decision; the
// state branch is files at tip when the pass wrote nothing (commit is
// zero), else files changed by diff at commit.
func (c *Controller) observeDecided(ctx context.Context, snap *source.Snapshot, decided *reconcilers.State, tip plumbing.Hash,
	files map[string][]byte, state *reconcilers.State, commit plumbing.Hash, diff map[string][]byte) {
	if c.opts.Observe == nil {
		return
	}
	o := Observed{Snapshot: snap, State: decided, Decided: true}
	if commit.IsZero() {
		if v, ok := c.verdictKnown(tip); ok {
			o.Read = &VerifiedState{Tip: tip, Files: maps.Clone(files), State: state, Verdict: v}
		}
		c.observe(o)
		return
	}
	v, err := c.verdictOf(ctx, snap, commit)
	if err != nil {
		c.opts.Log.V(1).Info("the state commit's verdict is not known yet; the views read the branch themselves", "commit", commit.String(), "error", err.Error())
		c.observe(o)
		return
	}
	read := &VerifiedState{Tip: commit, Verdict: v}
	if v.Trusted {
		read.Files, read.State = c.stateAfter(files, diff)
	} else {
		read.Refusal = v.Refused.Describe(c.opts.StateBranch, v.LastTrusted)
	}
	o.Read = read
	c.observe(o)
}

// verdictKnown is the verdict on a commit the pass verified (or the empty
// branch's).
func (c *Controller) verdictKnown(tip plumbing.Hash) (trust.CommitVerdict, bool) {
	if tip.IsZero() {
		return trust.CommitVerdict{Trusted: true}, true
	}
	return c.trust.Known(tip)
}

// stateAfter is the state branch's files after a commit changed files by
// diff (nil deletes), and what they decode to, as a copy the caller keeps.
// The codec knows every file: it decoded the ones read and encoded the ones
// written, so only the written files are decoded here, from their bytes,
// as any reader of the commit decodes them (times to the second, say),
// rather than taken from the objects that were encoded.
func (c *Controller) stateAfter(files, diff map[string][]byte) (map[string][]byte, *reconcilers.State) {
	after := maps.Clone(files)
	written := map[string][]byte{}
	for p, data := range diff {
		if data == nil {
			delete(after, p)
			continue
		}
		after[p], written[p] = data, data
	}
	state, _ := c.codec.Decode(after)
	fresh, _ := reconcilers.DecodeState(written)
	maps.Copy(state.Vectors, fresh.Vectors)
	maps.Copy(state.Promotions, fresh.Promotions)
	maps.Copy(state.Configs, fresh.Configs)
	maps.Copy(state.Templates, fresh.Templates)
	maps.Copy(state.Stages, fresh.Stages)
	maps.Copy(state.Approvals, fresh.Approvals)
	maps.Copy(state.StageVersions, fresh.StageVersions)
	maps.Copy(state.Usages, fresh.Usages)
	return after, state
}
