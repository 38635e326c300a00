package reconcilers

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// The safe-upgrade rules a config pass applies to its target stage
// (issue 13): a promotion does not skip a stepping stone (the stone's
// vector is promoted first), does not go down across one unless forced,
// and does not run into a held stage unless a person asked for it.
//
// They act at two points. When drift offers a vector that skips a stone,
// the config offers the stone's vector instead, and the Drift condition
// says the newer one waits (SteppingStoneRequired): it is offered once the
// stone is active, with a newer sequence, which keeps the target's ratchet
// (a sequence never runs after a newer one of its config). When a
// promotion is about to start, the rules are judged again against the
// stage as it is now: one that breaks them is Blocked with the rule's
// reason and judged again on every pass.

// UpgradeInput is what the rules know about the config's target stage.
type UpgradeInput struct {
	// ActiveVector is the vector active in the target stage ("" if none),
	// and Active its components (nil when the state does not hold it: then
	// no stone can be judged, and none is).
	ActiveVector string
	Active       []v1alpha1.VectorComponent
	// Stones are the stepping stones by template, then component, as the
	// templates name them now (a stone added later applies to old vectors).
	Stones map[string]map[string][]string
	// Vectors are the vectors that exist, by reference: candidates' specs
	// and the steps a stone may be reached by.
	Vectors map[string]*v1alpha1.Vector
	// Hold is the target stage's current hold, nil when it is not held.
	Hold *StageHold
	// Kept are the vectors the target stage has a StageVersion of: what a
	// rollback may go back to.
	Kept map[string]bool
}

// StageHold is a stage's current hold: who set it, when and why.
type StageHold struct {
	Stage  string // landscape/name
	By     string
	At     time.Time
	Reason string
	// Commit is the state-branch commit of the hold record, or for a
	// ManualChange hold the target commit that changed the overlay.
	Commit string
}

func (h *StageHold) String() string {
	return fmt.Sprintf("stage %s is held by %s since %s: %s; vectorflow release --stage %s lifts the hold",
		h.Stage, h.By, h.At.UTC().Format(time.RFC3339), h.Reason, h.Stage)
}

// judgeStones applies the stepping stones to promoting vector now; an
// unknown vector or an unknown active vector is Clear (the executor
// refuses an unknown vector by itself).
func (u *UpgradeInput) judgeStones(vector string, forced bool) (StoneVerdict, error) {
	v := u.Vectors[vector]
	if v == nil || u.Active == nil {
		return StoneVerdict{Outcome: StonesClear}, nil
	}
	var steps []*v1alpha1.Vector
	for _, ref := range slices.Sorted(maps.Keys(u.Vectors)) {
		// A step of another template would rename what the stage runs.
		if x := u.Vectors[ref]; x.Spec.Template == v.Spec.Template {
			steps = append(steps, x)
		}
	}
	return JudgeStones(StoneInput{Active: u.Active, Candidate: v, Stones: u.Stones[v.Spec.Template],
		Vectors: steps, Forced: forced})
}

// gate is the Blocked condition that keeps promotion p from starting now,
// nil when it may start, and the stone's vector to promote first (when
// the verdict is SteppingStoneRequired).
func (u *UpgradeInput) gate(p *v1alpha1.VectorPromotion) (*metav1.Condition, *v1alpha1.Vector) {
	blocked := func(reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	if u.Hold != nil && !p.Spec.Requested && !p.Spec.Rollback {
		return blocked(v1alpha1.StageHeldReason, u.Hold.String()), nil
	}
	v, err := u.judgeStones(p.Spec.Vector, p.Spec.Forced)
	if err != nil {
		return blocked(v1alpha1.SteppingStoneInvalidReason, fmt.Sprintf("the stepping stones of %s cannot be judged: %v", p.Spec.Vector, err)), nil
	}
	switch v.Outcome {
	case StoneFirst:
		return blocked(v1alpha1.SteppingStoneRequiredReason, v.Message+"; this promotion waits until it is active in "+p.Spec.Target.Describe()), v.Via
	case StoneMissing:
		return blocked(v1alpha1.SteppingStoneMissingReason, v.Message), nil
	case StoneDowngrade:
		return blocked(v1alpha1.SteppingStoneDowngradeReason, v.Message), nil
	}
	return nil, nil
}

// stoneStep is what the config does about a vector that must wait for a
// stone: offer the stone's vector (create), or wait, saying why.
type stoneStep struct {
	verdict StoneVerdict
	create  bool   // no promotion of the step is open or done: make one
	why     string // what the config waits for
}

// stepFor decides the step towards vector's stones, ok false when vector
// skips no stone that a vector carries.
func (p *configPass) stepFor(vector string, forced bool) (stoneStep, bool) {
	v, err := p.in.Upgrade.judgeStones(vector, forced)
	if err != nil || v.Outcome != StoneFirst {
		return stoneStep{}, false
	}
	via := v.Via.Ref()
	s := stoneStep{verdict: v}
	switch open, last := p.openPromotionOf(via), p.lastExecutionOf(via); {
	case open != "":
		s.why = "promotion " + open + " of " + via + " is open"
	case last != nil && last.State == v1alpha1.PromotionSucceeded && p.in.TargetVector == via:
		// Written and not active yet: the deployer has not reported it.
		// (Written and no longer named is a revert: it is offered again.)
		s.why = fmt.Sprintf("promotion %s wrote %s; waiting until it is active in the stage", last.Promotion, via)
	case last != nil && last.State != v1alpha1.PromotionSucceeded:
		s.why = fmt.Sprintf("promotion %s of %s failed (%s) and is not retried on its own: vectorflow promote --config %s --vector %s tries it again",
			last.Promotion, via, last.Reason, p.in.Config.Name, via)
	default:
		s.create = true
		s.why = "a promotion of " + via + " is offered first"
	}
	return s, true
}

// takeStep offers the step's vector when stepFor says so, and reports the
// Drift verdict: the newer vector waits for the stone.
func (p *configPass) takeStep(vector string, s stoneStep) driftVerdict {
	if s.create {
		p.createOf(s.verdict.Via.Ref(), promotionFlags{})
	}
	return driftVerdict{drift: true, reason: v1alpha1.SteppingStoneRequiredReason,
		message: fmt.Sprintf("vector %s waits: %s; %s", vector, s.verdict.Message, s.why)}
}

// stepBeforeStart is the start-time half: when the newest promotion that
// may start skips a stone, offer the stone's vector (once), so the
// schedule starts that instead and the newer vector is offered again once
// the stone is active.
func (p *configPass) stepBeforeStart() {
	if p.notReady != nil {
		return
	}
	ps := sortedShallow(p.promotions)
	for i := len(ps) - 1; i >= 0; i-- {
		q := &ps[i]
		st := DeriveState(q)
		if st == v1alpha1.PromotionInProgress {
			return
		}
		if st != v1alpha1.PromotionReady && st != v1alpha1.PromotionBlocked {
			continue
		}
		if c := meta.FindStatusCondition(q.Status.Conditions, v1alpha1.SucceededCondition); c != nil && c.Reason == v1alpha1.PromotionTargetUnresolvedReason {
			return
		}
		if h := p.in.Upgrade.Hold; h != nil && !q.Spec.Requested && !q.Spec.Rollback {
			return // it waits for the hold first; a step would wait too
		}
		if s, ok := p.stepFor(q.Spec.Vector, q.Spec.Forced); ok && s.create {
			p.createOf(s.verdict.Via.Ref(), promotionFlags{})
		}
		return
	}
}

// promotionFlags are how a promotion was asked for.
type promotionFlags struct {
	forced, rollback, requested bool
}
