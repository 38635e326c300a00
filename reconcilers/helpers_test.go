package reconcilers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// t0 is the injected clock's origin; every test time is an offset from it.
var t0 = time.Date(2026, time.July, 27, 14, 30, 52, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mt(d time.Duration) metav1.Time { return metav1.NewTime(at(d)) }

var (
	testTarget = v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: "test-stage", Landscape: "test"}
	devSource  = v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "dev-stage", Landscape: "dev"}
	tmplSource = v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "dev-vector"}
)

func cond(typ string, status metav1.ConditionStatus, reason string, ltt time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: mt(ltt)}
}

// promo builds a promotion of config "dev-to-test" with the given conditions;
// its state is derived, as every writer does.
func promo(seq int64, requireApproval bool, conds ...metav1.Condition) v1alpha1.VectorPromotion {
	p := v1alpha1.VectorPromotion{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dev-to-test-%d", seq), Namespace: "project"},
		Spec: v1alpha1.VectorPromotionSpec{
			VectorPromotionConfigName: "dev-to-test",
			Source:                    devSource,
			Target:                    testTarget,
			Vector:                    fmt.Sprintf("app:2026.7.%d-000000000Z", seq),
			TTLAfterFinished:          metav1.Duration{Duration: 24 * time.Hour},
			RequireApproval:           requireApproval,
			Sequence:                  seq,
		},
		Status: v1alpha1.VectorPromotionStatus{Conditions: conds},
	}
	p.Status.State = DeriveState(&p)
	return p
}

// Condition shorthands for the seed's states.
func waitingCond() metav1.Condition {
	return cond(v1alpha1.ApprovedCondition, metav1.ConditionFalse, v1alpha1.WaitingForApprovalReason, 0)
}
func approvedCond() metav1.Condition {
	return cond(v1alpha1.ApprovedCondition, metav1.ConditionTrue, v1alpha1.ApprovedReason, 0)
}
func runningCond(since time.Duration) metav1.Condition {
	return cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionRunningReason, since)
}
func succeededCond(since time.Duration) metav1.Condition {
	return cond(v1alpha1.SucceededCondition, metav1.ConditionTrue, v1alpha1.PromotionSucceededReason, since)
}
func failedCond(since time.Duration) metav1.Condition {
	return cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionFailedReason, since)
}
func supersededCond(since time.Duration) metav1.Condition {
	return cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionSupersededReason, since)
}
func blockedCond(since time.Duration) metav1.Condition {
	return cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionTargetUnresolvedReason, since)
}

func states(ps []v1alpha1.VectorPromotion) map[int64]v1alpha1.PromotionState {
	m := map[int64]v1alpha1.PromotionState{}
	for i := range ps {
		m[ps[i].Spec.Sequence] = DeriveState(&ps[i])
	}
	return m
}
