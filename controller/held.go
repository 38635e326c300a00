package controller

import (
	"context"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// heldRun is a RunUntilStable whose writes to the config repository are
// held back (Options.HoldWrites): its first pass fetches, every later pass
// reads the branches where the run's own writes left them, and one push
// makes them all when the run settles. Nothing the world sees comes
// before that push: events wait for it, and a write it cannot hold (a
// promotion into another repository, a pull request) pushes what is held
// first.
type heldRun struct {
	// read is set once a pass of this run read the remote; config and
	// state are the commits the last pass read (a branch the run did not
	// write stays where the fetch found it).
	read          bool
	config, state plumbing.Hash
	// events are the events of the held state commits, published once
	// they land.
	events [][]reconcilers.Event
	// passes counts this run's passes; landed, those whose writes were
	// pushed.
	passes, landed int
}

// hold starts holding the config repository's writes; false when they
// cannot be (a plain directory, or a writer that does not share the
// loader's store).
func (c *Controller) hold() bool {
	if !c.opts.HoldWrites || c.shared == nil {
		return false
	}
	if err := c.opts.Writer.Hold(c.heldURL()); err != nil {
		c.opts.Log.V(1).Info("writes pushed as they are made", "why", err.Error())
		return false
	}
	c.held = &heldRun{}
	return true
}

// heldURL is the config repository as the writer names it.
func (c *Controller) heldURL() string { return c.remote(c.opts.URL).URL }

// load reads the config branch: fetched, or in a held run after its first
// pass at the commit the run's writes left (a fetch would bring back the
// remote's older tip). fetched is called once a fetch has brought the
// branches the pass reads, before the snapshot is resolved
// (Loader.LoadThen); a load that fetches nothing does not call it.
func (c *Controller) load(ctx context.Context, fetched func()) (*source.Snapshot, error) {
	c.loads++
	if c.held == nil || !c.held.read {
		return c.opts.Loader.LoadThen(ctx, c.opts.URL, c.opts.Branch, fetched)
	}
	commit := c.held.config
	if tip, ok := c.opts.Writer.Held(c.heldURL(), c.opts.Branch); ok {
		commit = tip
	}
	return c.opts.Loader.LoadAt(ctx, c.opts.URL, c.opts.Branch, commit)
}

// heldStateTip is where a held run's later pass reads the state branch.
func (c *Controller) heldStateTip() plumbing.Hash {
	if tip, ok := c.opts.Writer.Held(c.heldURL(), c.opts.StateBranch); ok {
		return tip
	}
	return c.held.state
}

// flushHeld pushes the held writes in one request and then publishes
// their events and uploads their vectors. A branch that moved meanwhile (a
// person pushed, an approver approved) refuses the push: the held writes
// are dropped with everything the passes remembered of them, holding
// starts again from a fetch, and the ConflictError tells the caller to
// decide again.
func (c *Controller) flushHeld(ctx context.Context) error {
	if c.held == nil {
		return nil
	}
	err := c.opts.Writer.Flush(ctx, c.remote(c.opts.URL), c.opts.StateBranch)
	if err != nil {
		if errors.Is(err, gitwriter.ErrConflict) {
			c.dropHeld(ctx)
			c.hold()
		}
		return err
	}
	c.held.landed = c.held.passes
	// The run wrote its commits without fetching, so no fetch packed them.
	if err := c.shared.Compact(ctx); err != nil {
		c.opts.Log.V(1).Info("object cache not compacted", "why", err.Error())
	}
	for _, events := range c.held.events {
		if c.opts.Events != nil {
			c.opts.Events.Publish(c.opts.Log, c.name, events)
		}
	}
	c.held.events = nil
	c.upload(ctx)
	return nil
}

// dropHeld forgets the held writes and stops holding: what the passes
// remembered of them (results not recorded yet, vectors to upload, the
// inputs of the last decision) goes too, as none of it landed. Pull
// requests opened are kept: the forge holds them.
func (c *Controller) dropHeld(ctx context.Context) {
	if c.held == nil {
		return
	}
	if err := c.opts.Writer.Drop(ctx, c.heldURL()); err != nil {
		c.opts.Log.Error(err, "dropping held writes")
	}
	c.held = nil
	c.results = map[string]reconcilers.Result{}
	c.uploads = map[string]upload{}
	c.inputs = ""
}

// releaseHeld stops holding after a flush.
func (c *Controller) releaseHeld() {
	if c.held == nil {
		return
	}
	c.opts.Writer.Release(c.heldURL())
	c.held = nil
}

// heldRun is the held run under way, nil when writes are pushed as made.
func (c *Controller) heldNow() *heldRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

// startsElsewhere reports whether a promotion of starts writes anywhere
// but the config branch: another repository, which a held run cannot
// hold, or another branch of the config repository, which the next pass
// reads through a fetch (a landscape's branch), so it must be pushed
// first.
func (c *Controller) startsElsewhere(snap *source.Snapshot, state *reconcilers.State, starts []string) bool {
	for _, name := range starts {
		p := state.Promotions[name]
		if p == nil {
			continue
		}
		ref, ok := snap.StageIndex[source.StageKey(p.Spec.Target.Landscape, p.Spec.Target.Name)]
		if ok && ref.Branch != "" && (c.remote(ref.URL).URL != c.heldURL() || ref.Branch != c.opts.Branch) {
			return true
		}
	}
	return false
}
