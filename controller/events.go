package controller

import (
	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// EventPublisher takes the events of a state commit (notify.Notifier). It
// must return at once: a receiver never holds a pass.
type EventPublisher interface {
	Publish(log logr.Logger, repository string, events []reconcilers.Event)
}

// publishEvents hands the events of the state commit just made, from the
// state before the pass to the state it wrote, to the publisher. It runs
// only after the commit landed, so no event announces a state that a lost
// compare-and-swap threw away.
func (c *Controller) publishEvents(before, after *reconcilers.State) {
	if c.opts.Events == nil {
		return
	}
	if events := reconcilers.Events(before, after); len(events) > 0 {
		c.opts.Events.Publish(c.opts.Log, c.name, events)
	}
}
