package reconcilers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// The seed's state table: every combination of the two conditions.
func TestDeriveState(t *testing.T) {
	T, F, U := metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	approved := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return cond(v1alpha1.ApprovedCondition, s, reason, 0)
	}
	succeeded := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return cond(v1alpha1.SucceededCondition, s, reason, 0)
	}
	tests := []struct {
		name            string
		requireApproval bool
		conds           []metav1.Condition
		want            v1alpha1.PromotionState
	}{
		{"no conditions, approval required", true, nil, v1alpha1.PromotionWaiting},
		{"no conditions, approval not required", false, nil, v1alpha1.PromotionReady},
		{"waiting for approval", true, []metav1.Condition{approved(F, v1alpha1.WaitingForApprovalReason)}, v1alpha1.PromotionWaiting},
		{"approval unknown", true, []metav1.Condition{approved(U, "")}, v1alpha1.PromotionWaiting},
		{"approved", true, []metav1.Condition{approved(T, v1alpha1.ApprovedReason)}, v1alpha1.PromotionReady},
		{"approval not required", false, []metav1.Condition{approved(T, v1alpha1.ApprovalNotRequiredReason)}, v1alpha1.PromotionReady},
		{"not required but Approved=False", false, []metav1.Condition{approved(F, v1alpha1.WaitingForApprovalReason)}, v1alpha1.PromotionReady},
		{"Succeeded=Unknown is no result yet", true, []metav1.Condition{approved(F, v1alpha1.WaitingForApprovalReason), succeeded(U, "")}, v1alpha1.PromotionWaiting},
		{"succeeded", true, []metav1.Condition{approved(T, v1alpha1.ApprovedReason), succeeded(T, v1alpha1.PromotionSucceededReason)}, v1alpha1.PromotionSucceeded},
		{"succeeded without approval condition", false, []metav1.Condition{succeeded(T, "")}, v1alpha1.PromotionSucceeded},
		{"running", false, []metav1.Condition{succeeded(F, v1alpha1.PromotionRunningReason)}, v1alpha1.PromotionInProgress},
		{"target unresolved", false, []metav1.Condition{succeeded(F, v1alpha1.PromotionTargetUnresolvedReason)}, v1alpha1.PromotionBlocked},
		{"superseded", true, []metav1.Condition{approved(F, v1alpha1.WaitingForApprovalReason), succeeded(F, v1alpha1.PromotionSupersededReason)}, v1alpha1.PromotionSuperseded},
		{"timed out", false, []metav1.Condition{succeeded(F, v1alpha1.PromotionTimedOutReason)}, v1alpha1.PromotionFailed},
		{"failed", false, []metav1.Condition{succeeded(F, v1alpha1.PromotionFailedReason)}, v1alpha1.PromotionFailed},
		{"any other reason fails", true, []metav1.Condition{succeeded(F, "SomethingElse")}, v1alpha1.PromotionFailed},
		{"succeeded wins over missing approval", true, []metav1.Condition{succeeded(T, v1alpha1.PromotionSucceededReason)}, v1alpha1.PromotionSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := promo(1, tt.requireApproval, tt.conds...)
			if diff := cmp.Diff(tt.want, DeriveState(&p)); diff != "" {
				t.Errorf("DeriveState (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPromotionSnapshotsTheConfig(t *testing.T) {
	ttl := metav1.Duration{Duration: time.Hour}
	no := false
	tests := []struct {
		name     string
		source   v1alpha1.SourceReference
		approval *v1alpha1.ApprovalPolicy
		want     bool
		approved metav1.Condition
		state    v1alpha1.PromotionState
	}{
		{"template source defaults to no approval", tmplSource, nil, false,
			metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ApprovalNotRequiredReason, Message: "approval is not required by VectorPromotionConfig dev-to-test", LastTransitionTime: mt(0)},
			v1alpha1.PromotionReady},
		{"stage source defaults to approval", devSource, nil, true,
			metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.WaitingForApprovalReason, Message: "waiting for an approval of app:v1", LastTransitionTime: mt(0)},
			v1alpha1.PromotionWaiting},
		{"stage source, approval overridden off", devSource, &v1alpha1.ApprovalPolicy{Required: &no}, false,
			metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ApprovalNotRequiredReason, Message: "approval is not required by VectorPromotionConfig dev-to-test", LastTransitionTime: mt(0)},
			v1alpha1.PromotionReady},
		{"template source, approval overridden on", tmplSource, &v1alpha1.ApprovalPolicy{Required: ptr(true)}, true,
			metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.WaitingForApprovalReason, Message: "waiting for an approval of app:v1", LastTransitionTime: mt(0)},
			v1alpha1.PromotionWaiting},
		{"four eyes say how many approvals", devSource, &v1alpha1.ApprovalPolicy{MinApprovals: ptr[int32](2)}, true,
			metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.WaitingForApprovalReason,
				Message: "waiting for 2 approvals of app:v1 by distinct approvers of dev-to-test", LastTransitionTime: mt(0)},
			v1alpha1.PromotionWaiting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := v1alpha1.VectorPromotionConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test", Namespace: "project", UID: "uid-1", Generation: 3},
				Spec:       v1alpha1.VectorPromotionConfigSpec{Source: tt.source, Target: testTarget, TTLAfterFinished: &ttl, Approval: tt.approval},
			}
			tt.approved.ObservedGeneration = 0
			got := NewPromotion(&cfg, "app:v1", 7, at(0))
			want := v1alpha1.VectorPromotion{
				TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorPromotionKind},
				ObjectMeta: metav1.ObjectMeta{
					Name: "dev-to-test-7", Namespace: "project",
					Labels: map[string]string{ConfigLabel: "dev-to-test"},
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorPromotionConfigKind,
						Name: "dev-to-test", UID: "uid-1", Controller: ptr(true),
					}},
				},
				Spec: v1alpha1.VectorPromotionSpec{
					VectorPromotionConfigName: "dev-to-test", Source: tt.source, Target: testTarget,
					Vector: "app:v1", TTLAfterFinished: ttl, RequireApproval: tt.want, Sequence: 7,
				},
				Status: v1alpha1.VectorPromotionStatus{State: tt.state, Conditions: []metav1.Condition{tt.approved}},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("NewPromotion (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPromotionDefaultsTTL(t *testing.T) {
	cfg := v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.VectorPromotionConfigSpec{Source: tmplSource, Target: testTarget}}
	got := NewPromotion(&cfg, "app:v1", 1, at(0)).Spec.TTLAfterFinished.Duration
	if diff := cmp.Diff(24*time.Hour, got); diff != "" {
		t.Errorf("default ttlAfterFinished (-want +got):\n%s", diff)
	}
}

func TestApprove(t *testing.T) {
	record := &v1alpha1.ApprovalRecord{ApprovedBy: "bob", ApprovedAt: mt(-time.Hour)}
	alreadyApproved := promo(1, true, cond(v1alpha1.ApprovedCondition, metav1.ConditionTrue, v1alpha1.ApprovedReason, -time.Hour))
	alreadyApproved.Status.Approval = record
	tests := []struct {
		name    string
		p       v1alpha1.VectorPromotion
		changed bool
		message string
		state   v1alpha1.PromotionState
	}{
		{"waiting becomes ready", promo(1, true, waitingCond()), true, "dev-to-test-1 approved by alice", v1alpha1.PromotionReady},
		{"already approved", alreadyApproved, false, "dev-to-test-1 was already approved by bob at 2026-07-27T13:30:52Z; nothing changed", v1alpha1.PromotionReady},
		{"approval not required", promo(1, false, cond(v1alpha1.ApprovedCondition, metav1.ConditionTrue, v1alpha1.ApprovalNotRequiredReason, 0)), false, "dev-to-test-1 does not require approval; nothing changed", v1alpha1.PromotionReady},
		{"superseded is ignored", promo(1, true, waitingCond(), supersededCond(0)), false, "dev-to-test-1 is Superseded by a newer promotion; approving it changes nothing", v1alpha1.PromotionSuperseded},
		{"succeeded is ignored", promo(1, true, approvedCond(), succeededCond(0)), false, "dev-to-test-1 is Succeeded, it has finished; approving it changes nothing", v1alpha1.PromotionSucceeded},
		{"in progress without a record", promo(1, true, runningCond(0)), false, "dev-to-test-1 is InProgress, it has cleared its gates; nothing changed", v1alpha1.PromotionInProgress},
		{"failed is ignored", promo(1, true, approvedCond(), failedCond(0)), false, "dev-to-test-1 is Failed, it has finished; approving it changes nothing", v1alpha1.PromotionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.p.DeepCopy()
			res, err := Approve(tt.p, "alice", at(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.changed, res.Changed); diff != "" {
				t.Errorf("Changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.message, res.Message); diff != "" {
				t.Errorf("Message (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.state, res.Promotion.Status.State); diff != "" {
				t.Errorf("State (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(*before, tt.p); diff != "" {
				t.Errorf("input was modified (-before +after):\n%s", diff)
			}
			if !tt.changed {
				if diff := cmp.Diff(*before, res.Promotion); diff != "" {
					t.Errorf("unchanged approval modified the promotion (-want +got):\n%s", diff)
				}
				return
			}
			want := promo(1, true, metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ApprovedReason, Message: "approved by alice", LastTransitionTime: mt(time.Minute)})
			want.Status.Approval = &v1alpha1.ApprovalRecord{ApprovedBy: "alice", ApprovedAt: mt(time.Minute)}
			if diff := cmp.Diff(want, res.Promotion); diff != "" {
				t.Errorf("approved promotion (-want +got):\n%s", diff)
			}
			// At most once: a second grant is refused without a change.
			again, err := Approve(res.Promotion, "mallory", at(2*time.Minute))
			if err != nil || again.Changed || again.Promotion.Status.Approval.ApprovedBy != "alice" {
				t.Errorf("second approval: changed=%v approval=%+v err=%v", again.Changed, again.Promotion.Status.Approval, err)
			}
		})
	}
	if _, err := Approve(promo(1, true, waitingCond()), " ", at(0)); err == nil {
		t.Error("approval without an approver: want an error")
	}
}

func TestStartAndComplete(t *testing.T) {
	ref := testTarget
	tests := []struct {
		name      string
		result    Result
		want      metav1.Condition
		state     v1alpha1.PromotionState
		commit    string
		stageRef  *v1alpha1.StageReference
		wantTrans string
	}{
		{"success", Result{Outcome: OutcomeSucceeded, Commit: "abc123", PromotedStageRef: &ref},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.PromotionSucceededReason, Message: "promoted app:2026.7.1-000000000Z to Stage test-stage in Landscape test at abc123", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionSucceeded, "abc123", &ref, "dev-to-test-1: InProgress -> Succeeded (PromotionSucceeded)"},
		{"failure", Result{Outcome: OutcomeFailed, Message: "push rejected"},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionFailedReason, Message: "push rejected", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionFailed, "", nil, "dev-to-test-1: InProgress -> Failed (PromotionFailed)"},
		{"no effect", Result{Outcome: OutcomeFailed, Reason: v1alpha1.PromotionNoEffectReason, Message: "component api renders nowhere"},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionNoEffectReason, Message: "component api renders nowhere", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionFailed, "", nil, "dev-to-test-1: InProgress -> Failed (PromotionNoEffect)"},
		{"overlay does not build", Result{Outcome: OutcomeFailed, Reason: v1alpha1.OverlayBuildFailedReason, Message: "kustomize build failed"},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.OverlayBuildFailedReason, Message: "kustomize build failed", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionFailed, "", nil, "dev-to-test-1: InProgress -> Failed (OverlayBuildFailed)"},
		{"superseded in the target", Result{Outcome: OutcomeSuperseded, Reason: v1alpha1.PromotionSupersededInTargetReason, Message: "main already holds dev-to-test-3"},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionSupersededInTargetReason, Message: "main already holds dev-to-test-3", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionSuperseded, "", nil, "dev-to-test-1: InProgress -> Superseded (SupersededInTarget)"},
		{"identity reused", Result{Outcome: OutcomeFailed, Reason: v1alpha1.PromotionIdentityReusedReason, Message: "main already holds dev-to-test-1 with another vector"},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionIdentityReusedReason, Message: "main already holds dev-to-test-1 with another vector", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionFailed, "", nil, "dev-to-test-1: InProgress -> Failed (PromotionIdentityReused)"},
		{"target unresolved", Result{Outcome: OutcomeTargetUnresolved, Message: "Landscape test not found"},
			metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionTargetUnresolvedReason, Message: "Landscape test not found", LastTransitionTime: mt(2 * time.Minute)},
			v1alpha1.PromotionBlocked, "", nil, "dev-to-test-1: InProgress -> Blocked (PromotionTargetUnresolved)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started, tr, err := Start(promo(1, false, approvedCond()), at(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("dev-to-test-1: Ready -> InProgress (PromotionRunning)", tr.String()); diff != "" {
				t.Errorf("start transition (-want +got):\n%s", diff)
			}
			running := metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionRunningReason, Message: "promoting app:2026.7.1-000000000Z to Stage test-stage in Landscape test", LastTransitionTime: mt(time.Minute)}
			if diff := cmp.Diff([]metav1.Condition{approvedCond(), running}, started.Status.Conditions); diff != "" {
				t.Errorf("started conditions (-want +got):\n%s", diff)
			}
			done, tr, err := Complete(started, tt.result, at(2*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]metav1.Condition{approvedCond(), tt.want}, done.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.state, done.Status.State); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.commit, done.Status.Commit); diff != "" {
				t.Errorf("commit (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stageRef, done.Status.PromotedStageRef); diff != "" {
				t.Errorf("promotedStageRef (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTrans, tr.String()); diff != "" {
				t.Errorf("transition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartAndCompleteRefuseWrongStates(t *testing.T) {
	for _, p := range []v1alpha1.VectorPromotion{
		promo(1, true, waitingCond()),
		promo(1, false, runningCond(0)),
		promo(1, false, succeededCond(0)),
		promo(1, false, failedCond(0)),
		promo(1, true, waitingCond(), supersededCond(0)),
	} {
		if _, _, err := Start(p, at(0)); err == nil {
			t.Errorf("Start of a %s promotion: want an error", p.Status.State)
		}
	}
	for _, p := range []v1alpha1.VectorPromotion{
		promo(1, false, approvedCond()),
		promo(1, false, succeededCond(0)),
		promo(1, false, cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionTimedOutReason, 0)),
		promo(1, false, blockedCond(0)),
	} {
		_, _, err := Complete(p, Result{Outcome: OutcomeSucceeded, Commit: "abc"}, at(0))
		if err == nil || !strings.Contains(err.Error(), "dev-to-test-1") {
			t.Errorf("Complete of a %s promotion: want an error naming it, got %v", p.Status.State, err)
		}
	}
	if _, _, err := Complete(promo(1, false, runningCond(0)), Result{Outcome: OutcomeSucceeded}, at(0)); err == nil {
		t.Error("success without a commit: want an error")
	}
}

// A start from Blocked must date the run from the start, not from the block,
// or a long-blocked promotion would time out the moment it starts.
func TestStartFromBlockedRestartsTheClock(t *testing.T) {
	started, _, err := Start(promo(1, false, approvedCond(), blockedCond(-time.Hour)), at(0))
	if err != nil {
		t.Fatal(err)
	}
	plan := ReconcilePromotion(started, at(time.Minute))
	if plan.Changed || plan.Promotion.Status.State != v1alpha1.PromotionInProgress {
		t.Errorf("a promotion started a minute ago from Blocked: changed=%v state=%s", plan.Changed, plan.Promotion.Status.State)
	}
}

// The 5-minute deadline observed by the promotion itself on a retry.
func TestReconcilePromotionDeadline(t *testing.T) {
	tests := []struct {
		elapsed time.Duration
		state   v1alpha1.PromotionState
		execute bool
		requeue time.Duration
	}{
		{4*time.Minute + 59*time.Second, v1alpha1.PromotionInProgress, true, 2 * time.Second},
		{5 * time.Minute, v1alpha1.PromotionInProgress, true, time.Second},
		{5*time.Minute + time.Second, v1alpha1.PromotionFailed, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.elapsed.String(), func(t *testing.T) {
			p := promo(1, false, approvedCond(), runningCond(0))
			plan := ReconcilePromotion(p, at(tt.elapsed))
			got := struct {
				State   v1alpha1.PromotionState
				Execute bool
				Requeue time.Duration
			}{plan.Promotion.Status.State, plan.Execute, plan.RequeueAfter}
			want := struct {
				State   v1alpha1.PromotionState
				Execute bool
				Requeue time.Duration
			}{tt.state, tt.execute, tt.requeue}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.state != v1alpha1.PromotionFailed {
				return
			}
			c := plan.Promotion.Status.Conditions[1]
			wantC := metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PromotionTimedOutReason,
				Message: "promotion ran for more than 5m0s (since 2026-07-27T14:30:52Z); retired", LastTransitionTime: mt(tt.elapsed)}
			if diff := cmp.Diff(wantC, c); diff != "" {
				t.Errorf("timed-out condition (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff("dev-to-test-1: InProgress -> Failed (PromotionTimedOut)", plan.Transition.String()); diff != "" {
				t.Errorf("transition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReconcilePromotionRefreshesStaleState(t *testing.T) {
	// The approver wrote only the condition; the state field is stale.
	p := promo(1, true, approvedCond())
	p.Status.State = v1alpha1.PromotionWaiting
	plan := ReconcilePromotion(p, at(0))
	if !plan.Changed || plan.Promotion.Status.State != v1alpha1.PromotionReady || plan.Transition.String() != "dev-to-test-1: Waiting -> Ready" {
		t.Errorf("changed=%v state=%s transition=%v", plan.Changed, plan.Promotion.Status.State, plan.Transition)
	}
	again := ReconcilePromotion(plan.Promotion, at(time.Minute))
	if again.Changed || again.Transition != nil || again.Execute {
		t.Errorf("second pass: changed=%v transition=%v execute=%v", again.Changed, again.Transition, again.Execute)
	}
}

// ReconcilePromotion hands back an unchanged promotion without copying it,
// so whatever it changes it must change on a copy: the caller's promotion
// (the state before the pass) stays as it was, conditions included.
func TestReconcilePromotionLeavesItsInputAlone(t *testing.T) {
	stale := promo(1, true, approvedCond())
	stale.Status.State = v1alpha1.PromotionWaiting
	for name, tt := range map[string]struct {
		p       v1alpha1.VectorPromotion
		at      time.Duration
		changed bool
	}{
		"stale state":   {stale, 0, true},
		"overdue":       {promo(1, false, approvedCond(), runningCond(0)), 6 * time.Minute, true},
		"running":       {promo(1, false, approvedCond(), runningCond(0)), time.Minute, false},
		"finished":      {promo(1, false, approvedCond(), succeededCond(0)), time.Hour, false},
		"still waiting": {promo(1, true, waitingCond()), time.Hour, false},
	} {
		t.Run(name, func(t *testing.T) {
			before := *tt.p.DeepCopy()
			plan := ReconcilePromotion(tt.p, at(tt.at))
			if plan.Changed != tt.changed {
				t.Fatalf("changed=%v, want %v", plan.Changed, tt.changed)
			}
			if diff := cmp.Diff(before, tt.p); diff != "" {
				t.Errorf("the caller's promotion changed (-before +after):\n%s", diff)
			}
			if !plan.Changed {
				if diff := cmp.Diff(before, plan.Promotion); diff != "" {
					t.Errorf("a plan that changes nothing changed the promotion (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
