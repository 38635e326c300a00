package reconcilers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestEvents(t *testing.T) {
	withCommit := func(p v1alpha1.VectorPromotion, commit string) v1alpha1.VectorPromotion {
		p.Status.Commit = commit
		return p
	}
	withMessage := func(c metav1.Condition, msg string) metav1.Condition {
		c.Message = msg
		return c
	}
	refused := withMessage(cond(v1alpha1.ApprovedCondition, metav1.ConditionFalse, v1alpha1.ApprovalRefusedReason, 0),
		"approval by mallory does not verify against the approvers of dev-to-test")
	failed := withMessage(cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.OverlayBuildFailedReason, 0),
		"kustomize build failed")
	superseded := withMessage(cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionSupersededReason, 0),
		"superseded by dev-to-test-3")
	stage := func(conds ...metav1.Condition) *v1alpha1.Stage {
		return &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: "test-stage"}, Spec: v1alpha1.StageSpec{Landscape: "test"},
			Status: v1alpha1.StageStatus{Vector: "app:1", Commit: "c0ffee", Conditions: conds}}
	}
	meta := func(p v1alpha1.VectorPromotion) map[string]string {
		m := map[string]string{EventMetaPromotion: p.Name, EventMetaVector: p.Spec.Vector, EventMetaConfig: "dev-to-test", EventMetaTarget: "test/test-stage"}
		if p.Status.Commit != "" {
			m[EventMetaRevision] = p.Status.Commit
		}
		return m
	}
	waiting1 := promo(1, true, waitingCond())
	running1 := promo(1, true, approvedCond(), runningCond(0))
	done1 := withCommit(promo(1, true, approvedCond(), succeededCond(0)), "abc123")
	failed1 := promo(1, true, approvedCond(), failed)
	refused1 := promo(1, true, refused)
	superseded1 := promo(1, true, waitingCond(), superseded)
	waiting2 := promo(2, true, waitingCond())
	readyFalse := withMessage(cond(v1alpha1.ReadyCondition, metav1.ConditionFalse, "HealthCheckFailed", 0), "deployment app is not healthy")
	readyTrue := cond(v1alpha1.ReadyCondition, metav1.ConditionTrue, "Active", 0)

	tests := []struct {
		name          string
		before, after []v1alpha1.VectorPromotion
		stageBefore   *v1alpha1.Stage
		stageAfter    *v1alpha1.Stage
		want          []Event
	}{
		{name: "nothing changed", before: []v1alpha1.VectorPromotion{waiting1}, after: []v1alpha1.VectorPromotion{waiting1}},
		{name: "a new promotion waits for approval", after: []v1alpha1.VectorPromotion{waiting1},
			want: []Event{{Kind: "VectorPromotion", Name: "dev-to-test-1", Severity: SeverityInfo, Reason: "WaitingForApproval", Action: ActionApprove,
				Message: "promotion dev-to-test-1 of vector app:2026.7.1-000000000Z to Stage test-stage in Landscape test waits for an approval", Metadata: meta(waiting1)}}},
		{name: "a new promotion that needs no approval is no event", after: []v1alpha1.VectorPromotion{promo(1, false)}},
		{name: "approved and running is no event", before: []v1alpha1.VectorPromotion{waiting1}, after: []v1alpha1.VectorPromotion{running1}},
		{name: "succeeded names the commit", before: []v1alpha1.VectorPromotion{running1}, after: []v1alpha1.VectorPromotion{done1},
			want: []Event{{Kind: "VectorPromotion", Name: "dev-to-test-1", Severity: SeverityInfo, Reason: "PromotionSucceeded", Action: ActionPromote,
				Message: "promoted vector app:2026.7.1-000000000Z to Stage test-stage in Landscape test in commit abc123", Metadata: meta(done1)}}},
		{name: "failed is an error with the condition's reason", before: []v1alpha1.VectorPromotion{running1}, after: []v1alpha1.VectorPromotion{failed1},
			want: []Event{{Kind: "VectorPromotion", Name: "dev-to-test-1", Severity: SeverityError, Reason: "OverlayBuildFailed", Action: ActionPromote,
				Message: "promotion of vector app:2026.7.1-000000000Z to Stage test-stage in Landscape test failed: kustomize build failed", Metadata: meta(failed1)}}},
		{name: "superseded, and the new one waits, in sequence order", before: []v1alpha1.VectorPromotion{waiting1}, after: []v1alpha1.VectorPromotion{waiting2, superseded1},
			want: []Event{
				{Kind: "VectorPromotion", Name: "dev-to-test-1", Severity: SeverityInfo, Reason: "PromotionSuperseded", Action: ActionPromote,
					Message: "promotion of vector app:2026.7.1-000000000Z to Stage test-stage in Landscape test was superseded: superseded by dev-to-test-3", Metadata: meta(superseded1)},
				{Kind: "VectorPromotion", Name: "dev-to-test-2", Severity: SeverityInfo, Reason: "WaitingForApproval", Action: ActionApprove,
					Message: "promotion dev-to-test-2 of vector app:2026.7.2-000000000Z to Stage test-stage in Landscape test waits for an approval", Metadata: meta(waiting2)}}},
		{name: "a refused approval of a waiting promotion", before: []v1alpha1.VectorPromotion{waiting1}, after: []v1alpha1.VectorPromotion{refused1},
			want: []Event{{Kind: "VectorPromotion", Name: "dev-to-test-1", Severity: SeverityError, Reason: "ApprovalRefused", Action: ActionApprove,
				Message: refused.Message, Metadata: meta(refused1)}}},
		{name: "the same refusal again is no event", before: []v1alpha1.VectorPromotion{refused1}, after: []v1alpha1.VectorPromotion{refused1}},
		{name: "a deleted promotion is no event", before: []v1alpha1.VectorPromotion{done1}},
		{name: "a stage turned unhealthy", stageBefore: stage(readyTrue), stageAfter: stage(readyFalse),
			want: []Event{{Kind: "Stage", Name: "test-stage", Severity: SeverityError, Reason: "HealthCheckFailed", Action: ActionObserve,
				Message:  "stage test/test-stage is not ready: deployment app is not healthy",
				Metadata: map[string]string{EventMetaLandscape: "test", EventMetaVector: "app:1", EventMetaRevision: "c0ffee"}}}},
		{name: "a stage that stays unhealthy is no event", stageBefore: stage(readyFalse), stageAfter: stage(readyFalse)},
		{name: "a stage that recovers is no event", stageBefore: stage(readyFalse), stageAfter: stage(readyTrue)},
		{name: "a stage without a Ready condition is no event", stageAfter: stage()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := NewState(), NewState()
			for _, p := range tt.before {
				before.Promotions[p.Name] = &p
			}
			for _, p := range tt.after {
				after.Promotions[p.Name] = &p
			}
			if tt.stageBefore != nil {
				before.Stages["test/test-stage"] = tt.stageBefore
			}
			if tt.stageAfter != nil {
				after.Stages["test/test-stage"] = tt.stageAfter
			}
			if diff := cmp.Diff(tt.want, Events(before, after)); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}
