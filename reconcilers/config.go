package reconcilers

import (
	"errors"
	"fmt"
	"github.com/Masterminds/semver/v3"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

var errNoVector = errors.New("the source offers no vector yet")

// Role says which of a config's references a missing object belongs to.
type Role string

const (
	RoleSource Role = "source"
	RoleTarget Role = "target"
)

// MissingReference is an object a config refers to that does not resolve.
type MissingReference struct {
	Role Role
	// Kind is Landscape, Stage or VectorTemplate.
	Kind string
	Name string
	// Landscape of a missing Stage.
	Landscape string
	// Why, when it is known: the landscape's repository cannot be read.
	Reason string
}

func (m MissingReference) String() string {
	var s string
	switch {
	case m.Kind == v1alpha1.LandscapeKind:
		s = fmt.Sprintf("Landscape %s of the %s not found", m.Name, m.Role)
	case m.Landscape != "":
		s = fmt.Sprintf("%s %s %s in Landscape %s not found", m.Role, m.Kind, m.Name, m.Landscape)
	default:
		s = fmt.Sprintf("%s %s %s not found", m.Role, m.Kind, m.Name)
	}
	if m.Reason != "" {
		s += " (" + m.Reason + ")"
	}
	return s
}

// SourceState is the source's current vector: a template's
// status.latestVector, or the vector a source stage's overlay names.
type SourceState struct {
	Vector string
	// Since is when the source started to offer Vector, as the source
	// reports it (VectorTemplate status.latestVectorSince, Stage
	// status.vectorSince, or status.activeSince with readiness Active).
	// Zero: the config's own observation is used.
	Since time.Time
	// Components are Vector's components, for spec.constraints; nil when
	// the state does not hold the vector.
	Components []v1alpha1.VectorComponent
	// Waiting says what a source stage with readiness Active waits for
	// (WaitingForDeploymentCondition), and WaitingReason why; empty when
	// nothing is awaited.
	Waiting, WaitingReason string
	// Active: Vector is what is deployed and healthy at the source stage
	// (readiness Active), so updateDelay asks it to stay that way.
	Active bool
}

// ConfigInput is what ReconcileConfig decides from.
type ConfigInput struct {
	Config v1alpha1.VectorPromotionConfig
	// Missing lists the config's references that do not resolve.
	Missing []MissingReference
	Source  SourceState
	// TargetVector is the vector the target stage's overlay names ("" if none).
	TargetVector string
	// Conflicts are problems this config has with other configs (a cycle,
	// a shared target stage): the config is not Ready while there are any.
	Conflicts []string
	// TargetSequence is the highest sequence of this config that the
	// target branch's history holds (0 if none): new promotions continue
	// after it, so a reset or deleted state branch never reuses a name.
	TargetSequence int64
	// Promotions are all promotions the config owns, in any order.
	Promotions []v1alpha1.VectorPromotion
	// Upgrade is what the safe-upgrade rules know about the target stage
	// (stepping stones, holds); its zero value judges nothing.
	Upgrade UpgradeInput
}

// ConfigPlan is what one config pass writes; see the package documentation
// for the order to apply it in.
type ConfigPlan struct {
	// Status is the config's new status; Sequence is already incremented
	// when Create is set.
	Status        v1alpha1.VectorPromotionConfigStatus
	StatusChanged bool
	// Create are new promotions, in their state after this pass.
	Create []v1alpha1.VectorPromotion
	// Update are existing promotions whose status changed.
	Update []v1alpha1.VectorPromotion
	// Delete names finished promotions past their TTL or the keep count.
	Delete []string
	// Start is the promotion to execute now; it is InProgress in Create or Update.
	Start *v1alpha1.VectorPromotion
	// Transitions are the pass's state changes, for the commit message.
	Transitions  []Transition
	RequeueAfter time.Duration
}

// Changed reports whether the plan writes anything.
func (p *ConfigPlan) Changed() bool {
	return p.StatusChanged || len(p.Create) > 0 || len(p.Update) > 0 || len(p.Delete) > 0 || p.Start != nil
}

// Drift is whether the target lags the source: the source offers a vector
// the target does not name now.
func Drift(sourceVector, targetVector string) bool {
	return sourceVector != "" && sourceVector != targetVector
}

// ReconcileConfig is one pass over a config: Ready condition, source
// observation, drift (with updateDelay and the rules of promoteOnDrift),
// scheduling, aggregate status, promotion history and cleanup, in that order.
func ReconcileConfig(in ConfigInput, now time.Time) ConfigPlan {
	var p configPass
	p.start(in, now)
	p.checkReferences()
	p.observeSource()
	p.promoteOnDrift()
	p.finish()
	return p.plan
}

// Promote is the manual `vectorflow promote`: a fresh promotion of the
// source's current vector with a new sequence, even if one exists, without
// updateDelay; the rest of the pass (scheduling, cleanup) runs as usual.
func Promote(in ConfigInput, now time.Time) (ConfigPlan, error) {
	return PromoteWith(in, PromoteOptions{}, now)
}

// PromoteOptions are what a promotion request asks for beyond the source's
// current vector.
type PromoteOptions struct {
	// Vector is a specific existing vector to promote (promote --vector,
	// rollback) instead of the source's current one; it must be in
	// UpgradeInput.Vectors.
	Vector string
	// Forced lets it go down across a stepping stone (--force).
	Forced bool
	// Rollback marks a rollback: it runs while the stage is held.
	Rollback bool
}

// PromoteWith is Promote with a request's options. The promotion is marked
// Requested: a person asked for it, so a hold does not stop it.
func PromoteWith(in ConfigInput, opts PromoteOptions, now time.Time) (ConfigPlan, error) {
	var p configPass
	p.start(in, now)
	p.checkReferences()
	if p.notReady != nil {
		return ConfigPlan{}, fmt.Errorf("promote VectorPromotionConfig %s: %w", in.Config.Name, p.notReady)
	}
	vector, components := in.Source.Vector, in.Source.Components
	if opts.Vector != "" {
		v := in.Upgrade.Vectors[opts.Vector]
		if v == nil {
			return ConfigPlan{}, fmt.Errorf("promote VectorPromotionConfig %s: there is no vector %s on the state branch; "+
				"name one that vectorflow get vectors lists", in.Config.Name, opts.Vector)
		}
		vector, components = opts.Vector, v.Spec.Components
	}
	if vector == "" {
		return ConfigPlan{}, fmt.Errorf("promote VectorPromotionConfig %s: %w; assemble or deploy one first", in.Config.Name, errNoVector)
	}
	if opts.Rollback && !in.Upgrade.Kept[opts.Vector] && !ranBefore(p.plan.Status.PromotionHistory, opts.Vector) {
		return ConfigPlan{}, fmt.Errorf("roll back VectorPromotionConfig %s to %s: its target keeps no StageVersion of that vector "+
			"and no promotion of the config wrote it there; roll back to one vectorflow get stageversions --stage lists", in.Config.Name, VectorOrNone(opts.Vector))
	}
	if broken := brokenConstraintsOf(components, in.Config.Spec.Constraints); broken != "" {
		return ConfigPlan{}, fmt.Errorf("promote VectorPromotionConfig %s: vector %s %s", in.Config.Name, vector, broken)
	}
	p.observeSource()
	removeCondition(&p.plan.Status.Conditions, v1alpha1.UpdateDelayedCondition)
	p.createOf(vector, promotionFlags{forced: opts.Forced, rollback: opts.Rollback, requested: true})
	p.setDrift(p.judgeDrift())
	p.finish()
	return p.plan, nil
}

// configPass carries one pass's working state through its steps.
type configPass struct {
	in         ConfigInput
	now        time.Time
	plan       ConfigPlan
	notReady   error // why the config cannot create promotions now
	noSource   bool  // the source cannot be observed: invalid spec or missing
	promotions []v1alpha1.VectorPromotion
	created    map[string]bool
}

// start readies p for a pass over in, copied into it: a pass lives on its
// caller's stack. A decision makes one per config, and each one's input
// on the heap was 10 MB of a decision's 32 MB of garbage at 10,000 configs.
func (p *configPass) start(in ConfigInput, now time.Time) {
	*p = configPass{
		in: in, now: now,
		plan:       ConfigPlan{Status: *in.Config.Status.DeepCopy()},
		promotions: in.Promotions,
	}
	// Executions finished since the last pass are history before drift is
	// judged: a failure recorded now is not retried in this very pass.
	p.plan.Status.PromotionHistory = RecordHistory(p.plan.Status.PromotionHistory, in.Promotions)
}

// checkReferences sets the Ready condition from the spec and the references.
func (p *configPass) checkReferences() {
	cfg := &p.in.Config
	c := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ResolvedReason,
		Message: "source " + cfg.Spec.Source.Describe() + " and target " + cfg.Spec.Target.Describe() + " resolve"}
	if problems := validateSpec(&cfg.Spec); len(problems) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.InvalidSpecReason, strings.Join(problems, "; ")
		p.noSource = true
	} else if len(p.in.Conflicts) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ConfigConflictReason, strings.Join(p.in.Conflicts, "; ")
	} else if missing := sortedMissing(p.in.Missing); len(missing) > 0 {
		msgs := make([]string, len(missing))
		for i, m := range missing {
			msgs[i] = m.String()
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, missingReason(missing[0]), strings.Join(msgs, "; ")
		p.noSource = missing[0].Role == RoleSource // sorted: a source problem comes first
	}
	if c.Status == metav1.ConditionFalse {
		p.notReady = errors.New(c.Message)
	}
	c.ObservedGeneration = cfg.Generation
	SetCondition(&p.plan.Status.Conditions, c, p.now)
}

// observeSource records the source's vector and since when it is current,
// which is what updateDelay measures. A changed or vanished vector restarts
// the clock; a target outage does not.
func (p *configPass) observeSource() {
	st := &p.plan.Status
	st.TargetVector = p.in.TargetVector
	vector := p.in.Source.Vector
	if w := p.in.Source; w.Waiting != "" && !p.noSource {
		SetCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.WaitingForDeploymentCondition,
			Status: metav1.ConditionTrue, Reason: w.WaitingReason, Message: w.Waiting,
			ObservedGeneration: p.in.Config.Generation}, p.now)
	} else {
		removeCondition(&st.Conditions, v1alpha1.WaitingForDeploymentCondition)
	}
	if p.noSource || vector == "" {
		st.SourceVector, st.SourceVectorSince = "", nil
		return
	}
	var since metav1.Time
	switch {
	case !p.in.Source.Since.IsZero():
		since = Stamp(p.in.Source.Since)
	case st.SourceVector == vector && st.SourceVectorSince != nil:
		since = *st.SourceVectorSince
	default:
		since = Stamp(p.now)
	}
	st.SourceVector, st.SourceVectorSince = vector, &since
}

// promoteOnDrift offers a candidate for the source's vector when the target
// does not name it now, unless
//   - a promotion of it is open (not finished): it is the candidate;
//   - the config's last execution of it failed: a failure is not retried on
//     its own (`vectorflow promote` makes a fresh candidate);
//   - the config's last execution of it succeeded, nothing this config
//     promoted since, and the config is automatic: the target was changed
//     by someone else since, and re-promoting would undo that. A config that
//     requires approval offers a candidate: the approver decides.
//
// The history of executions is the config's status.promotionHistory, not the
// promotions, which ttlAfterFinished deletes. A due candidate also waits for
// updateDelay. The Drift condition says which rule applies.
func (p *configPass) promoteOnDrift() {
	if p.notReady != nil {
		removeCondition(&p.plan.Status.Conditions, v1alpha1.UpdateDelayedCondition)
		removeCondition(&p.plan.Status.Conditions, v1alpha1.DriftCondition)
		return
	}
	v := p.judgeDrift()
	if !v.offer {
		removeCondition(&p.plan.Status.Conditions, v1alpha1.UpdateDelayedCondition)
		p.setDrift(v)
		return
	}
	vector := p.in.Source.Vector
	if left := p.updateDelayLeft(); left > 0 {
		delay := p.in.Config.Spec.UpdateDelay.Duration
		until := p.plan.Status.SourceVectorSince.Add(delay)
		SetCondition(&p.plan.Status.Conditions, metav1.Condition{
			Type: v1alpha1.UpdateDelayedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.UpdateDelayedReason,
			ObservedGeneration: p.in.Config.Generation,
			// The time left is not in the message: it would change the
			// status, and so make a state commit, on every pass of the delay.
			// Readers compute it from the deadline (vectorflow get configs).
			Message: fmt.Sprintf("vector %s must stay %s at the source until %s (updateDelay %s)",
				vector, stayWhat(p.in.Source.Active), until.UTC().Format(time.RFC3339), delay),
		}, p.now)
		p.plan.RequeueAfter = minRequeue(p.plan.RequeueAfter, left)
		v.reason, v.message = v1alpha1.UpdateDelayedReason, v.message+"; a candidate is offered once updateDelay has passed"
		p.setDrift(v)
		return
	}
	removeCondition(&p.plan.Status.Conditions, v1alpha1.UpdateDelayedCondition)
	if s, ok := p.stepFor(vector, false); ok {
		p.setDrift(p.takeStep(vector, s))
		return
	}
	p.create()
	p.setDrift(p.judgeDrift())
}

func stayWhat(active bool) string {
	if active {
		return "active and healthy"
	}
	return "current"
}

func (p *configPass) updateDelayLeft() time.Duration {
	d := p.in.Config.Spec.UpdateDelay
	if d == nil || d.Duration <= 0 {
		return 0
	}
	return d.Duration - p.now.Sub(p.plan.Status.SourceVectorSince.Time)
}

// driftVerdict is what the config does about the source's vector.
type driftVerdict struct {
	drift           bool
	reason, message string
	// offer: a new candidate is due (after updateDelay).
	offer bool
}

// judgeDrift applies promoteOnDrift's rules. Its messages name vectors and
// promotions only, never times, so a steady state writes nothing.
func (p *configPass) judgeDrift() driftVerdict {
	src, tgt := p.in.Source.Vector, p.in.TargetVector
	switch {
	case src == "" && p.in.Source.Waiting != "":
		return driftVerdict{reason: v1alpha1.NoSourceVectorReason, message: "the source offers no vector: " + p.in.Source.Waiting}
	case src == "":
		return driftVerdict{reason: v1alpha1.NoSourceVectorReason, message: "the source offers no vector yet"}
	case !Drift(src, tgt):
		return driftVerdict{reason: v1alpha1.InSyncReason, message: "the target names vector " + src + ", which the source offers"}
	}
	v := driftVerdict{drift: true, reason: v1alpha1.PromotionOfferedReason,
		message: fmt.Sprintf("the source offers vector %s, the target names %s", src, VectorOrNone(tgt))}
	if open := p.openPromotionOf(src); open != "" {
		v.message += "; promotion " + open + " offers it"
		return v
	}
	if broken := p.brokenConstraints(); broken != "" {
		v.reason = v1alpha1.ConstraintViolatedReason
		v.message += "; it " + broken + ", so it is not promoted"
		return v
	}
	config := p.in.Config.Name
	tried := p.lastExecutionOf(src)
	switch {
	case tried == nil:
		v.offer = true
	case tried.State != v1alpha1.PromotionSucceeded:
		v.reason = v1alpha1.FailedNotRetriedReason
		v.message += fmt.Sprintf("; promotion %s of it failed (%s) and is not retried on its own: "+
			"vectorflow promote --config %s makes a fresh candidate", tried.Promotion, tried.Reason, config)
	case RequireApproval(&p.in.Config.Spec):
		// Approval is the human gate: offering the vector again after a
		// revert overrides nobody.
		v.offer = true
	case p.lastSuccess() == tried:
		v.reason = v1alpha1.TargetChangedByHandReason
		v.message += fmt.Sprintf("; promotion %s wrote it and the target was changed since by someone else: "+
			"it is not promoted again on its own, which would undo that change; vectorflow promote --config %s applies it again",
			tried.Promotion, config)
	default:
		// The config promoted another vector since, and the source came
		// back to this one: that is new drift.
		v.offer = true
	}
	return v
}

// brokenConstraints says which of spec.constraints the source's vector
// breaks ("" if none, or if its components are unknown).
func (p *configPass) brokenConstraints() string {
	return brokenConstraintsOf(p.in.Source.Components, p.in.Config.Spec.Constraints)
}

func brokenConstraintsOf(components []v1alpha1.VectorComponent, constraints []v1alpha1.VersionConstraint) string {
	if len(constraints) == 0 || components == nil {
		return ""
	}
	v := &v1alpha1.Vector{Spec: v1alpha1.VectorSpec{Components: components}}
	broken, err := ConstraintViolations(v, constraints)
	if err != nil {
		return "cannot be checked against spec.constraints: " + err.Error()
	}
	if len(broken) == 0 {
		return ""
	}
	parts := make([]string, len(broken))
	for i, b := range broken {
		parts[i] = b.String()
	}
	return "breaks spec.constraints: " + strings.Join(parts, ", ")
}

func (p *configPass) setDrift(v driftVerdict) {
	status := metav1.ConditionFalse
	if v.drift {
		status = metav1.ConditionTrue
	}
	SetCondition(&p.plan.Status.Conditions, metav1.Condition{Type: v1alpha1.DriftCondition, Status: status,
		Reason: v.reason, Message: v.message, ObservedGeneration: p.in.Config.Generation}, p.now)
}

// openPromotionOf names the newest promotion of vector that is not finished
// ("" if none).
func (p *configPass) openPromotionOf(vector string) string {
	var open *v1alpha1.VectorPromotion
	for i := range p.promotions {
		q := &p.promotions[i]
		if q.Spec.Vector == vector && !IsTerminal(DeriveState(q)) && (open == nil || q.Spec.Sequence > open.Spec.Sequence) {
			open = q
		}
	}
	if open == nil {
		return ""
	}
	return open.Name
}

// lastExecutionOf is the newest history record of vector, nil if none.
func (p *configPass) lastExecutionOf(vector string) *v1alpha1.PromotionRecord {
	for i, r := range p.plan.Status.PromotionHistory {
		if r.Vector == vector {
			return &p.plan.Status.PromotionHistory[i]
		}
	}
	return nil
}

// lastSuccess is the newest succeeded history record, nil if none.
func (p *configPass) lastSuccess() *v1alpha1.PromotionRecord {
	for i, r := range p.plan.Status.PromotionHistory {
		if r.State == v1alpha1.PromotionSucceeded {
			return &p.plan.Status.PromotionHistory[i]
		}
	}
	return nil
}

// create allocates the next sequence and snapshots the config into a new
// promotion.
func (p *configPass) create() { p.createOf(p.in.Source.Vector, promotionFlags{}) }

// createOf is create for any vector, recording how it was asked for.
func (p *configPass) createOf(vector string, flags promotionFlags) {
	seq := NextSequence(p.plan.Status.Sequence, p.promotions, p.in.TargetSequence)
	p.plan.Status.Sequence = seq
	np := NewPromotion(&p.in.Config, vector, seq, p.now)
	np.Spec.Forced, np.Spec.Rollback, np.Spec.Requested = flags.forced, flags.rollback, flags.requested
	p.promotions = append(slices.Clip(p.promotions), np)
	if p.created == nil { // most passes create nothing
		p.created = map[string]bool{}
	}
	p.created[np.Name] = true
	p.plan.Transitions = append(p.plan.Transitions, Transition{Promotion: np.Name, To: np.Status.State})
}

// NextSequence is the sequence of a config's next promotion: one above the
// config's status, every promotion it still has (so a lost status write
// cannot reuse a name) and the newest the target's history holds (so a
// reset state branch, or a repository pushed to a new remote, cannot
// either: names are identities).
func NextSequence(status int64, promotions []v1alpha1.VectorPromotion, target int64) int64 {
	seq := max(status, target)
	for i := range promotions {
		seq = max(seq, promotions[i].Spec.Sequence)
	}
	return seq + 1
}

// finish schedules, aggregates and cleans up, then fills in the plan.
func (p *configPass) finish() {
	cfg := &p.in.Config
	targetMissing := slices.ContainsFunc(p.in.Missing, func(m MissingReference) bool { return m.Role == RoleTarget })
	p.stepBeforeStart()
	sched := SchedulePromotionsGated(p.promotions, func(t v1alpha1.StageReference) bool {
		// Only the config's own target is known here; a different snapshot
		// target is found out by the executor (Complete with TargetUnresolved).
		return !targetMissing || t != cfg.Spec.Target
	}, func(q *v1alpha1.VectorPromotion) *metav1.Condition {
		c, _ := p.in.Upgrade.gate(q)
		return c
	}, p.now)
	p.plan.Transitions = append(p.plan.Transitions, sched.Transitions...)
	p.plan.RequeueAfter = minRequeue(p.plan.RequeueAfter, sched.RequeueAfter)

	p.plan.Status.LastPromotionConditions, p.plan.Status.LastSuccessfulPromotionConditions =
		AggregateStatus(sched.Promotions, p.plan.Status)
	// Before cleanup: a promotion that finished in this pass (timed out)
	// and is deleted in it is still remembered.
	p.plan.Status.PromotionHistory = RecordHistory(p.plan.Status.PromotionHistory, sched.Promotions)

	cleanup := Cleanup(sched.Promotions, keepLast(&cfg.Spec), p.now)
	p.plan.Delete = cleanup.Delete
	p.plan.RequeueAfter = minRequeue(p.plan.RequeueAfter, cleanup.RequeueAfter)
	p.plan.Transitions = append(p.plan.Transitions, cleanup.Transitions...)

	changed := map[string]bool{}
	for _, n := range sched.Changed {
		changed[n] = true
	}
	for _, n := range cleanup.Delete {
		changed[n] = false // deleting supersedes updating
	}
	for i := range sched.Promotions {
		sp := &sched.Promotions[i]
		switch {
		case p.created[sp.Name]:
			p.plan.Create = append(p.plan.Create, *sp)
		case changed[sp.Name]:
			p.plan.Update = append(p.plan.Update, *sp)
		}
	}
	if sched.Start != "" {
		for _, list := range [][]v1alpha1.VectorPromotion{p.plan.Create, p.plan.Update} {
			for i := range list {
				if list[i].Name == sched.Start {
					p.plan.Start = &list[i]
				}
			}
		}
	}
	p.plan.Status.ObservedGeneration = cfg.Generation
	p.plan.StatusChanged = !sameStatus(&p.plan.Status, &cfg.Status)
}

// sameStatus compares by hand: reflection (equality.Semantic) was most of a
// steady pass's cost.
func sameStatus(a, b *v1alpha1.VectorPromotionConfigStatus) bool {
	return a.Sequence == b.Sequence && a.SourceVector == b.SourceVector && a.TargetVector == b.TargetVector &&
		sameTime(a.SourceVectorSince, b.SourceVectorSince) && a.ObservedGeneration == b.ObservedGeneration &&
		slices.EqualFunc(a.PromotionHistory, b.PromotionHistory, sameRecord) &&
		sameConditions(a.Conditions, b.Conditions) &&
		sameConditions(a.LastPromotionConditions, b.LastPromotionConditions) &&
		sameConditions(a.LastSuccessfulPromotionConditions, b.LastSuccessfulPromotionConditions)
}

func sameRecord(a, b v1alpha1.PromotionRecord) bool {
	return a.Vector == b.Vector && a.Promotion == b.Promotion && a.Sequence == b.Sequence &&
		a.State == b.State && a.Reason == b.Reason && a.FinishedAt.Equal(&b.FinishedAt)
}

func sameTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func sameConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, sameCondition)
}

func validateSpec(spec *v1alpha1.VectorPromotionConfigSpec) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch s := spec.Source; {
	case s.Kind != v1alpha1.StageKind && s.Kind != v1alpha1.VectorTemplateKind:
		add("spec.source.kind is %q; use VectorTemplate or Stage", s.Kind)
	case s.Name == "":
		add("spec.source.name is empty")
	case s.Kind == v1alpha1.StageKind && s.Landscape == "":
		add("spec.source.landscape is required for a Stage source")
	case s.Kind == v1alpha1.VectorTemplateKind && s.Landscape != "":
		add("spec.source.landscape must be empty for a VectorTemplate source; templates resolve in the config's namespace")
	}
	switch t := spec.Target; {
	case t.Kind != v1alpha1.StageKind:
		add("spec.target.kind is %q, only Stage can be a target", t.Kind)
	case t.Name == "" || t.Landscape == "":
		add("spec.target needs a name and a landscape")
	case spec.Source.Kind == v1alpha1.StageKind && spec.Source.Name == t.Name && spec.Source.Landscape == t.Landscape:
		add("spec.source and spec.target are the same Stage %s in Landscape %s; a stage cannot promote to itself", t.Name, t.Landscape)
	}
	if spec.TTLAfterFinished != nil && spec.TTLAfterFinished.Duration < 0 {
		add("spec.ttlAfterFinished is %s, it cannot be negative", spec.TTLAfterFinished.Duration)
	}
	if spec.KeepLastPromotions != nil && *spec.KeepLastPromotions < 0 {
		add("spec.keepLastPromotions is %d, it cannot be negative", *spec.KeepLastPromotions)
	}
	for i, c := range spec.Constraints {
		if c.Component == "" {
			add("spec.constraints[%d].component is empty; name the component the constraint bounds", i)
		}
		if _, err := semver.NewConstraint(c.Version); err != nil {
			add("spec.constraints[%d].version %q is not a semver constraint: %v", i, c.Version, err)
		}
	}
	if spec.UpdateDelay != nil && spec.UpdateDelay.Duration < 0 {
		add("spec.updateDelay is %s, it cannot be negative", spec.UpdateDelay.Duration)
	}
	return problems
}

// sortedMissing orders source before target, so the reason is stable.
func sortedMissing(missing []MissingReference) []MissingReference {
	out := slices.Clone(missing)
	slices.SortStableFunc(out, func(a, b MissingReference) int {
		if a.Role == b.Role {
			return 0
		}
		if a.Role == RoleSource {
			return -1
		}
		return 1
	})
	return out
}

func missingReason(m MissingReference) string {
	switch {
	case m.Kind == v1alpha1.LandscapeKind:
		return v1alpha1.LandscapeNotFoundReason
	case m.Role == RoleSource:
		return v1alpha1.SourceNotFoundReason
	default:
		return v1alpha1.TargetNotFoundReason
	}
}

func keepLast(spec *v1alpha1.VectorPromotionConfigSpec) int {
	if spec.KeepLastPromotions == nil {
		return v1alpha1.DefaultKeepLastPromotions
	}
	return max(0, int(*spec.KeepLastPromotions))
}

// ranBefore reports whether a promotion of the config wrote vector into its
// target: what a rollback may go back to.
func ranBefore(history []v1alpha1.PromotionRecord, vector string) bool {
	return vector != "" && slices.ContainsFunc(history, func(r v1alpha1.PromotionRecord) bool {
		return r.Vector == vector && r.State == v1alpha1.PromotionSucceeded
	})
}
