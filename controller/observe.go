package controller

import (
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Observed is what one pass read and decided: the config repository's
// snapshot and the state it wrote (or found unchanged). Views of the state
// (the Kubernetes mirror) are built from it; they must not change it.
type Observed struct {
	// Repository is the config repository's URL, without credentials.
	Repository string
	Snapshot   *source.Snapshot
	State      *reconcilers.State
}

// observe hands a decided pass to Options.Observe, when set.
func (c *Controller) observe(snap *source.Snapshot, state *reconcilers.State) {
	if c.opts.Observe != nil {
		c.opts.Observe(Observed{Repository: c.opts.URL, Snapshot: snap, State: state})
	}
}
