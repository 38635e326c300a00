package pass

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// PullRequestFacts is what the forge says about a promotion's pull request,
// gathered by the shell before deciding.
type PullRequestFacts struct {
	// State is open, closed or merged.
	State    string
	HeadSHA  string
	MergedBy string
	// Reviewer wrote the newest approving review that counts on HeadSHA
	// (forge.CountingApproval), at ReviewedAt; empty when none does.
	Reviewer   string
	ReviewedAt time.Time
}

// PullRequestActionKind is what to do on the forge.
type PullRequestActionKind string

const (
	// OpenPullRequest pushes the promotion commit to its
	// vectorflow/promote/ branch and opens (or finds) its pull request.
	OpenPullRequest PullRequestActionKind = "open"
	// ClosePullRequest closes the promotion's pull request with Comment.
	ClosePullRequest PullRequestActionKind = "close"
)

// PullRequestAction is one forge write a decision asks for; the shell makes
// it after the state commit, and both are idempotent.
type PullRequestAction struct {
	Kind      PullRequestActionKind
	Promotion string
	Number    int
	Comment   string
}

// PullRequestPolicy is spec.approval.pullRequest of the promotion's config,
// nil when its approvals do not go through pull requests.
func PullRequestPolicy(snap *source.Snapshot, p *v1alpha1.VectorPromotion) *v1alpha1.PullRequestApproval {
	cfg := snap.Configs[p.Spec.VectorPromotionConfigName]
	if cfg == nil || cfg.Spec.Approval == nil || !p.Spec.RequireApproval {
		return nil
	}
	return cfg.Spec.Approval.PullRequest
}

// recordPullRequests records pull requests opened since the last state
// commit and what the forge says about them, and turns a review or a merge
// into the same approval a signed approval file gives:
//
//   - a merged pull request whose vector the target overlay now names is
//     approved by the reviewer (else whoever merged); the scheduler then
//     starts it and the idempotent write finds the merged commit by its
//     trailers, which makes it Succeeded without a second commit;
//   - with merge: vectorflow, an approving review that counts approves it,
//     and the controller writes the commit to the target itself.
func (d *Decision) recordPullRequests(snap *source.Snapshot, opened map[string]v1alpha1.PullRequestStatus, facts map[string]PullRequestFacts, now time.Time) {
	for _, name := range keys.Sorted(opened) {
		p := d.State.Promotions[name]
		if p == nil || p.Status.PullRequest != nil {
			continue
		}
		pr := opened[name]
		p = d.promotion(name)
		p.Status.PullRequest = &pr
		d.note("%s: opened pull request #%d %s", name, pr.Number, pr.URL)
	}
	for _, name := range keys.Sorted(facts) {
		p := d.State.Promotions[name]
		if p == nil || p.Status.PullRequest == nil {
			continue
		}
		f := facts[name]
		p = d.promotion(name) // its pull request's state and conditions change in place
		if pr := p.Status.PullRequest; pr.State != f.State {
			pr.State = f.State
			d.note("%s: pull request #%d is %s", name, pr.Number, f.State)
		}
		policy := PullRequestPolicy(snap, p)
		if policy == nil || reconcilers.DeriveState(p) != v1alpha1.PromotionWaiting {
			continue
		}
		if f.State == v1alpha1.PullRequestClosed {
			// A rejection by closing: the pull request is not reopened, and
			// the promotion says why it waits and what to do.
			reconcilers.SetCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse,
				Reason: v1alpha1.PullRequestClosedReason, Message: fmt.Sprintf("pull request #%d was closed without merging; reopen it, or run vectorflow promote --config %s for a fresh one",
					p.Status.PullRequest.Number, p.Spec.VectorPromotionConfigName)}, now)
			continue
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition); c != nil && c.Reason == v1alpha1.PullRequestClosedReason {
			reconcilers.SetCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse,
				Reason: v1alpha1.WaitingForApprovalReason, Message: fmt.Sprintf("pull request #%d was reopened; waiting for its approval", p.Status.PullRequest.Number)}, now)
		}
		approver, at := pullRequestApprover(snap, p, policy, f, now)
		if approver == "" {
			continue
		}
		res, err := reconcilers.Approve(*p, approver, at)
		if err != nil || !res.Changed {
			continue
		}
		approved := res.Promotion
		d.State.Promotions[name] = &approved
		if res.Transition != nil {
			d.Transitions = append(d.Transitions, res.Transition.String()+" (pull request #"+fmt.Sprint(p.Status.PullRequest.Number)+")")
		}
	}
}

// pullRequestApprover is who approved p through its pull request, if anyone
// has: on a merge, the reviewer whose approval counted, else the user who
// merged; before a merge, with merge: vectorflow, the counting reviewer of
// the promotion commit vectorflow pushed (status.pullRequest.headSHA): a
// review of commits someone else pushed onto the branch approves those,
// not the promotion vectorflow will write.
func pullRequestApprover(snap *source.Snapshot, p *v1alpha1.VectorPromotion, policy *v1alpha1.PullRequestApproval, f PullRequestFacts, now time.Time) (string, time.Time) {
	switch {
	case f.State == v1alpha1.PullRequestMerged:
		// The merge is only the execution once the target names the vector:
		// until the snapshot shows it, the next pass decides.
		t := p.Spec.Target
		if snap.StageIndex[source.StageKey(t.Landscape, t.Name)].Vector.Vector != p.Spec.Vector {
			return "", time.Time{}
		}
		if f.Reviewer != "" {
			return f.Reviewer, reviewTime(f, now)
		}
		return f.MergedBy, now
	case f.State == v1alpha1.PullRequestOpen && policy.MergeMode() == v1alpha1.PullRequestMergeVectorflow && f.Reviewer != "" &&
		f.HeadSHA == p.Status.PullRequest.HeadSHA:
		return f.Reviewer, reviewTime(f, now)
	}
	return "", time.Time{}
}

func reviewTime(f PullRequestFacts, now time.Time) time.Time {
	if f.ReviewedAt.IsZero() {
		return now
	}
	return f.ReviewedAt
}

// planPullRequests lists the forge writes the state now calls for: open a
// pull request for each waiting promotion that has none, close the open one
// of each finished promotion saying why. It also reports a merged pull
// request of a superseded promotion on its config's Ready condition; prev is
// the state before this pass, so an unchanged report keeps its time.
func (d *Decision) planPullRequests(snap *source.Snapshot, prev *reconcilers.State, now time.Time) {
	stale := map[string][]string{}
	for _, name := range keys.Sorted(d.State.Promotions) {
		p := d.State.Promotions[name]
		if PullRequestPolicy(snap, p) == nil {
			continue
		}
		state := reconcilers.DeriveState(p)
		pr := p.Status.PullRequest
		switch {
		case pr == nil:
			if state == v1alpha1.PromotionWaiting {
				d.PullRequestActions = append(d.PullRequestActions, PullRequestAction{Kind: OpenPullRequest, Promotion: name})
			}
		case pr.State == v1alpha1.PullRequestOpen && reconcilers.IsTerminal(state):
			d.PullRequestActions = append(d.PullRequestActions, PullRequestAction{
				Kind: ClosePullRequest, Promotion: name, Number: pr.Number, Comment: d.closeComment(p, state)})
		case pr.State == v1alpha1.PullRequestMerged && state == v1alpha1.PromotionSuperseded:
			cfg := p.Spec.VectorPromotionConfigName
			stale[cfg] = append(stale[cfg], fmt.Sprintf("pull request #%d (%s) of superseded promotion %s was merged anyway, so %s now runs its older vector %s",
				pr.Number, pr.URL, name, p.Spec.Target.Ref(), p.Spec.Vector))
		}
	}
	for _, cfg := range keys.Sorted(stale) {
		st := d.State.Configs[cfg]
		if st == nil {
			continue
		}
		c := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.StalePromotionMergedReason,
			ObservedGeneration: st.Status.ObservedGeneration,
			Message:            strings.Join(stale[cfg], "; ") + ". Nothing was rolled back: check the target and promote the vector it should run."}
		c.LastTransitionTime = reconcilers.Stamp(now)
		if old := prev.Configs[cfg]; old != nil {
			if o := meta.FindStatusCondition(old.Status.Conditions, c.Type); o != nil && o.Status == c.Status && o.Reason == c.Reason {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		if before := meta.FindStatusCondition(st.Status.Conditions, c.Type); before == nil || before.Reason != c.Reason {
			d.note("VectorPromotionConfig %s: not Ready: %s", cfg, c.Message)
		}
		meta.SetStatusCondition(&d.config(cfg).Status.Conditions, c)
	}
}

// closeComment says why a finished promotion's pull request is closed.
func (d *Decision) closeComment(p *v1alpha1.VectorPromotion, state v1alpha1.PromotionState) string {
	switch state {
	case v1alpha1.PromotionSucceeded:
		by := ""
		if a := p.Status.Approval; a != nil {
			by = " after the approval of " + a.ApprovedBy
		}
		return fmt.Sprintf("vectorflow promoted %s to %s%s with the signed commit %s on the target branch; this pull request is no longer needed.",
			p.Spec.Vector, p.Spec.Target.Ref(), by, p.Status.Commit)
	case v1alpha1.PromotionSuperseded:
		newer := d.supersededBy(p)
		if newer == nil {
			return fmt.Sprintf("Superseded: a newer promotion of %s runs instead; %s will not be promoted.", p.Spec.VectorPromotionConfigName, p.Spec.Vector)
		}
		link := ""
		if pr := newer.Status.PullRequest; pr != nil {
			link = fmt.Sprintf(" (pull request #%d %s)", pr.Number, pr.URL)
		}
		return fmt.Sprintf("Superseded by %s%s, which promotes %s; %s will not be promoted.", newer.Name, link, newer.Spec.Vector, p.Spec.Vector)
	default:
		msg := ""
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c != nil {
			msg = ": " + c.Message
		}
		return fmt.Sprintf("Promotion %s is %s%s; closing its pull request.", p.Name, state, msg)
	}
}

// supersededBy is the promotion that superseded p: the oldest newer one of
// the same config that started (the scheduler supersedes what is older than
// the promotion it starts).
func (d *Decision) supersededBy(p *v1alpha1.VectorPromotion) *v1alpha1.VectorPromotion {
	var found *v1alpha1.VectorPromotion
	for _, q := range d.State.Promotions {
		if q.Spec.VectorPromotionConfigName != p.Spec.VectorPromotionConfigName || q.Spec.Sequence <= p.Spec.Sequence {
			continue
		}
		if s := reconcilers.DeriveState(q); s != v1alpha1.PromotionInProgress && s != v1alpha1.PromotionSucceeded {
			continue
		}
		if found == nil || q.Spec.Sequence < found.Spec.Sequence {
			found = q
		}
	}
	return found
}
