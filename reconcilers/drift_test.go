package reconcilers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// promoOf is promo of another vector.
func promoOf(vector string, seq int64, requireApproval bool, conds ...metav1.Condition) v1alpha1.VectorPromotion {
	p := promo(seq, requireApproval, conds...)
	p.Spec.Vector = vector
	return p
}

func timedOutCond(since time.Duration) metav1.Condition {
	return cond(v1alpha1.SucceededCondition, metav1.ConditionFalse, v1alpha1.PromotionTimedOutReason, since)
}

// record is the history entry a finished promoOf leaves.
func record(vector string, seq int64, state v1alpha1.PromotionState, reason string, finished time.Duration) v1alpha1.PromotionRecord {
	return v1alpha1.PromotionRecord{Vector: vector, Promotion: fmt.Sprintf("dev-to-test-%d", seq), Sequence: seq,
		State: state, Reason: reason, FinishedAt: mt(finished)}
}

// TestDriftRules: drift is what the overlays name now; whether a vector was
// already tried is the config's history, whether or not its promotions are
// still there (ttlAfterFinished deletes them).
func TestDriftRules(t *testing.T) {
	const (
		a = "app:a"
		b = "app:b"
		o = "app:old"
	)
	succeeded := v1alpha1.PromotionSucceeded
	failed := v1alpha1.PromotionFailed
	tests := []struct {
		name string
		// approval: the config requires approval (a Stage source by default);
		// otherwise it is automatic.
		approval       bool
		source, target string
		promotions     []v1alpha1.VectorPromotion
		history        []v1alpha1.PromotionRecord
		wantCreate     bool
		wantDrift      metav1.ConditionStatus
		wantReason     string
		wantMessage    []string // substrings
	}{
		{name: "in sync", source: a, target: a, wantDrift: metav1.ConditionFalse, wantReason: v1alpha1.InSyncReason},
		{name: "no source vector", source: "", target: a, wantDrift: metav1.ConditionFalse, wantReason: v1alpha1.NoSourceVectorReason},
		{name: "new vector: automatic", source: a, target: o, wantCreate: true, wantDrift: metav1.ConditionTrue,
			wantReason: v1alpha1.PromotionOfferedReason, wantMessage: []string{"the source offers vector app:a, the target names app:old", "promotion dev-to-test-1 offers it"}},
		{name: "new vector: approval", approval: true, source: a, target: "", wantCreate: true, wantDrift: metav1.ConditionTrue,
			wantReason: v1alpha1.PromotionOfferedReason, wantMessage: []string{"the target names no vector"}},
		{name: "waiting candidate", approval: true, source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, true, waitingCond())},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason, wantMessage: []string{"promotion dev-to-test-1 offers it"}},
		{name: "ready candidate", approval: true, source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, true, approvedCond())},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "blocked candidate", source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, false, blockedCond(0))},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "running candidate", source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, false, runningCond(0))},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "failed: not retried (automatic)", source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, false, failedCond(-time.Hour))},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.FailedNotRetriedReason,
			wantMessage: []string{"promotion dev-to-test-1 of it failed (PromotionFailed)", "vectorflow promote --config dev-to-test makes a fresh candidate"}},
		{name: "failed: not retried (approval)", approval: true, source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, true, approvedCond(), failedCond(-time.Hour))},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.FailedNotRetriedReason},
		{name: "timed out: not retried", source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, false, timedOutCond(-time.Hour))},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.FailedNotRetriedReason, wantMessage: []string{"(PromotionTimedOut)"}},
		{name: "failed and deleted by the TTL: still not retried", source: a, target: o,
			history:   []v1alpha1.PromotionRecord{record(a, 1, failed, v1alpha1.PromotionFailedReason, -48*time.Hour)},
			wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.FailedNotRetriedReason},
		{name: "timed out and deleted by the TTL: still not retried (approval)", approval: true, source: a, target: o,
			history:   []v1alpha1.PromotionRecord{record(a, 1, failed, v1alpha1.PromotionTimedOutReason, -48*time.Hour)},
			wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.FailedNotRetriedReason},
		{name: "superseded never ran: offered again", approval: true, source: a, target: b,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, true, waitingCond(), supersededCond(-time.Hour)),
				promoOf(b, 2, true, approvedCond(), succeededCond(-time.Hour))},
			wantCreate: true, wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "reverted by hand, approval: a new candidate", approval: true, source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, true, approvedCond(), succeededCond(-time.Hour))},
			wantCreate: true, wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason, wantMessage: []string{"promotion dev-to-test-2 offers it"}},
		{name: "reverted by hand, approval, promotion deleted by the TTL: a new candidate", approval: true, source: a, target: o,
			history:    []v1alpha1.PromotionRecord{record(a, 1, succeeded, v1alpha1.PromotionSucceededReason, -48*time.Hour)},
			wantCreate: true, wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "reverted by hand, automatic: not undone", source: a, target: o,
			promotions: []v1alpha1.VectorPromotion{promoOf(a, 1, false, succeededCond(-time.Hour))},
			wantDrift:  metav1.ConditionTrue, wantReason: v1alpha1.TargetChangedByHandReason,
			wantMessage: []string{"the source offers vector app:a, the target names app:old", "promotion dev-to-test-1 wrote it",
				"vectorflow promote --config dev-to-test applies it again"}},
		{name: "reverted by hand, automatic, promotion deleted by the TTL: not undone", source: a, target: o,
			history:   []v1alpha1.PromotionRecord{record(a, 1, succeeded, v1alpha1.PromotionSucceededReason, -48*time.Hour)},
			wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.TargetChangedByHandReason},
		{name: "the source came back to a vector promoted before another: offered", source: a, target: b,
			history: []v1alpha1.PromotionRecord{
				record(b, 2, succeeded, v1alpha1.PromotionSucceededReason, -24*time.Hour),
				record(a, 1, succeeded, v1alpha1.PromotionSucceededReason, -48*time.Hour)},
			wantCreate: true, wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "a name reused after a reset is another execution", source: a, target: b,
			history: []v1alpha1.PromotionRecord{
				record(b, 1, succeeded, v1alpha1.PromotionSucceededReason, -24*time.Hour),
				record(a, 1, succeeded, v1alpha1.PromotionSucceededReason, -48*time.Hour)},
			wantCreate: true, wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.PromotionOfferedReason},
		{name: "the newest execution of the vector counts: failed, then succeeded by hand, then reverted", source: a, target: o,
			history: []v1alpha1.PromotionRecord{
				record(a, 2, succeeded, v1alpha1.PromotionSucceededReason, -24*time.Hour),
				record(a, 1, failed, v1alpha1.PromotionFailedReason, -48*time.Hour)},
			wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.TargetChangedByHandReason},
		{name: "the newest execution of the vector counts: succeeded, then a manual promote failed", approval: true, source: a, target: o,
			history: []v1alpha1.PromotionRecord{
				record(a, 2, failed, v1alpha1.PromotionFailedReason, -24*time.Hour),
				record(a, 1, succeeded, v1alpha1.PromotionSucceededReason, -48*time.Hour)},
			wantDrift: metav1.ConditionTrue, wantReason: v1alpha1.FailedNotRetriedReason, wantMessage: []string{"promotion dev-to-test-2 of it failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(devSource, tt.source, tt.target)
			w.in.Config.Spec.Approval = &v1alpha1.ApprovalPolicy{Required: ptr(tt.approval)}
			w.in.Promotions = tt.promotions
			w.in.Config.Status.PromotionHistory = tt.history
			for _, p := range append(tt.promotions, v1alpha1.VectorPromotion{}) {
				w.in.Config.Status.Sequence = max(w.in.Config.Status.Sequence, p.Spec.Sequence, int64(len(tt.history)))
			}
			plan := w.pass(t, at(0))
			if got := len(plan.Create) == 1; got != tt.wantCreate || len(plan.Create) > 1 {
				t.Fatalf("created %v, want a candidate: %v", names(plan.Create), tt.wantCreate)
			}
			if tt.wantCreate {
				if plan.Create[0].Spec.Vector != tt.source || plan.Create[0].Spec.RequireApproval != tt.approval {
					t.Errorf("created a promotion of %s (requireApproval %v)", plan.Create[0].Spec.Vector, plan.Create[0].Spec.RequireApproval)
				}
			}
			d := findCondition(plan.Status.Conditions, v1alpha1.DriftCondition)
			if d == nil {
				t.Fatalf("no Drift condition: %+v", plan.Status.Conditions)
			}
			if d.Status != tt.wantDrift || d.Reason != tt.wantReason {
				t.Errorf("Drift %s/%s (%s), want %s/%s", d.Status, d.Reason, d.Message, tt.wantDrift, tt.wantReason)
			}
			for _, m := range tt.wantMessage {
				if !strings.Contains(d.Message, m) {
					t.Errorf("Drift message %q does not say %q", d.Message, m)
				}
			}
			if plan.Status.SourceVector != tt.source || plan.Status.TargetVector != tt.target {
				t.Errorf("status names source %q and target %q, want %q and %q", plan.Status.SourceVector, plan.Status.TargetVector, tt.source, tt.target)
			}
			// The decision holds: later passes create nothing more and
			// write nothing.
			for i := 1; i <= 3; i++ {
				again := w.pass(t, at(time.Duration(i)*time.Minute))
				if len(again.Create) != 0 {
					t.Fatalf("pass %d created %v", i, names(again.Create))
				}
			}
		})
	}
}

// TestFailedIsNotRetriedAfterTheTTL: an automatic config whose promotion
// failed does not try the vector again when cleanup has deleted the
// promotion; a new source vector is promoted as usual.
func TestFailedIsNotRetriedAfterTheTTL(t *testing.T) {
	w := newWorld(tmplSource, "dev-vector:v2", "dev-vector:v1")
	w.in.Config.Spec.KeepLastPromotions = ptr(int32(0))
	w.in.Config.Spec.TTLAfterFinished = &metav1.Duration{Duration: time.Hour}
	plan := w.pass(t, at(0))
	done, _, err := Complete(*plan.Start, Result{Outcome: OutcomeFailed, Message: "push rejected"}, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	*w.find("dev-to-test-1") = done
	w.pass(t, at(2*time.Minute))
	w.pass(t, at(2*time.Hour))
	if w.find("dev-to-test-1") != nil {
		t.Fatal("cleanup kept dev-to-test-1 past its TTL with keepLastPromotions 0")
	}
	for i := 3; i < 6; i++ {
		if plan := w.pass(t, at(time.Duration(i)*time.Hour)); len(plan.Create) != 0 {
			t.Fatalf("pass at %dh retried the failed vector on its own: created %v", i, names(plan.Create))
		}
	}
	want := []v1alpha1.PromotionRecord{{Vector: "dev-vector:v2", Promotion: "dev-to-test-1", Sequence: 1,
		State: v1alpha1.PromotionFailed, Reason: v1alpha1.PromotionFailedReason, FinishedAt: mt(time.Minute)}}
	if diff := cmp.Diff(want, w.in.Config.Status.PromotionHistory); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if d := findCondition(w.in.Config.Status.Conditions, v1alpha1.DriftCondition); d == nil || d.Reason != v1alpha1.FailedNotRetriedReason {
		t.Errorf("Drift %+v, want %s", d, v1alpha1.FailedNotRetriedReason)
	}
	w.in.Source.Vector = "dev-vector:v3"
	if plan := w.pass(t, at(6*time.Hour)); len(plan.Create) != 1 || plan.Create[0].Spec.Vector != "dev-vector:v3" {
		t.Errorf("a new source vector after the failure: created %v", names(plan.Create))
	}
}

// TestRevertAfterTheTTL: a promotion succeeds, a person reverts its commit,
// and cleanup deletes the promotion. An automatic config leaves the revert
// alone and says so; a config that requires approval offers a candidate.
func TestRevertAfterTheTTL(t *testing.T) {
	for _, approval := range []bool{false, true} {
		t.Run(fmt.Sprintf("approval %v", approval), func(t *testing.T) {
			w := newWorld(devSource, "app:v2", "app:v1")
			w.in.Config.Spec.Approval = &v1alpha1.ApprovalPolicy{Required: ptr(approval)}
			w.in.Config.Spec.KeepLastPromotions = ptr(int32(0))
			w.in.Config.Spec.TTLAfterFinished = &metav1.Duration{Duration: time.Hour}
			w.pass(t, at(0))
			p := *w.find("dev-to-test-1")
			if approval {
				r, err := Approve(p, "alice", at(time.Second))
				if err != nil {
					t.Fatal(err)
				}
				*w.find("dev-to-test-1") = r.Promotion
				p = *w.pass(t, at(time.Second)).Start
			}
			done, _, err := Complete(p, Result{Outcome: OutcomeSucceeded, Commit: "c0ffee"}, at(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			*w.find("dev-to-test-1") = done
			w.in.TargetVector = "app:v2"
			w.pass(t, at(2*time.Minute))
			w.in.TargetVector = "app:v1" // git revert of the promotion commit
			plan := w.pass(t, at(2*time.Hour))
			if w.find("dev-to-test-1") != nil {
				t.Fatal("cleanup kept dev-to-test-1 past its TTL with keepLastPromotions 0")
			}
			created := names(plan.Create)
			for i := 3; i < 6; i++ {
				created = append(created, names(w.pass(t, at(time.Duration(i)*time.Hour)).Create)...)
			}
			d := findCondition(w.in.Config.Status.Conditions, v1alpha1.DriftCondition)
			if approval {
				if diff := cmp.Diff([]string{"dev-to-test-2"}, created); diff != "" {
					t.Errorf("a reverted vector of a config that requires approval is offered again (-want +got):\n%s", diff)
				}
				if p := w.find("dev-to-test-2"); p == nil || p.Status.State != waiting || p.Spec.Vector != "app:v2" {
					t.Errorf("candidate %+v, want a Waiting promotion of app:v2", p)
				}
				return
			}
			if len(created) != 0 {
				t.Errorf("an automatic config re-promoted a reverted vector on its own: created %v", created)
			}
			if d == nil || d.Reason != v1alpha1.TargetChangedByHandReason || !strings.Contains(d.Message, "app:v2") || !strings.Contains(d.Message, "names app:v1") {
				t.Errorf("Drift %+v, want %s naming both vectors", d, v1alpha1.TargetChangedByHandReason)
			}
		})
	}
}

func TestRecordHistory(t *testing.T) {
	rec := func(seq int64, state v1alpha1.PromotionState, reason string, finished time.Duration) v1alpha1.PromotionRecord {
		return record(fmt.Sprintf("app:2026.7.%d-000000000Z", seq), seq, state, reason, finished)
	}
	succeeded, failed := v1alpha1.PromotionSucceeded, v1alpha1.PromotionFailed
	t.Run("finished executions only, newest first", func(t *testing.T) {
		got := RecordHistory(nil, []v1alpha1.VectorPromotion{
			promo(1, false, succeededCond(-3*time.Hour)),
			promo(2, true, waitingCond()),
			promo(3, false, timedOutCond(-time.Hour)),
			promo(4, true, waitingCond(), supersededCond(0)),
			promo(5, false, blockedCond(0)),
			promo(6, false, failedCond(-2*time.Hour)),
			promo(7, false, runningCond(0)),
		})
		want := []v1alpha1.PromotionRecord{
			rec(3, failed, v1alpha1.PromotionTimedOutReason, -time.Hour),
			rec(6, failed, v1alpha1.PromotionFailedReason, -2*time.Hour),
			rec(1, succeeded, v1alpha1.PromotionSucceededReason, -3*time.Hour),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("idempotent, and the input is not modified", func(t *testing.T) {
		history := []v1alpha1.PromotionRecord{rec(1, succeeded, v1alpha1.PromotionSucceededReason, -3*time.Hour)}
		ps := []v1alpha1.VectorPromotion{promo(1, false, succeededCond(-3*time.Hour))}
		if got := RecordHistory(history, ps); !cmp.Equal(history, got) {
			t.Errorf("recorded twice: %+v", got)
		}
		ps = append(ps, promo(2, false, failedCond(-time.Hour)))
		got := RecordHistory(history, ps)
		if len(got) != 2 || got[0].Promotion != "dev-to-test-2" || len(history) != 1 || history[0].Promotion != "dev-to-test-1" {
			t.Errorf("got %+v, history now %+v", got, history)
		}
	})
	t.Run("a name reused after a reset is a new record", func(t *testing.T) {
		history := []v1alpha1.PromotionRecord{rec(1, succeeded, v1alpha1.PromotionSucceededReason, -48*time.Hour)}
		got := RecordHistory(history, []v1alpha1.VectorPromotion{promo(1, false, failedCond(-time.Hour))})
		want := []v1alpha1.PromotionRecord{rec(1, failed, v1alpha1.PromotionFailedReason, -time.Hour), history[0]}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("bounded, the oldest dropped", func(t *testing.T) {
		var ps []v1alpha1.VectorPromotion
		for seq := int64(1); seq <= v1alpha1.MaxPromotionHistory+5; seq++ {
			ps = append(ps, promo(seq, false, succeededCond(time.Duration(seq)*time.Minute)))
		}
		got := RecordHistory(nil, ps)
		if len(got) != v1alpha1.MaxPromotionHistory || got[0].Sequence != v1alpha1.MaxPromotionHistory+5 || got[len(got)-1].Sequence != 6 {
			t.Errorf("%d records, newest %d, oldest %d", len(got), got[0].Sequence, got[len(got)-1].Sequence)
		}
		// Same finish time: the higher sequence is newer.
		got = RecordHistory(nil, []v1alpha1.VectorPromotion{promo(1, false, failedCond(0)), promo(2, false, succeededCond(0))})
		if got[0].Sequence != 2 {
			t.Errorf("tie broken to %d, want the higher sequence", got[0].Sequence)
		}
	})
}

// TestConflictsMakeAConfigNotReady: a config on a cycle or sharing its
// target creates nothing, on its own or by `vectorflow promote`, and says
// why on its Ready condition; it recovers when the conflict is gone.
func TestConflictsMakeAConfigNotReady(t *testing.T) {
	w := newWorld(tmplSource, "dev-vector:v2", "dev-vector:v1")
	w.in.Conflicts = []string{"spec.target: Invalid value: \"test/test\": Stage test-stage in Landscape test is also the target of VectorPromotionConfig hotfix"}
	plan := w.pass(t, at(0))
	if len(plan.Create) != 0 {
		t.Errorf("created %v while in conflict", names(plan.Create))
	}
	want := &metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.ConfigConflictReason,
		Message: w.in.Conflicts[0], ObservedGeneration: 1, LastTransitionTime: mt(0)}
	if diff := cmp.Diff(want, findCondition(plan.Status.Conditions, v1alpha1.ReadyCondition)); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}
	if _, err := Promote(w.in, at(time.Minute)); err == nil || !strings.Contains(err.Error(), "also the target of VectorPromotionConfig hotfix") {
		t.Errorf("promote while in conflict: %v", err)
	}
	w.in.Conflicts = nil
	if plan := w.pass(t, at(2*time.Minute)); len(plan.Create) != 1 {
		t.Errorf("after the conflict is resolved: created %v", names(plan.Create))
	}
}
