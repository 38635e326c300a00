package reconcilers

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Events are what people are told about, derived from what a state commit
// changed: the shell sends them to Flux's notification-controller or a
// webhook once the commit is on the state branch, so an event never
// announces a state that was not written.

// Severities of an event, Flux's words (eventv1.EventSeverityInfo/Error).
const (
	SeverityInfo  = "info"
	SeverityError = "error"
)

// Reasons of events that are not a condition's reason.
const (
	// PromotionWaitingForApprovalEvent: a promotion needs an approval.
	PromotionWaitingForApprovalEvent = v1alpha1.WaitingForApprovalReason
	// StageUnhealthyEvent: a stage's Ready condition turned False without a
	// reason of its own.
	StageUnhealthyEvent = "StageUnhealthy"
)

// Actions of an event (Flux's eventv1.Event.Action).
const (
	ActionApprove = "Approve"
	ActionPromote = "Promote"
	ActionObserve = "Observe"
)

// Metadata keys of an event (Flux's eventv1.MetaRevisionKey is "revision").
const (
	EventMetaRevision  = "revision"
	EventMetaVector    = "vector"
	EventMetaPromotion = "promotion"
	EventMetaConfig    = "config"
	EventMetaTarget    = "target"
	EventMetaLandscape = "landscape"
)

// Event is one notification about an object of the state.
type Event struct {
	// Kind and Name of the object the event is about (apiVersion
	// vectorflow.dev/v1alpha1).
	Kind, Name string
	// Severity is SeverityInfo or SeverityError.
	Severity string
	// Reason is UpperCamelCase: the condition reason that caused the event.
	Reason string
	// Action is what vectorflow was doing: ActionApprove, ActionPromote or
	// ActionObserve.
	Action  string
	Message string
	// Metadata: revision (a commit), vector, promotion, and where they apply.
	Metadata map[string]string
}

// Events compares the state before and after a pass and returns, in a
// stable order (promotions by config and sequence, then stages by key), an
// event per transition people act on: a promotion waiting for approval,
// succeeded, failed or superseded; an approval refused; a stage that turned
// unhealthy. Nothing else is an event: a status refresh says nothing new.
func Events(before, after *State) []Event {
	var out []Event
	names := make([]string, 0, len(after.Promotions))
	for name := range after.Promotions {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		pa, pb := after.Promotions[a], after.Promotions[b]
		return cmp.Or(cmp.Compare(pa.Spec.VectorPromotionConfigName, pb.Spec.VectorPromotionConfigName),
			cmp.Compare(pa.Spec.Sequence, pb.Spec.Sequence), cmp.Compare(a, b))
	})
	for _, name := range names {
		var old *v1alpha1.VectorPromotion
		if before != nil {
			old = before.Promotions[name]
		}
		out = append(out, promotionEvents(old, after.Promotions[name])...)
	}
	for _, key := range slices.Sorted(maps.Keys(after.Stages)) {
		var old *v1alpha1.Stage
		if before != nil {
			old = before.Stages[key]
		}
		if e, ok := stageEvent(old, after.Stages[key]); ok {
			out = append(out, e)
		}
	}
	return out
}

// promotionEvents are the events of one promotion's change.
func promotionEvents(old, p *v1alpha1.VectorPromotion) []Event {
	var out []Event
	was := v1alpha1.PromotionState("")
	var oldApproved *metav1.Condition
	if old != nil {
		was = old.Status.State
		oldApproved = meta.FindStatusCondition(old.Status.Conditions, v1alpha1.ApprovedCondition)
	}
	approved := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition)
	// A refused approval is news each time what was refused changes, even
	// while the promotion keeps waiting.
	if approved != nil && approved.Reason == v1alpha1.ApprovalRefusedReason &&
		(oldApproved == nil || oldApproved.Reason != approved.Reason || oldApproved.Message != approved.Message) {
		out = append(out, promotionEvent(p, SeverityError, v1alpha1.ApprovalRefusedReason, approved.Message))
	}
	now := p.Status.State
	if now == was {
		return out
	}
	succeeded := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
	switch now {
	case v1alpha1.PromotionWaiting:
		msg := fmt.Sprintf("promotion %s of vector %s to %s waits for an approval", p.Name, p.Spec.Vector, p.Spec.Target.Describe())
		out = append(out, promotionEvent(p, SeverityInfo, PromotionWaitingForApprovalEvent, msg))
	case v1alpha1.PromotionSucceeded:
		msg := fmt.Sprintf("promoted vector %s to %s", p.Spec.Vector, p.Spec.Target.Describe())
		if p.Status.Commit != "" {
			msg += " in commit " + p.Status.Commit
		}
		out = append(out, promotionEvent(p, SeverityInfo, reasonOr(succeeded, v1alpha1.PromotionSucceededReason), msg))
	case v1alpha1.PromotionFailed:
		out = append(out, promotionEvent(p, SeverityError, reasonOr(succeeded, v1alpha1.PromotionFailedReason),
			fmt.Sprintf("promotion of vector %s to %s failed: %s", p.Spec.Vector, p.Spec.Target.Describe(), messageOf(succeeded))))
	case v1alpha1.PromotionSuperseded:
		out = append(out, promotionEvent(p, SeverityInfo, reasonOr(succeeded, v1alpha1.PromotionSupersededReason),
			fmt.Sprintf("promotion of vector %s to %s was superseded: %s", p.Spec.Vector, p.Spec.Target.Describe(), messageOf(succeeded))))
	}
	return out
}

func promotionEvent(p *v1alpha1.VectorPromotion, severity, reason, msg string) Event {
	md := map[string]string{
		EventMetaPromotion: p.Name,
		EventMetaVector:    p.Spec.Vector,
		EventMetaConfig:    p.Spec.VectorPromotionConfigName,
		EventMetaTarget:    StageKey(p.Spec.Target.Landscape, p.Spec.Target.Name),
	}
	if p.Status.Commit != "" {
		md[EventMetaRevision] = p.Status.Commit
	}
	action := ActionPromote
	if reason == v1alpha1.ApprovalRefusedReason || reason == PromotionWaitingForApprovalEvent {
		action = ActionApprove
	}
	return Event{Kind: v1alpha1.VectorPromotionKind, Name: p.Name, Severity: severity, Reason: reason, Action: action, Message: msg, Metadata: md}
}

// stageEvent is the event of a stage whose Ready condition turned False.
func stageEvent(old, s *v1alpha1.Stage) (Event, bool) {
	ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse {
		return Event{}, false
	}
	if old != nil {
		if was := meta.FindStatusCondition(old.Status.Conditions, v1alpha1.ReadyCondition); was != nil &&
			was.Status == metav1.ConditionFalse && was.Reason == ready.Reason {
			return Event{}, false
		}
	}
	md := map[string]string{EventMetaLandscape: s.Spec.Landscape}
	if s.Status.Vector != "" {
		md[EventMetaVector] = s.Status.Vector
	}
	if s.Status.Commit != "" {
		md[EventMetaRevision] = s.Status.Commit
	}
	msg := fmt.Sprintf("stage %s is not ready", StageKey(s.Spec.Landscape, s.Name))
	if ready.Message != "" {
		msg += ": " + ready.Message
	}
	return Event{Kind: v1alpha1.StageKind, Name: s.Name, Severity: SeverityError,
		Reason: cmp.Or(ready.Reason, StageUnhealthyEvent), Action: ActionObserve, Message: msg, Metadata: md}, true
}

func reasonOr(c *metav1.Condition, def string) string {
	if c == nil || c.Reason == "" {
		return def
	}
	return c.Reason
}

func messageOf(c *metav1.Condition) string {
	if c == nil || c.Message == "" {
		return "no reason recorded"
	}
	return c.Message
}
