package controller

import (
	"time"

	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// maxQueuedReports bounds the deployer reports a controller holds between
// passes, and the reports whose time it remembers. Reports are keyed by
// deployment and revision, so the bound is only reached by a flood of
// distinct revisions; the oldest are dropped first, and a deployer reports
// again on its next reconcile.
const maxQueuedReports = 10000

// reportQueue holds deployer reports until the next pass applies them. A
// newer report of the same deployment and revision replaces an older one,
// and one older than a report of its revision the queue already had
// (queued or taken by a pass) is dropped: the state records when a
// revision's status last changed, not each time a deployer repeated it, so
// only this memory knows that a late report was overtaken by a repeat.
type reportQueue struct {
	order []reportKey
	byKey map[reportKey]deployments.Report
	// newest is when the newest report of each key was made; newestOrder
	// is the keys in the order they were first seen, to bound it.
	newest      map[reportKey]time.Time
	newestOrder []reportKey
}

type reportKey struct {
	deployment string
	revision   string
}

// keyOf is r's deployment and commit, however the deployer wrote it.
func keyOf(r deployments.Report) reportKey {
	d := r.Deployment
	return reportKey{deployment: d.Kind + "/" + d.Namespace + "/" + d.Name, revision: normalizeRevision(r.Revision)}
}

func (q *reportQueue) add(r deployments.Report) {
	k := keyOf(r)
	if at, ok := q.newest[k]; ok && r.At.Before(at) {
		return
	}
	q.remember(k, r.At)
	q.put(k, r)
}

// put queues r, a report add accepted, unless a newer one of its key is
// queued.
func (q *reportQueue) put(k reportKey, r deployments.Report) {
	if q.byKey == nil {
		q.byKey = map[reportKey]deployments.Report{}
	}
	if old, ok := q.byKey[k]; ok {
		if !r.At.Before(old.At) {
			q.byKey[k] = r
		}
		return
	}
	if len(q.order) >= maxQueuedReports {
		delete(q.byKey, q.order[0])
		q.order = q.order[1:]
	}
	q.order = append(q.order, k)
	q.byKey[k] = r
}

// remember records at as the time of k's newest report.
func (q *reportQueue) remember(k reportKey, at time.Time) {
	if q.newest == nil {
		q.newest = map[reportKey]time.Time{}
	}
	if _, ok := q.newest[k]; !ok {
		if len(q.newestOrder) >= maxQueuedReports {
			delete(q.newest, q.newestOrder[0])
			q.newestOrder = q.newestOrder[1:]
		}
		q.newestOrder = append(q.newestOrder, k)
	}
	q.newest[k] = at
}

// take returns the queued reports in arrival order and empties the queue;
// the time of each key's newest report stays.
func (q *reportQueue) take() []deployments.Report {
	out := make([]deployments.Report, 0, len(q.order))
	for _, k := range q.order {
		out = append(out, q.byKey[k])
	}
	q.order, q.byKey = nil, nil
	return out
}

// ReportDeployment queues a deployer's report for the next pass, which
// applies it; it does not trigger that pass (Runner.ReportDeployment does).
// A report cannot have been made after it arrived: one dated later (its
// deployer's clock runs ahead) counts from its arrival, or it would
// outrank every true report of its revision until that date.
func (c *Controller) ReportDeployment(r deployments.Report) {
	if now := c.opts.Clock(); r.At.After(now) {
		r.At = now
	}
	c.reportsMu.Lock()
	defer c.reportsMu.Unlock()
	c.reports.add(r)
}

// takeDeploymentReports returns the reports queued since the last call.
// A pass that fails after taking them puts them back with requeueReports.
func (c *Controller) takeDeploymentReports() []deployments.Report {
	c.reportsMu.Lock()
	defer c.reportsMu.Unlock()
	return c.reports.take()
}

// requeueReports puts back reports a failed pass did not record, ahead of
// any that arrived meanwhile (a newer one of the same revision wins).
func (c *Controller) requeueReports(rs []deployments.Report) {
	c.reportsMu.Lock()
	defer c.reportsMu.Unlock()
	pending := c.reports.take()
	for _, r := range rs {
		c.reports.put(keyOf(r), r)
	}
	for _, r := range pending {
		c.reports.put(keyOf(r), r)
	}
}

// ReportDeployment hands a deployer's report to every controller and asks
// each for a pass; a controller whose stages name no such deployment
// ignores it. It returns how many controllers were asked.
func (r *Runner) ReportDeployment(rep deployments.Report) int {
	for _, w := range r.workers {
		w.c.ReportDeployment(rep)
		select {
		case w.trigger <- struct{}{}:
		default: // a pass is already pending
		}
	}
	return len(r.workers)
}
