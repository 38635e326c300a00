package reconcilers

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// simulate drives one config through a script of events (new source vectors,
// approvals, completions, time steps, target outages, manual promotes, the
// promotion's own retries), applying every plan as an executor would, and
// checks the scheduler's invariants after each step:
//
//   - never two promotions InProgress;
//   - a promotion is superseded only by a newer one that starts in that pass;
//   - created sequences strictly increase, and starts never go back in sequence;
//   - status.state is always the derived state.
func simulate(t *testing.T, script []byte) map[string]int {
	t.Helper()
	seen := map[string]int{}
	if len(script) == 0 {
		return seen
	}
	source := tmplSource
	if script[0]%2 == 1 {
		source = devSource
	}
	w := newWorld(source, "app:v0", "")
	if script[0]%4 >= 2 {
		w.in.Config.Spec.UpdateDelay = nil
	} else {
		w.in.Config.Spec.UpdateDelay = ptrDuration(2 * time.Minute)
	}
	w.in.Config.Spec.KeepLastPromotions = ptr(int32(script[0] % 5))
	w.in.Config.Spec.TTLAfterFinished = ptrDuration(time.Hour)

	now := t0
	vectors := 0
	var lastCreated, lastStarted int64
	check := func(step int, plan *ConfigPlan) {
		t.Helper()
		for _, p := range plan.Create {
			if p.Spec.Sequence <= lastCreated {
				t.Fatalf("step %d: created %s with sequence %d after %d", step, p.Name, p.Spec.Sequence, lastCreated)
			}
			lastCreated = p.Spec.Sequence
		}
		var start int64 = -1
		if plan.Start != nil {
			start = plan.Start.Spec.Sequence
			if start < lastStarted {
				t.Fatalf("step %d: started %s (sequence %d) after sequence %d ran", step, plan.Start.Name, start, lastStarted)
			}
			lastStarted = start
		}
		for _, tr := range plan.Transitions {
			seen[string(tr.To)+"/"+tr.Reason]++
			if tr.To != v1alpha1.PromotionSuperseded {
				continue
			}
			var seq int64
			fmt.Sscanf(tr.Promotion, "dev-to-test-%d", &seq)
			if seq >= start {
				t.Fatalf("step %d: %s superseded without a newer start (start %d)", step, tr.Promotion, start)
			}
		}
		running := 0
		for i := range w.in.Promotions {
			p := &w.in.Promotions[i]
			if p.Status.State != DeriveState(p) {
				t.Fatalf("step %d: %s has state %s, derived %s", step, p.Name, p.Status.State, DeriveState(p))
			}
			if p.Status.State == v1alpha1.PromotionInProgress {
				running++
			}
		}
		if running > 1 {
			t.Fatalf("step %d: %d promotions InProgress", step, running)
		}
	}
	pick := func(b byte) *v1alpha1.VectorPromotion {
		if len(w.in.Promotions) == 0 {
			return nil
		}
		return &w.in.Promotions[int(b)%len(w.in.Promotions)]
	}
	running := func() *v1alpha1.VectorPromotion {
		for i := range w.in.Promotions {
			if w.in.Promotions[i].Status.State == v1alpha1.PromotionInProgress {
				return &w.in.Promotions[i]
			}
		}
		return nil
	}

	for step := 1; step+1 < len(script); step += 2 {
		op, arg := script[step]%10, script[step+1]
		switch op {
		case 0:
			vectors++
			w.in.Source = SourceState{Vector: fmt.Sprintf("app:v%d", vectors)}
		case 1:
			if p := pick(arg); p != nil {
				r, err := Approve(*p, "alice", now)
				if err != nil {
					t.Fatal(err)
				}
				*p = r.Promotion
			}
		case 2, 3, 4:
			if p := running(); p != nil {
				r := Result{Outcome: OutcomeSucceeded, Commit: fmt.Sprintf("c%d", step)}
				if op == 3 {
					r = Result{Outcome: OutcomeFailed, Message: "push rejected"}
				} else if op == 4 {
					r = Result{Outcome: OutcomeTargetUnresolved, Message: "Landscape test not found"}
				}
				done, _, err := Complete(*p, r, now)
				if err != nil {
					t.Fatal(err)
				}
				if op == 2 {
					w.in.TargetVector = p.Spec.Vector
				}
				*p = done
			}
		case 5:
			now = now.Add(time.Duration(arg) * time.Second)
		case 6:
			now = now.Add(time.Duration(arg%16) * time.Minute)
		case 7:
			if w.in.Missing == nil {
				w.in.Missing = []MissingReference{{Role: RoleTarget, Kind: v1alpha1.LandscapeKind, Name: "test"}}
			} else {
				w.in.Missing = nil
			}
		case 8:
			if plan, err := Promote(w.in, now); err == nil {
				w.apply(plan)
				check(step, &plan)
			}
			continue
		case 9:
			if p := pick(arg); p != nil {
				*p = ReconcilePromotion(*p, now).Promotion
			}
		}
		if arg%3 != 0 { // not every event is followed by a config pass
			plan := ReconcileConfig(w.in, now)
			w.apply(plan)
			check(step, &plan)
		}
	}
	return seen
}

func ptrDuration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func FuzzScheduler(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 0, 2, 1, 0, 2, 0, 1})
	f.Add([]byte{1, 0, 1, 0, 2, 1, 1, 1, 0, 5, 200, 5, 200, 0, 1, 1, 2})
	f.Add([]byte{3, 0, 1, 7, 1, 1, 0, 1, 1, 7, 1, 4, 1, 6, 6, 9, 1, 8, 1})
	f.Add([]byte{2, 0, 4, 6, 7, 0, 1, 2, 1, 6, 5, 6, 5, 3, 1, 8, 2})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 400 {
			script = script[:400]
		}
		simulate(t, script)
	})
}

// Serialization across many passes: long pseudo-random runs (fixed seeds,
// so a failure reproduces) never break the invariants.
func TestSerializationAcrossManyPasses(t *testing.T) {
	seen := map[string]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		script := make([]byte, 301)
		for i := range script {
			script[i] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			for k, n := range simulate(t, script) {
				seen[k] += n
			}
		})
	}
	// The runs must reach every kind of transition, or they prove nothing.
	for _, k := range []string{"InProgress/PromotionRunning", "Superseded/PromotionSuperseded", "Failed/PromotionTimedOut",
		"Blocked/PromotionTargetUnresolved", "/", "Waiting/", "Ready/"} {
		if seen[k] == 0 {
			t.Errorf("no %q transition in any run: %v", k, seen)
		}
	}
	t.Logf("transitions seen: %v", seen)
}
