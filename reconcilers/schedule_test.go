package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

const (
	waiting    = v1alpha1.PromotionWaiting
	ready      = v1alpha1.PromotionReady
	inProgress = v1alpha1.PromotionInProgress
	blocked    = v1alpha1.PromotionBlocked
	succeeded  = v1alpha1.PromotionSucceeded
	failed     = v1alpha1.PromotionFailed
	superseded = v1alpha1.PromotionSuperseded
)

func TestSchedulePromotions(t *testing.T) {
	m := time.Minute
	s := time.Second
	tests := []struct {
		name        string
		promotions  []v1alpha1.VectorPromotion
		unresolved  bool // the target does not resolve
		now         time.Duration
		want        map[int64]v1alpha1.PromotionState
		start       string
		transitions []string
		requeue     time.Duration
	}{
		{
			name:       "nothing to do",
			promotions: []v1alpha1.VectorPromotion{promo(1, false, succeededCond(0)), promo(2, true, waitingCond())},
			want:       map[int64]v1alpha1.PromotionState{1: succeeded, 2: waiting},
		},
		{
			name:        "a single ready promotion starts",
			promotions:  []v1alpha1.VectorPromotion{promo(1, false, approvedCond())},
			want:        map[int64]v1alpha1.PromotionState{1: inProgress},
			start:       "dev-to-test-1",
			transitions: []string{"dev-to-test-1: Ready -> InProgress (PromotionRunning)"},
			requeue:     5*m + s,
		},
		{
			name: "burst: only the newest ready runs, older ones are superseded",
			promotions: []v1alpha1.VectorPromotion{
				promo(1, false, approvedCond()), promo(2, false, approvedCond()),
				promo(3, false, approvedCond()), promo(4, false, approvedCond()),
			},
			want:  map[int64]v1alpha1.PromotionState{1: superseded, 2: superseded, 3: superseded, 4: inProgress},
			start: "dev-to-test-4",
			transitions: []string{
				"dev-to-test-4: Ready -> InProgress (PromotionRunning)",
				"dev-to-test-1: Ready -> Superseded (PromotionSuperseded)",
				"dev-to-test-2: Ready -> Superseded (PromotionSuperseded)",
				"dev-to-test-3: Ready -> Superseded (PromotionSuperseded)",
			},
			requeue: 5*m + s,
		},
		{
			name: "burst: a newer waiting promotion is never touched",
			promotions: []v1alpha1.VectorPromotion{
				promo(1, true, waitingCond()), promo(2, true, approvedCond()),
				promo(3, true, waitingCond()), promo(4, true, waitingCond()),
			},
			want:  map[int64]v1alpha1.PromotionState{1: superseded, 2: inProgress, 3: waiting, 4: waiting},
			start: "dev-to-test-2",
			transitions: []string{
				"dev-to-test-2: Ready -> InProgress (PromotionRunning)",
				"dev-to-test-1: Waiting -> Superseded (PromotionSuperseded)",
			},
			requeue: 5*m + s,
		},
		{
			name: "terminal promotions are never superseded",
			promotions: []v1alpha1.VectorPromotion{
				promo(1, false, failedCond(0)), promo(2, false, succeededCond(0)),
				promo(3, false, blockedCond(0)), promo(4, false, approvedCond()),
			},
			want:  map[int64]v1alpha1.PromotionState{1: failed, 2: succeeded, 3: superseded, 4: inProgress},
			start: "dev-to-test-4",
			transitions: []string{
				"dev-to-test-4: Ready -> InProgress (PromotionRunning)",
				"dev-to-test-3: Blocked -> Superseded (PromotionSuperseded)",
			},
			requeue: 5*m + s,
		},
		{
			name:       "a promotion that becomes ready while another runs stays ready",
			promotions: []v1alpha1.VectorPromotion{promo(1, false, runningCond(0)), promo(2, false, approvedCond())},
			now:        2 * m,
			want:       map[int64]v1alpha1.PromotionState{1: inProgress, 2: ready},
			requeue:    3*m + s,
		},
		{
			name:       "deadline from a sibling: 4m59s still running",
			promotions: []v1alpha1.VectorPromotion{promo(1, false, runningCond(0)), promo(2, true, approvedCond())},
			now:        4*m + 59*s,
			want:       map[int64]v1alpha1.PromotionState{1: inProgress, 2: ready},
			requeue:    2 * s,
		},
		{
			name:       "deadline from a sibling: exactly 5m still running",
			promotions: []v1alpha1.VectorPromotion{promo(1, false, runningCond(0)), promo(2, true, approvedCond())},
			now:        5 * m,
			want:       map[int64]v1alpha1.PromotionState{1: inProgress, 2: ready},
			requeue:    s,
		},
		{
			name:       "deadline from a sibling: 5m01s retired and the next starts in the same pass",
			promotions: []v1alpha1.VectorPromotion{promo(1, false, runningCond(0)), promo(2, true, approvedCond())},
			now:        5*m + s,
			want:       map[int64]v1alpha1.PromotionState{1: failed, 2: inProgress},
			start:      "dev-to-test-2",
			transitions: []string{
				"dev-to-test-1: InProgress -> Failed (PromotionTimedOut)",
				"dev-to-test-2: Ready -> InProgress (PromotionRunning)",
			},
			requeue: 5*m + s,
		},
		{
			name:        "deadline with nothing waiting: retired, nothing starts",
			promotions:  []v1alpha1.VectorPromotion{promo(1, false, runningCond(0)), promo(2, true, waitingCond())},
			now:         6 * m,
			want:        map[int64]v1alpha1.PromotionState{1: failed, 2: waiting},
			transitions: []string{"dev-to-test-1: InProgress -> Failed (PromotionTimedOut)"},
		},
		{
			name:        "unresolved target blocks the newest ready instead of starting it",
			promotions:  []v1alpha1.VectorPromotion{promo(1, false, approvedCond()), promo(2, false, approvedCond())},
			unresolved:  true,
			want:        map[int64]v1alpha1.PromotionState{1: ready, 2: blocked},
			transitions: []string{"dev-to-test-2: Ready -> Blocked (PromotionTargetUnresolved)"},
		},
		{
			name:       "a blocked promotion stays blocked while the target is unresolved",
			promotions: []v1alpha1.VectorPromotion{promo(1, false, blockedCond(0))},
			unresolved: true,
			want:       map[int64]v1alpha1.PromotionState{1: blocked},
		},
		{
			name:        "a blocked promotion whose target resolves again starts",
			promotions:  []v1alpha1.VectorPromotion{promo(1, false, blockedCond(-time.Hour))},
			want:        map[int64]v1alpha1.PromotionState{1: inProgress},
			start:       "dev-to-test-1",
			transitions: []string{"dev-to-test-1: Blocked -> InProgress (PromotionRunning)"},
			requeue:     5*m + s,
		},
		{
			name:       "a stale state field is refreshed and then scheduled",
			promotions: []v1alpha1.VectorPromotion{withState(promo(1, true, approvedCond()), waiting)},
			want:       map[int64]v1alpha1.PromotionState{1: inProgress},
			start:      "dev-to-test-1",
			transitions: []string{
				"dev-to-test-1: Waiting -> Ready",
				"dev-to-test-1: Ready -> InProgress (PromotionRunning)",
			},
			requeue: 5*m + s,
		},
		{
			name: "input order does not matter",
			promotions: []v1alpha1.VectorPromotion{
				promo(3, false, approvedCond()), promo(1, false, approvedCond()), promo(2, false, approvedCond()),
			},
			want:  map[int64]v1alpha1.PromotionState{1: superseded, 2: superseded, 3: inProgress},
			start: "dev-to-test-3",
			transitions: []string{
				"dev-to-test-3: Ready -> InProgress (PromotionRunning)",
				"dev-to-test-1: Ready -> Superseded (PromotionSuperseded)",
				"dev-to-test-2: Ready -> Superseded (PromotionSuperseded)",
			},
			requeue: 5*m + s,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := func(v1alpha1.StageReference) bool { return !tt.unresolved }
			got := SchedulePromotions(tt.promotions, res, at(tt.now))
			if diff := cmp.Diff(tt.want, states(got.Promotions)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			for _, p := range got.Promotions {
				if p.Status.State != DeriveState(&p) {
					t.Errorf("%s: status.state %s is not the derived %s", p.Name, p.Status.State, DeriveState(&p))
				}
			}
			if diff := cmp.Diff(tt.start, got.Start); diff != "" {
				t.Errorf("start (-want +got):\n%s", diff)
			}
			var trs []string
			for _, tr := range got.Transitions {
				trs = append(trs, tr.String())
			}
			if diff := cmp.Diff(tt.transitions, trs); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.requeue, got.RequeueAfter); diff != "" {
				t.Errorf("requeue (-want +got):\n%s", diff)
			}
			// A second pass at the same instant changes nothing.
			again := SchedulePromotions(got.Promotions, res, at(tt.now))
			if len(again.Changed) != 0 || again.Start != "" {
				t.Errorf("second pass changed %v, started %q", again.Changed, again.Start)
			}
		})
	}
}

// Approving a stale promotion never rolls the target back: once a newer one
// ran, the older one is Superseded and its approval is ignored.
func TestStaleApprovalNeverRollsBack(t *testing.T) {
	ps := []v1alpha1.VectorPromotion{promo(1, true, waitingCond()), promo(2, true, waitingCond())}
	all := func(v1alpha1.StageReference) bool { return true }

	r, err := Approve(ps[1], "alice", at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ps[1] = r.Promotion
	sched := SchedulePromotions(ps, all, at(time.Minute))
	if sched.Start != "dev-to-test-2" {
		t.Fatalf("started %q, want dev-to-test-2", sched.Start)
	}
	ps = sched.Promotions
	done, _, err := Complete(ps[1], Result{Outcome: OutcomeSucceeded, Commit: "c2"}, at(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ps[1] = done

	stale, err := Approve(ps[0], "bob", at(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if stale.Changed || stale.Promotion.Status.Approval != nil {
		t.Errorf("approving the superseded promotion changed it: %+v", stale.Promotion.Status)
	}
	ps[0] = stale.Promotion
	sched = SchedulePromotions(ps, all, at(3*time.Minute))
	if sched.Start != "" || len(sched.Changed) != 0 {
		t.Errorf("after a stale approval: started %q, changed %v", sched.Start, sched.Changed)
	}
	if diff := cmp.Diff(map[int64]v1alpha1.PromotionState{1: superseded, 2: succeeded}, states(sched.Promotions)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

func TestScheduleDoesNotModifyItsInput(t *testing.T) {
	ps := []v1alpha1.VectorPromotion{promo(2, false, approvedCond()), promo(1, false, approvedCond())}
	before := []v1alpha1.VectorPromotion{*ps[0].DeepCopy(), *ps[1].DeepCopy()}
	SchedulePromotions(ps, func(v1alpha1.StageReference) bool { return true }, at(0))
	if diff := cmp.Diff(before, ps); diff != "" {
		t.Errorf("input modified (-before +after):\n%s", diff)
	}
}

func withState(p v1alpha1.VectorPromotion, s v1alpha1.PromotionState) v1alpha1.VectorPromotion {
	p.Status.State = s
	return p
}
