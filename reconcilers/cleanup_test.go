package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func withTTL(p v1alpha1.VectorPromotion, ttl time.Duration) v1alpha1.VectorPromotion {
	p.Spec.TTLAfterFinished = metav1.Duration{Duration: ttl}
	return p
}

func TestCleanup(t *testing.T) {
	h := time.Hour
	// Finished promotions 1..n, each finished at -seq hours with a long TTL.
	finished := func(n int) []v1alpha1.VectorPromotion {
		var ps []v1alpha1.VectorPromotion
		for seq := 1; seq <= n; seq++ {
			ps = append(ps, withTTL(promo(int64(seq), false, succeededCond(-time.Duration(seq)*h)), 1000*h))
		}
		return ps
	}
	nonTerminal := []v1alpha1.VectorPromotion{
		withTTL(promo(11, true, waitingCond()), 0),
		withTTL(promo(12, true, approvedCond()), 0),
		withTTL(promo(13, false, blockedCond(-100*h)), 0),
		withTTL(promo(14, false, runningCond(-100*h)), 0),
	}
	tests := []struct {
		name       string
		promotions []v1alpha1.VectorPromotion
		keep       int
		now        time.Duration
		want       []string
		requeue    time.Duration
	}{
		{"one second before the ttl", []v1alpha1.VectorPromotion{withTTL(promo(1, false, succeededCond(0)), h)}, 0, h - time.Second, nil, time.Second},
		{"exactly at the ttl", []v1alpha1.VectorPromotion{withTTL(promo(1, false, succeededCond(0)), h)}, 0, h, []string{"dev-to-test-1"}, 0},
		{"ttl counts from the terminal transition, per state", []v1alpha1.VectorPromotion{
			withTTL(promo(1, false, failedCond(-2*h)), h),
			withTTL(promo(2, true, waitingCond(), supersededCond(-30*time.Minute)), h),
			withTTL(promo(3, false, cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionTimedOutReason, -h)), h),
		}, 0, 0, []string{"dev-to-test-1", "dev-to-test-3"}, 30 * time.Minute},
		{"keep=0: only the ttl deletes", finished(3), 0, 0, nil, 997 * h},
		{"keep=0: every expired one goes", finished(3), 0, 999 * h, []string{"dev-to-test-1", "dev-to-test-2", "dev-to-test-3"}, 0},
		{"the newest keep stay past their ttl", finished(3), 2, 2000 * h, []string{"dev-to-test-1"}, 0},
		{"keep is by sequence, not by finish time", []v1alpha1.VectorPromotion{
			withTTL(promo(1, false, succeededCond(0)), h),
			withTTL(promo(2, false, failedCond(-2*h)), h),
		}, 1, 3 * h, []string{"dev-to-test-1"}, 0},
		{"an aggressive ttl cannot erase the audit trail", []v1alpha1.VectorPromotion{
			withTTL(promo(1, false, succeededCond(-h)), 0),
			withTTL(promo(2, false, failedCond(-h)), 0),
			withTTL(promo(3, true, waitingCond(), supersededCond(-h)), 0),
		}, 10, 0, nil, 0},
		{"beyond keep the unexpired stay until their ttl", append(finished(3), withTTL(promo(4, false, succeededCond(-2*h)), h)), 1, 0,
			nil, 997 * h},
		{"beyond keep, expired, oldest first", append(finished(2), withTTL(promo(3, false, succeededCond(-2*h)), h), withTTL(promo(4, false, succeededCond(0)), h)), 1, 0,
			[]string{"dev-to-test-3"}, 998 * h},
		{"non-terminal are never deleted", nonTerminal, 0, 0, nil, 0},
		{"non-terminal do not count towards keep", append(finished(3), nonTerminal...), 2, 2000 * h, []string{"dev-to-test-1"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Cleanup(tt.promotions, tt.keep, at(tt.now))
			if diff := cmp.Diff(tt.want, got.Delete); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.requeue, got.RequeueAfter); diff != "" {
				t.Errorf("requeue (-want +got):\n%s", diff)
			}
			if len(got.Transitions) != len(got.Delete) {
				t.Errorf("%d transitions for %d deletions", len(got.Transitions), len(got.Delete))
			}
		})
	}
}

func TestCleanupInConfigPass(t *testing.T) {
	// A promotion that times out in this pass is finished now: with keep=0
	// and a zero TTL it is deleted in the same pass, and the plan does not
	// also update it.
	w := newWorld(devSource, "app:2026.7.1-000000000Z", "app:v0")
	w.in.Config.Spec.KeepLastPromotions = ptr(int32(0))
	w.in.Config.Status.Sequence = 1
	w.in.Promotions = []v1alpha1.VectorPromotion{withTTL(promo(1, false, approvedCond(), runningCond(0)), 0)}
	plan := ReconcileConfig(w.in, at(6*time.Minute))
	if diff := cmp.Diff([]string{"dev-to-test-1"}, plan.Delete); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
	if len(plan.Update) != 0 {
		t.Errorf("updated %v, which is deleted", names(plan.Update))
	}
	want := []string{"dev-to-test-1: InProgress -> Failed (PromotionTimedOut)", "dev-to-test-1: Failed -> (deleted)"}
	if diff := cmp.Diff(want, transitionStrings(plan.Transitions)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	// The aggregate still mirrors the timed-out run.
	if c := findCondition(plan.Status.LastPromotionConditions, v1alpha1.SucceededCondition); c == nil || c.Reason != v1alpha1.PromotionTimedOutReason {
		t.Errorf("lastPromotionConditions %+v", plan.Status.LastPromotionConditions)
	}
}
