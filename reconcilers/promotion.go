package reconcilers

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// ExecutionDeadline is how long a promotion may stay InProgress before
// whoever observes it retires it to Failed/PromotionTimedOut.
const ExecutionDeadline = 5 * time.Minute

// deadlineResolution is how long after the deadline an observer can first
// tell that it has passed: lastTransitionTime is stored in whole seconds.
const deadlineResolution = time.Second

// ConfigLabel names a promotion's config, so an executor can list a config's
// promotions without reading every spec.
const ConfigLabel = "vectorflow.dev/config"

// DeriveState is the seed's table: the state follows from the Approved and
// Succeeded conditions alone. Succeeded=Unknown counts as no result yet.
func DeriveState(p *v1alpha1.VectorPromotion) v1alpha1.PromotionState {
	s := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
	switch {
	case s == nil || s.Status == metav1.ConditionUnknown:
		if !p.Spec.RequireApproval || meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ApprovedCondition) {
			return v1alpha1.PromotionReady
		}
		return v1alpha1.PromotionWaiting
	case s.Status == metav1.ConditionTrue:
		return v1alpha1.PromotionSucceeded
	}
	if v1alpha1.BlockedByRule(s.Reason) {
		return v1alpha1.PromotionBlocked
	}
	switch s.Reason {
	case v1alpha1.PromotionRunningReason:
		return v1alpha1.PromotionInProgress
	case v1alpha1.PromotionTargetUnresolvedReason:
		return v1alpha1.PromotionBlocked
	case v1alpha1.PromotionSupersededReason, v1alpha1.PromotionSupersededInTargetReason:
		return v1alpha1.PromotionSuperseded
	default:
		return v1alpha1.PromotionFailed
	}
}

// IsTerminal reports whether a promotion in state s is finished for good.
func IsTerminal(s v1alpha1.PromotionState) bool {
	return s == v1alpha1.PromotionSucceeded || s == v1alpha1.PromotionFailed || s == v1alpha1.PromotionSuperseded
}

// RequireApproval is spec.approval.required, defaulted by the source kind:
// a Stage source waits for an approval, a VectorTemplate source does not.
func RequireApproval(spec *v1alpha1.VectorPromotionConfigSpec) bool {
	if spec.Approval != nil && spec.Approval.Required != nil {
		return *spec.Approval.Required
	}
	return spec.Source.Kind == v1alpha1.StageKind
}

// NewPromotion is the promotion `<config>-<sequence>` of vector: an immutable
// snapshot of the config's references, owned by the config, with its
// Approved condition set (gates cleared at once when approval is not required).
func NewPromotion(cfg *v1alpha1.VectorPromotionConfig, vector string, sequence int64, now time.Time) v1alpha1.VectorPromotion {
	ttl := metav1.Duration{Duration: v1alpha1.DefaultTTLAfterFinished * time.Second}
	if cfg.Spec.TTLAfterFinished != nil {
		ttl = *cfg.Spec.TTLAfterFinished
	}
	controller := true
	p := v1alpha1.VectorPromotion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorPromotionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%d", cfg.Name, sequence),
			Namespace: cfg.Namespace,
			Labels:    map[string]string{ConfigLabel: cfg.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorPromotionConfigKind,
				Name: cfg.Name, UID: cfg.UID, Controller: &controller,
			}},
		},
		Spec: v1alpha1.VectorPromotionSpec{
			VectorPromotionConfigName: cfg.Name,
			Source:                    cfg.Spec.Source,
			Target:                    cfg.Spec.Target,
			Vector:                    vector,
			TTLAfterFinished:          ttl,
			RequireApproval:           RequireApproval(&cfg.Spec),
			Sequence:                  sequence,
		},
	}
	approved := metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ApprovalNotRequiredReason, Message: "approval is not required by VectorPromotionConfig " + cfg.Name}
	if p.Spec.RequireApproval {
		msg := "waiting for an approval of " + vector
		if n := cfg.Spec.Approval.RequiredApprovals(); n > 1 {
			msg = fmt.Sprintf("waiting for %d approvals of %s by distinct approvers of %s", n, vector, cfg.Name)
		}
		approved = metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.WaitingForApprovalReason, Message: msg}
	}
	SetCondition(&p.Status.Conditions, approved, now)
	p.Status.State = DeriveState(&p)
	return p
}

// ApprovalResult says what an approval did; Message is for the approver.
type ApprovalResult struct {
	Promotion  v1alpha1.VectorPromotion
	Changed    bool
	Message    string
	Transition *Transition
}

// Approve records approvedBy's grant, at most once: the one approval of a
// pull request. Approving a finished or superseded promotion changes nothing
// (so a stale approval can never roll the target back), nor does approving
// an approved one.
func Approve(p v1alpha1.VectorPromotion, approvedBy string, now time.Time) (ApprovalResult, error) {
	if strings.TrimSpace(approvedBy) == "" {
		return ApprovalResult{Promotion: p}, fmt.Errorf("approve VectorPromotion %s: the approver is empty; name who approves", p.Name)
	}
	if msg, closed := ApprovalClosed(p); closed {
		return ApprovalResult{Promotion: p, Message: p.Name + " " + msg}, nil
	}
	out := *p.DeepCopy()
	out.Status.Approval = &v1alpha1.ApprovalRecord{ApprovedBy: approvedBy, ApprovedAt: Stamp(now)}
	tr := transition(&out, metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ApprovedReason, Message: "approved by " + approvedBy}, now)
	return ApprovalResult{Promotion: out, Changed: true, Message: p.Name + " approved by " + approvedBy, Transition: &tr}, nil
}

// ApproveAll records the signed approvals of distinct approvers once there
// are needed of them (spec.approval.minApprovals): status.approvals lists
// them all, oldest first, and status.approval is the one that completed the
// count. Like Approve, it changes nothing on a promotion that is closed to
// approval.
func ApproveAll(p v1alpha1.VectorPromotion, grants []v1alpha1.ApprovalRecord, needed int, now time.Time) (ApprovalResult, error) {
	if needed < 1 {
		needed = 1
	}
	if len(grants) < needed {
		return ApprovalResult{Promotion: p}, fmt.Errorf("approve VectorPromotion %s: %d approvals, %d needed", p.Name, len(grants), needed)
	}
	seen := map[string]bool{}
	names := make([]string, 0, len(grants))
	for _, g := range grants {
		if strings.TrimSpace(g.ApprovedBy) == "" || seen[g.ApprovedBy] {
			return ApprovalResult{Promotion: p}, fmt.Errorf("approve VectorPromotion %s: approvers must be named and distinct, got %q", p.Name, g.ApprovedBy)
		}
		seen[g.ApprovedBy] = true
		names = append(names, g.ApprovedBy)
	}
	if msg, closed := ApprovalClosed(p); closed {
		return ApprovalResult{Promotion: p, Message: p.Name + " " + msg}, nil
	}
	out := *p.DeepCopy()
	out.Status.Approvals = append([]v1alpha1.ApprovalRecord(nil), grants...)
	completed := grants[needed-1]
	out.Status.Approval = &completed
	by := strings.Join(names, ", ")
	tr := transition(&out, metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ApprovedReason, Message: "approved by " + by}, now)
	return ApprovalResult{Promotion: out, Changed: true, Message: p.Name + " approved by " + by, Transition: &tr}, nil
}

// ApprovalClosed says why an approval of p would change nothing: it is
// finished, superseded, already approved, needs no approval, or has cleared
// its gates. closed is false while p waits for approval.
func ApprovalClosed(p v1alpha1.VectorPromotion) (msg string, closed bool) {
	state := DeriveState(&p)
	switch {
	case state == v1alpha1.PromotionSuperseded:
		return "is Superseded by a newer promotion; approving it changes nothing", true
	case IsTerminal(state):
		return fmt.Sprintf("is %s, it has finished; approving it changes nothing", state), true
	case p.Status.Approval != nil:
		return fmt.Sprintf("was already approved by %s at %s; nothing changed",
			p.Status.Approval.ApprovedBy, p.Status.Approval.ApprovedAt.UTC().Format(time.RFC3339)), true
	case !p.Spec.RequireApproval:
		return "does not require approval; nothing changed", true
	case state != v1alpha1.PromotionWaiting:
		return fmt.Sprintf("is %s, it has cleared its gates; nothing changed", state), true
	}
	return "", false
}

// Start moves a Ready (or Blocked, retried) promotion to InProgress. The
// executor persists the result before it writes the target.
func Start(p v1alpha1.VectorPromotion, now time.Time) (v1alpha1.VectorPromotion, Transition, error) {
	if s := DeriveState(&p); s != v1alpha1.PromotionReady && s != v1alpha1.PromotionBlocked {
		return p, Transition{}, fmt.Errorf("start VectorPromotion %s: it is %s; only a Ready or Blocked promotion starts", p.Name, s)
	}
	out := *p.DeepCopy()
	tr := transition(&out, metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse,
		Reason: v1alpha1.PromotionRunningReason, Message: "promoting " + p.Spec.Vector + " to " + p.Spec.Target.Describe()}, now)
	return out, tr, nil
}

// Outcome is how an execution ended.
type Outcome int

const (
	// OutcomeSucceeded: the target overlay names the vector at Result.Commit.
	OutcomeSucceeded Outcome = iota
	// OutcomeFailed: the write failed; the promotion is Failed for good.
	OutcomeFailed
	// OutcomeTargetUnresolved: the target Stage or Landscape does not
	// resolve; the promotion is Blocked and retried when it does.
	OutcomeTargetUnresolved
	// OutcomeSuperseded: the target already holds a newer promotion of the
	// same config; the promotion is Superseded and nothing was written.
	OutcomeSuperseded
	// OutcomeNeedsApproval: the vector removes objects of protected kinds
	// (Result.Removed) and nobody approved that; nothing was written, and
	// the promotion waits for an approval by an approver of its config.
	OutcomeNeedsApproval
)

// Result is what the executor reports after it ran a started promotion.
type Result struct {
	Outcome Outcome
	// Commit is the promotion commit on the target branch (success only).
	Commit string
	// PromotedStageRef is the Stage written to; empty means the snapshot target.
	PromotedStageRef *v1alpha1.StageReference
	// Message explains a failure or a block.
	Message string
	// Reason is the Succeeded condition's reason for a failure or a
	// supersession when more precise than PromotionFailed or
	// PromotionSuperseded (PromotionNoEffect, OverlayBuildFailed,
	// SupersededInTarget, PromotionIdentityReused).
	Reason string
	// Removed are the protected objects the vector would remove
	// (OutcomeNeedsApproval).
	Removed []v1alpha1.InventoryEntry
}

// Complete records the execution result of an InProgress promotion.
func Complete(p v1alpha1.VectorPromotion, r Result, now time.Time) (v1alpha1.VectorPromotion, Transition, error) {
	if s := DeriveState(&p); s != v1alpha1.PromotionInProgress {
		return p, Transition{}, fmt.Errorf("complete VectorPromotion %s: it is %s, not InProgress (retired or finished by another writer); re-read it and do not report again", p.Name, s)
	}
	out := *p.DeepCopy()
	if r.Outcome == OutcomeNeedsApproval {
		return needsApproval(out, r.Removed, now)
	}
	c := metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Message: r.Message}
	switch r.Outcome {
	case OutcomeSucceeded:
		if r.Commit == "" {
			return p, Transition{}, fmt.Errorf("complete VectorPromotion %s: a success needs the commit that wrote %s", p.Name, p.Spec.Vector)
		}
		stage := p.Spec.Target
		if r.PromotedStageRef != nil {
			stage = *r.PromotedStageRef
		}
		out.Status.Commit = r.Commit
		out.Status.PromotedStageRef = &stage
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.PromotionSucceededReason
		c.Message = fmt.Sprintf("promoted %s to %s at %s", p.Spec.Vector, stage.Describe(), r.Commit)
	case OutcomeFailed:
		c.Reason = orDefault(r.Reason, v1alpha1.PromotionFailedReason)
	case OutcomeSuperseded:
		c.Reason = orDefault(r.Reason, v1alpha1.PromotionSupersededReason)
	case OutcomeTargetUnresolved:
		c.Reason = v1alpha1.PromotionTargetUnresolvedReason
	default:
		return p, Transition{}, fmt.Errorf("complete VectorPromotion %s: unknown outcome %d", p.Name, r.Outcome)
	}
	return out, transition(&out, c, now), nil
}

// PromotionPlan is what the promotion executor does on a retry.
type PromotionPlan struct {
	Promotion v1alpha1.VectorPromotion
	// Changed: persist Promotion.
	Changed    bool
	Transition *Transition
	// Execute: the promotion is InProgress within its deadline; (re)attempt
	// the idempotent overlay write and report it with Complete.
	Execute      bool
	RequeueAfter time.Duration
}

// ReconcilePromotion is the promotion's own pass: it recomputes the state and
// retires a run that has passed its deadline. Starting is the config's job
// (SchedulePromotions), so that at most one runs per config. p is never
// modified. A plan that changes nothing holds p itself, sharing its
// conditions: every pass looks at every promotion, most of them finished,
// and copying each was a tenth of a pass's decision.
func ReconcilePromotion(p v1alpha1.VectorPromotion, now time.Time) PromotionPlan {
	if DeriveState(&p) != p.Status.State || p.Status.State == v1alpha1.PromotionInProgress && overdue(&p, now) {
		p = *p.DeepCopy()
	}
	plan := PromotionPlan{Promotion: p}
	if tr, ok := refreshState(&plan.Promotion); ok {
		plan.Changed, plan.Transition = true, &tr
	}
	if plan.Promotion.Status.State != v1alpha1.PromotionInProgress {
		return plan
	}
	if tr, retired := retireIfOverdue(&plan.Promotion, now); retired {
		plan.Changed, plan.Transition = true, &tr
		return plan
	}
	plan.Execute = true
	plan.RequeueAfter = untilOverdue(&plan.Promotion, now)
	return plan
}

// retireIfOverdue moves an InProgress promotion that has run for more than
// ExecutionDeadline to Failed/PromotionTimedOut.
func retireIfOverdue(p *v1alpha1.VectorPromotion, now time.Time) (Transition, bool) {
	if !overdue(p, now) {
		return Transition{}, false
	}
	running := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
	msg := fmt.Sprintf("promotion ran for more than %s (since %s); retired", ExecutionDeadline,
		running.LastTransitionTime.UTC().Format(time.RFC3339))
	return transition(p, metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse,
		Reason: v1alpha1.PromotionTimedOutReason, Message: msg}, now), true
}

// overdue: an InProgress promotion has run for more than ExecutionDeadline.
func overdue(p *v1alpha1.VectorPromotion, now time.Time) bool {
	running := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
	return running != nil && running.Reason == v1alpha1.PromotionRunningReason &&
		now.Sub(running.LastTransitionTime.Time) > ExecutionDeadline
}

// untilOverdue is when an observer should look again to retire the run.
func untilOverdue(p *v1alpha1.VectorPromotion, now time.Time) time.Duration {
	running := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
	return running.LastTransitionTime.Add(ExecutionDeadline + deadlineResolution).Sub(now)
}

// transition sets c on p, recomputes the state and says what changed.
func transition(p *v1alpha1.VectorPromotion, c metav1.Condition, now time.Time) Transition {
	from := DeriveState(p)
	c.ObservedGeneration = p.Generation
	SetCondition(&p.Status.Conditions, c, now)
	p.Status.State = DeriveState(p)
	return Transition{Promotion: p.Name, From: from, To: p.Status.State, Reason: c.Reason}
}

// refreshState rewrites a stale status.state (another writer, such as the
// approver, changed only the conditions).
func refreshState(p *v1alpha1.VectorPromotion) (Transition, bool) {
	want := DeriveState(p)
	if p.Status.State == want {
		return Transition{}, false
	}
	tr := Transition{Promotion: p.Name, From: p.Status.State, To: want}
	p.Status.State = want
	return tr, true
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// needsApproval turns a started promotion that would remove protected
// objects back into one waiting for approval: its spec now requires
// approval (the reason is on the Approved condition and in
// status.removesProtected), so only an approver's signed word runs it.
func needsApproval(p v1alpha1.VectorPromotion, removed []v1alpha1.InventoryEntry, now time.Time) (v1alpha1.VectorPromotion, Transition, error) {
	if len(removed) == 0 {
		return p, Transition{}, fmt.Errorf("complete VectorPromotion %s: an approval for removing protected objects needs the objects", p.Name)
	}
	from := DeriveState(&p)
	names := make([]string, len(removed))
	for i, e := range removed {
		names[i] = e.String()
	}
	p.Spec.RequireApproval = true
	p.Status.RemovesProtected = append([]v1alpha1.InventoryEntry(nil), removed...)
	meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.SucceededCondition)
	SetCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ProtectedRemovalReason, ObservedGeneration: p.Generation,
		Message: fmt.Sprintf("promoting %s removes %s from %s (protected kinds, spec.protectedKinds of %s): "+
			"it waits for an approval by an approver of %s (vectorflow approve)",
			p.Spec.Vector, strings.Join(names, ", "), p.Spec.Target.Describe(), p.Spec.VectorPromotionConfigName, p.Spec.VectorPromotionConfigName)}, now)
	p.Status.State = DeriveState(&p)
	return p, Transition{Promotion: p.Name, From: from, To: p.Status.State, Reason: v1alpha1.ProtectedRemovalReason}, nil
}
