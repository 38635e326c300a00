package reconcilers

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Schedule is the result of one scheduling pass over a config's promotions.
type Schedule struct {
	// Promotions are all of the config's promotions after the pass, by sequence.
	Promotions []v1alpha1.VectorPromotion
	// Changed names the promotions whose status the pass changed, by sequence.
	Changed []string
	// Start names the promotion the pass started ("" if none); it is
	// InProgress in Promotions and must be persisted before it executes.
	Start        string
	Transitions  []Transition
	RequeueAfter time.Duration

	copied []bool // by index of Promotions: owned, hence changed
}

// SchedulePromotions serializes a config's promotions:
//
//   - a stale status.state is recomputed;
//   - an InProgress promotion past ExecutionDeadline is retired to
//     Failed/PromotionTimedOut (this pass is the "sibling" observer);
//   - while one is still InProgress nothing else starts, Ready ones stay Ready;
//   - otherwise the newest Ready (or Blocked) promotion by sequence starts, and
//     every older non-terminal one is Superseded for good; newer ones (still
//     Waiting) are never touched;
//   - if that newest candidate's target does not resolve, it is Blocked
//     instead and nothing is superseded until it can run.
//
// targetResolves says whether a promotion's snapshot target resolves now.
// The input is not modified.
func SchedulePromotions(promotions []v1alpha1.VectorPromotion, targetResolves func(v1alpha1.StageReference) bool, now time.Time) Schedule {
	return SchedulePromotionsGated(promotions, targetResolves, nil, now)
}

// Gate says why a promotion may not start now (the Blocked Succeeded
// condition to set), nil when it may.
type Gate func(*v1alpha1.VectorPromotion) *metav1.Condition

// SchedulePromotionsGated is SchedulePromotions where the newest candidate
// must also pass gate (the safe-upgrade rules): one that does not is
// Blocked with gate's condition, nothing else starts, and nothing is
// superseded, so it is judged again on the next pass.
func SchedulePromotionsGated(promotions []v1alpha1.VectorPromotion, targetResolves func(v1alpha1.StageReference) bool, gate Gate, now time.Time) Schedule {
	s := Schedule{Promotions: sortedShallow(promotions)}
	s.copied = make([]bool, len(s.Promotions))
	for i := range s.Promotions {
		if DeriveState(&s.Promotions[i]) != s.Promotions[i].Status.State {
			tr, _ := refreshState(s.own(i))
			s.note(tr)
		}
	}
	if running := s.retireOverdue(now); !running {
		if next := newestCandidate(s.Promotions); next >= 0 {
			s.startOrBlock(next, targetResolves, gate, now)
		}
	}
	for i := range s.Promotions {
		if s.copied[i] {
			s.Changed = append(s.Changed, s.Promotions[i].Name)
		}
	}
	return s
}

// own is promotion i, deep-copied before its first change: copy on write, so
// a steady pass copies nothing and the input is never modified. Every
// promotion the pass owns is one it changes.
func (s *Schedule) own(i int) *v1alpha1.VectorPromotion {
	if !s.copied[i] {
		s.Promotions[i] = *s.Promotions[i].DeepCopy()
		s.copied[i] = true
	}
	return &s.Promotions[i]
}

func (s *Schedule) note(tr Transition) { s.Transitions = append(s.Transitions, tr) }

// retireOverdue times out overdue runs and reports whether one is still
// running within its deadline; RequeueAfter is set to look again then.
func (s *Schedule) retireOverdue(now time.Time) (running bool) {
	for i := range s.Promotions {
		p := &s.Promotions[i]
		if p.Status.State != v1alpha1.PromotionInProgress {
			continue
		}
		if overdue(p, now) {
			tr, _ := retireIfOverdue(s.own(i), now)
			s.note(tr)
			continue
		}
		running = true
		s.RequeueAfter = minRequeue(s.RequeueAfter, untilOverdue(p, now))
	}
	return running
}

// newestCandidate is the index of the newest promotion that has cleared its
// gates and may run, or -1.
func newestCandidate(ps []v1alpha1.VectorPromotion) int {
	for i := len(ps) - 1; i >= 0; i-- {
		if st := ps[i].Status.State; st == v1alpha1.PromotionReady || st == v1alpha1.PromotionBlocked {
			return i
		}
	}
	return -1
}

func (s *Schedule) startOrBlock(next int, targetResolves func(v1alpha1.StageReference) bool, gate Gate, now time.Time) {
	p := &s.Promotions[next]
	if targetResolves != nil && !targetResolves(p.Spec.Target) {
		if p.Status.State != v1alpha1.PromotionBlocked {
			s.note(transition(s.own(next), metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse,
				Reason:  v1alpha1.PromotionTargetUnresolvedReason,
				Message: "target " + p.Spec.Target.Describe() + " does not resolve; retried when it does"}, now))
		}
		return
	}
	if gate != nil {
		if c := gate(p); c != nil {
			// Only a changed reason or message is written, so a steady
			// block makes no state commit.
			if cur := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); cur == nil ||
				cur.Status != c.Status || cur.Reason != c.Reason || cur.Message != c.Message {
				s.note(transition(s.own(next), *c, now))
			}
			return
		}
	}
	p = s.own(next)
	started, tr, err := Start(*p, now)
	if err != nil {
		return // unreachable: newestCandidate only returns Ready or Blocked
	}
	*p = started
	s.note(tr)
	s.Start = p.Name
	s.RequeueAfter = untilOverdue(p, now)
	for i := 0; i < next; i++ {
		if st := s.Promotions[i].Status.State; IsTerminal(st) || st == v1alpha1.PromotionInProgress {
			continue
		}
		s.note(transition(s.own(i), metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse,
			Reason:  v1alpha1.PromotionSupersededReason,
			Message: "superseded by " + p.Name + " (" + p.Spec.Vector + ")"}, now))
	}
}

// sortedShallow copies the promotion structs (sharing their slices and maps)
// ordered by sequence; the name breaks ties, so the order never depends on
// the input's.
func sortedShallow(promotions []v1alpha1.VectorPromotion) []v1alpha1.VectorPromotion {
	out := slices.Clone(promotions)
	slices.SortFunc(out, bySequence)
	return out
}

func bySequence(a, b v1alpha1.VectorPromotion) int { return compareSequence(&a, &b) }

func compareSequence(a, b *v1alpha1.VectorPromotion) int {
	if a.Spec.Sequence != b.Spec.Sequence {
		if a.Spec.Sequence < b.Spec.Sequence {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// minRequeue is the sooner of two requeues, where 0 means none.
func minRequeue(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
