package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// Commit statuses are the deployer reports of stages whose deployer cannot
// reach vectorflow's webhooks: Flux's notification-controller (or Argo CD
// notifications) posts a status on each revision it applies, and a poll
// after each pass reads them from the forge and queues them as reports for
// the next pass. The poll runs beside the pass, never in it: a slow or
// rate-limited forge delays reports, not promotions.

const (
	// commitStatusPollTimeout bounds one poll of every stage's forge.
	commitStatusPollTimeout = 30 * time.Second
	// maxTrackedRevisions bounds the revisions of one stage read per poll:
	// its branch head, and earlier heads that have no final status yet.
	maxTrackedRevisions = 5
)

// commitStatusPoller remembers, per stage, which revisions still need
// reading and what was last reported for each, so an unchanged status is
// not reported again.
type commitStatusPoller struct {
	mu      sync.Mutex
	running bool
	// revisions are the heads seen of each stage's branch, oldest first,
	// the newest always kept; an earlier one leaves once its status is
	// final (success, failure or error).
	revisions map[string][]string
	reported  map[stageRevision]deployments.Report
	// notBefore holds back a stage whose forge rate-limited the last poll.
	notBefore map[string]time.Time
}

type stageRevision struct{ stage, revision string }

// commitStatusTarget is one stage to poll, copied out of a snapshot so the
// poll does not share it with the pass.
type commitStatusTarget struct {
	stage      string // StageKey
	deployment v1alpha1.DeploymentReference
	repo       forge.Repo
	head       string
}

// commitStatusTargets are the stages of snap whose deployment reports
// through commit statuses and whose overlay's repository and commit are
// known, sorted by stage; a stage whose repository names no forge
// repository is logged and left out.
func (c *Controller) commitStatusTargets(snap *source.Snapshot) []commitStatusTarget {
	var out []commitStatusTarget
	for _, key := range snap.StageKeys() {
		st := snap.Stages[key]
		d := st.Spec.Deployment
		if d == nil || d.CommitStatus == nil {
			continue
		}
		ref, ok := snap.StageIndex[key]
		if !ok || !isCommitID(ref.Commit) {
			continue // unresolved, or not a git repository
		}
		repo, err := forge.RepoFromURL(ref.URL)
		if err != nil {
			c.opts.Log.Error(err, "commit statuses of the stage are not read", "stage", key)
			continue
		}
		out = append(out, commitStatusTarget{stage: key, deployment: *d, repo: repo, head: ref.Commit})
	}
	return out
}

func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// pollCommitStatusesInBackground starts a poll of snap's commit-status
// stages unless one is still running; its reports are queued for the next
// pass. The poll is bounded by commitStatusPollTimeout.
func (c *Controller) pollCommitStatusesInBackground(snap *source.Snapshot) {
	targets := c.commitStatusTargets(snap)
	if len(targets) == 0 {
		return
	}
	p := &c.commitStatuses
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return
	}
	p.running = true
	p.mu.Unlock()
	go func() {
		defer func() {
			p.mu.Lock()
			p.running = false
			p.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), commitStatusPollTimeout)
		defer cancel()
		for _, r := range c.pollCommitStatuses(ctx, targets) {
			c.ReportDeployment(r)
		}
	}()
}

// pollCommitStatuses reads the statuses of each target's tracked revisions
// and returns the reports that changed since the last poll. A forge that
// cannot be read is logged; its stage is read again on the next poll (after
// the time a rate limit names).
func (c *Controller) pollCommitStatuses(ctx context.Context, targets []commitStatusTarget) []deployments.Report {
	p := &c.commitStatuses
	var out []deployments.Report
	read := statusCache{}
	for _, t := range targets {
		now := c.opts.Clock()
		p.mu.Lock()
		revisions := p.track(t.stage, t.head)
		held := now.Before(p.notBefore[t.stage])
		p.mu.Unlock()
		if held {
			continue
		}
		reports, err := c.readCommitStatuses(ctx, t, revisions, read)
		p.mu.Lock()
		for _, r := range reports {
			k := stageRevision{t.stage, r.Revision}
			if last, ok := p.reported[k]; !ok || !sameReport(last, r) {
				out = append(out, r)
			}
			p.remember(k, r, t.head)
		}
		if at, limited := forge.RetryAt(err); limited {
			if p.notBefore == nil {
				p.notBefore = map[string]time.Time{}
			}
			p.notBefore[t.stage] = at
		}
		p.mu.Unlock()
		if err != nil {
			c.opts.Log.Error(err, "commit statuses not read; reading them again on the next pass", "stage", t.stage)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// statusCache holds the statuses read in one poll: stages of one landscape
// repository (dev, test, prod overlays) share its revisions, and each
// revision is read once for all of them.
type statusCache map[statusKey][]forge.CommitStatus

// statusKey names a revision's statuses as read through one forge access.
type statusKey struct {
	access   string
	repo     forge.Repo
	revision string
}

// readCommitStatuses reads the statuses of revisions of t's repository,
// newest first, and what they say about t's deployment. It stops at the
// first error and returns the reports read until then.
func (c *Controller) readCommitStatuses(ctx context.Context, t commitStatusTarget, revisions []string, read statusCache) ([]deployments.Report, error) {
	cs := t.deployment.CommitStatus
	field := fmt.Sprintf("Stage %s: spec.deployment.commitStatus", t.stage)
	cred, err := forgeAccessCredentials(field, cs.ForgeAccess)
	if err != nil {
		return nil, err
	}
	cred.AppTokens = &c.appTokens
	client, err := forge.NewWithCredentials(cs.Forge, cs.APIURL, cred, c.opts.ForgeHTTPClient)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	access := fmt.Sprintf("%s\x00%s\x00%s\x00%s", cs.Forge, cs.APIURL, cs.TokenEnv, cs.TokenFile)
	if app := cs.GitHubApp; app != nil {
		access += fmt.Sprintf("\x00%d\x00%d", app.AppID, app.InstallationID)
	}
	var out []deployments.Report
	for i := len(revisions) - 1; i >= 0; i-- {
		k := statusKey{access: access, repo: t.repo, revision: revisions[i]}
		statuses, ok := read[k]
		if !ok {
			statuses, err = client.CommitStatuses(ctx, t.repo, revisions[i])
			if err != nil {
				return out, err
			}
			if read != nil {
				read[k] = statuses
			}
		}
		r, ok, err := deployments.FromCommitStatuses(t.deployment, revisions[i], statuses)
		if err != nil {
			return out, fmt.Errorf("Stage %s: %w", t.stage, err)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// track adds head to stage's revisions and returns them, oldest first.
func (p *commitStatusPoller) track(stage, head string) []string {
	if p.revisions == nil {
		p.revisions = map[string][]string{}
	}
	revs := p.revisions[stage]
	if !slices.Contains(revs, head) {
		revs = append(revs, head)
	}
	if len(revs) > maxTrackedRevisions {
		for _, old := range revs[:len(revs)-maxTrackedRevisions] {
			delete(p.reported, stageRevision{stage, old})
		}
		revs = revs[len(revs)-maxTrackedRevisions:]
	}
	p.revisions[stage] = revs
	return slices.Clone(revs)
}

// remember records r as reported; a revision other than head whose status
// is final is no longer read.
func (p *commitStatusPoller) remember(k stageRevision, r deployments.Report, head string) {
	if p.reported == nil {
		p.reported = map[stageRevision]deployments.Report{}
	}
	if k.revision != head && r.Outcome != deployments.Progressing {
		p.revisions[k.stage] = slices.DeleteFunc(p.revisions[k.stage], func(rev string) bool { return rev == k.revision })
		delete(p.reported, k)
		return
	}
	p.reported[k] = r
}

// sameReport compares what a report says; the deployment is the same
// stage's, read from another snapshot.
func sameReport(a, b deployments.Report) bool {
	return a.Revision == b.Revision && a.Outcome == b.Outcome && a.Reason == b.Reason &&
		a.Message == b.Message && a.At.Equal(b.At)
}
