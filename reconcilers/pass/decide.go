package pass

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Inputs are everything one pass decides from, read before deciding.
type Inputs struct {
	Snapshot *source.Snapshot
	State    *reconcilers.State
	// Approvals are what the approval files of promotions that are not
	// approved yet add up to, by promotion name (CountApprovals).
	Approvals map[string]ApprovalCount
	// Resolved component versions by template, then component (registry
	// discovery); nil when every component names an exact tag or digest.
	Resolved map[string]map[string]string
	// RegistryProblems by template: registry errors, and the versions kept.
	RegistryProblems map[string]string
	// TargetSequences are, by config name, the highest sequence of the
	// config that its target branch's history holds (see TargetSequences).
	TargetSequences map[string]int64
	// Results of promotions executed since the state was last written, by
	// promotion name.
	Results map[string]reconcilers.Result
	// PullRequests are the forge's facts about promotions' pull requests,
	// and OpenedPullRequests those opened since the state was last
	// written, by promotion name (see pullrequest.go).
	PullRequests       map[string]PullRequestFacts
	OpenedPullRequests map[string]v1alpha1.PullRequestStatus
	// Requests are the promotion requests on the state branch, judged by
	// their signatures, in file order.
	Requests []RequestVerdict
	// StageRenders are, by StageKey, the overlays rendered at the
	// snapshot's commit, for stages that have no StageVersion yet of the
	// vector their overlay names (see NeedsRender).
	StageRenders map[string]reconcilers.StageRender
	// RendersOther says, by StageKey, why a stage does not run the vector
	// its overlay names although no entry contradicts it: the shell
	// renders every such overlay (a base, a patch, a transformer or a
	// missing entry may run another version) and checks its images.
	RendersOther map[string]string
	// Reports are the deployers' reports by StageKey, each with the vector
	// the overlay names at its revision, read from Git.
	Reports map[string][]reconcilers.StageReport
	// Positions orders the revisions of a stage's branch (see
	// reconcilers.StageObservation); nil knows none.
	Positions func(stage, revision string) (position int, ok bool)
	// Holds are the hold and release records on the state branch, judged
	// by their signatures (see reconcilers.CurrentHolds).
	Holds []reconcilers.HoldVerdict
}

// Decision is a pass's plan: the state to write, what changed, and the
// promotions to execute once the state is written.
type Decision struct {
	State       *reconcilers.State
	Transitions []string
	// Start names promotions that are InProgress in State and must now be
	// written to their target.
	Start        []string
	RequeueAfter time.Duration
	// PullRequestActions are forge writes to make once State is written.
	PullRequestActions []PullRequestAction
	// ConsumedRequests are the request files to delete in the state commit
	// that records what became of them.
	ConsumedRequests []string
	// NewHolds are hold records to add in the state commit, by path: a
	// rollback's, and a ManualChange's.
	NewHolds map[string]reconcilers.HoldRecord

	// notRunning says, by stage key, why a stage runs no vector although
	// its overlay names one (RunningVectors).
	notRunning map[string]string

	// owned names the promotions of State this decision copied to change
	// in place. The others are shared with the state it read
	// (State.CloneSharing): a change replaces its promotion with a changed
	// copy, or is made on the copy Decision.promotion returns.
	owned map[string]bool
	// keptConfigs names the configs of State whose plan left the status
	// as the state holds it: the object is the state's, shared, and a
	// change is made on the copy Decision.config returns. Every other
	// config is the decision's own.
	keptConfigs map[string]bool
	// ownedStages names the stages of State this decision made or copied
	// to change in place; the others are shared with the state it read,
	// and a change is made on the copy Decision.stage returns.
	ownedStages map[string]bool
}

// Decide runs every reconciler over one snapshot and the state: stages
// observe their overlays, templates assemble vectors, approvals are
// recorded, configs detect drift and schedule promotions. It is pure; the
// caller persists Decision.State and then executes Decision.Start.
func Decide(in Inputs, now time.Time) Decision {
	d := Decision{State: in.State.CloneSharing(), owned: map[string]bool{}, keptConfigs: map[string]bool{}, ownedStages: map[string]bool{}}
	pruneAllowed := len(in.Snapshot.Problems) == 0
	in.Snapshot, d.notRunning = RunningVectors(in.Snapshot, in.State.Vectors, in.RendersOther)
	d.observeStages(in.Snapshot, now, pruneAllowed)
	d.assembleVectors(in.Snapshot, in.Resolved, in.RegistryProblems, now)
	d.recordApprovals(in.Approvals, now)
	d.recordPullRequests(in.Snapshot, in.OpenedPullRequests, in.PullRequests, now)
	d.completeExecutions(in.Results, now)
	d.observeDeployments(in, now, pruneAllowed)
	holds := reconcilers.CurrentHolds(in.Holds)
	d.markHeld(in.Snapshot, holds, now)
	d.reconcileConfigs(in.Snapshot, in.TargetSequences, holds, now, pruneAllowed)
	d.holdManualChanges(in.Snapshot, in.Holds, holds, now)
	d.resumeExecutions(now)
	d.planPullRequests(in.Snapshot, in.State, now)
	d.consumeRequests(in.Snapshot, in.TargetSequences, holds, in.Requests, now)
	d.setKstatus(now)
	return d
}

// config is the named config of State, to change in place: a copy of the
// state's own when the decision kept it (keptConfigs), made on the first
// call.
func (d *Decision) config(name string) *v1alpha1.VectorPromotionConfig {
	c := d.State.Configs[name]
	if c != nil && d.keptConfigs[name] {
		c = c.DeepCopy()
		d.State.Configs[name] = c
		delete(d.keptConfigs, name)
	}
	return c
}

// stage is the stage of State by key, to change in place: a copy of the
// state's own unless the decision made or copied it, made on the first
// call.
func (d *Decision) stage(key string) *v1alpha1.Stage {
	st := d.State.Stages[key]
	if st != nil && !d.ownedStages[key] {
		st = st.DeepCopy()
		d.State.Stages[key], d.ownedStages[key] = st, true
	}
	return st
}

// setKstatus derives Reconciling and Stalled (reconcilers.SetKstatus) on
// every config, template and stage, the last step of a decision, copying a
// kept config only when its conditions change.
func (d *Decision) setKstatus(now time.Time) {
	// A kept config's conditions are tried on a scratch copy, one for all:
	// most do not change.
	var scratch []metav1.Condition
	for name, c := range d.State.Configs {
		if !d.keptConfigs[name] {
			reconcilers.SetKstatus(&c.Status.Conditions, now)
			continue
		}
		scratch = append(scratch[:0], c.Status.Conditions...)
		if reconcilers.SetKstatus(&scratch, now) {
			d.config(name).Status.Conditions = slices.Clone(scratch)
		}
	}
	for _, t := range d.State.Templates {
		reconcilers.SetKstatus(&t.Status.Conditions, now)
	}
	for key, st := range d.State.Stages {
		scratch = append(scratch[:0], st.Status.Conditions...)
		if reconcilers.SetKstatus(&scratch, now) {
			d.stage(key).Status.Conditions = slices.Clone(scratch)
		}
	}
}

// promotion is the named promotion of State, to change in place: a copy of
// the one the decision read, made on the first call.
func (d *Decision) promotion(name string) *v1alpha1.VectorPromotion {
	p := d.State.Promotions[name]
	if p != nil && !d.owned[name] {
		p = p.DeepCopy()
		d.State.Promotions[name], d.owned[name] = p, true
	}
	return p
}

// completeExecutions records the outcome of promotions written since the
// last state commit. A promotion that is no longer InProgress (retired by
// another observer meanwhile) keeps the state it has.
func (d *Decision) completeExecutions(results map[string]reconcilers.Result, now time.Time) {
	for _, name := range keys.Sorted(results) {
		p, ok := d.State.Promotions[name]
		if !ok {
			continue
		}
		done, tr, err := reconcilers.Complete(*p, results[name], now)
		if err != nil {
			continue
		}
		d.State.Promotions[name] = &done
		d.Transitions = append(d.Transitions, tr.String())
	}
}

// resumeExecutions re-executes promotions that are InProgress within their
// deadline but were not started by this pass: a run cut short by a crash, or
// whose result was never recorded. The write is idempotent (the commit's
// trailers name the promotion), so a second attempt finds the first commit.
func (d *Decision) resumeExecutions(now time.Time) {
	started := map[string]bool{}
	for _, n := range d.Start {
		started[n] = true
	}
	for _, name := range keys.Sorted(d.State.Promotions) {
		if started[name] {
			continue
		}
		plan := reconcilers.ReconcilePromotion(*d.State.Promotions[name], now)
		if plan.Changed {
			p := plan.Promotion
			d.State.Promotions[name] = &p
			if plan.Transition != nil {
				d.Transitions = append(d.Transitions, plan.Transition.String())
			}
		}
		if plan.Execute {
			d.Start = append(d.Start, name)
		}
	}
}

// Promote is a manual promotion on top of a regular pass: a fresh
// promotion of the config's source vector with a new sequence, even if one
// exists. It returns the name of the new promotion. The controller makes
// one for each valid promotion request (see consumeRequests).
func Promote(in Inputs, config string, now time.Time) (Decision, string, error) {
	d := Decide(in, now)
	name, err := d.promote(in.Snapshot, in.TargetSequences, reconcilers.CurrentHolds(in.Holds), config, "", reconcilers.PromoteOptions{}, now)
	if err != nil {
		return Decision{}, "", err
	}
	return d, name, nil
}

// consumeRequests turns each valid promotion request into a fresh
// promotion, and drops the others saying why; every request file is
// consumed, so a request counts once.
func (d *Decision) consumeRequests(snap *source.Snapshot, targetSequences map[string]int64, holds map[string]*reconcilers.StageHold, requests []RequestVerdict, now time.Time) {
	for _, r := range requests {
		d.ConsumedRequests = append(d.ConsumedRequests, r.Path)
		if r.Requester == "" {
			d.note("promotion request %s dropped: %s", r.Path, r.Refusal)
			continue
		}
		name, err := d.promote(snap, targetSequences, holds, r.Request.Config, r.Request.Vector, requestOptions(r.Request), now)
		if err != nil {
			d.note("promotion request %s by %s dropped: %v", r.Path, r.Requester, err)
			continue
		}
		d.note("promotion request %s by %s: created %s", r.Path, r.Requester, name)
		if r.Request.Rollback {
			d.holdForRollback(snap, r, name, now)
		}
	}
}

// promote adds a fresh promotion of config's source vector, which must be
// vector when that is set (what the requester saw).
func (d *Decision) promote(snap *source.Snapshot, targetSequences map[string]int64, holds map[string]*reconcilers.StageHold, config, vector string, opts reconcilers.PromoteOptions, now time.Time) (string, error) {
	cfg, ok := snap.Configs[config]
	if !ok {
		return "", fmt.Errorf("promote: no VectorPromotionConfig %s in %s (list them with vectorflow get configs)", config, snap.URL)
	}
	c := d.configWithStatus(config, cfg)
	var promotions []v1alpha1.VectorPromotion
	for _, p := range d.State.Promotions {
		if p.Spec.VectorPromotionConfigName == config {
			promotions = append(promotions, *p)
		}
	}
	offered := d.sourceState(&c)
	if opts.Vector == "" && vector != "" && offered.Vector != vector {
		return "", fmt.Errorf("promote %s: the source offers %s now, not the requested %s; promote again", config, reconcilers.VectorOrNone(offered.Vector), vector)
	}
	plan, err := reconcilers.PromoteWith(reconcilers.ConfigInput{
		Config:         c,
		Missing:        missingReferences(snap, &c),
		Conflicts:      snap.ConfigConflicts()[config],
		Source:         offered,
		TargetVector:   targetVector(snap, &c),
		TargetSequence: targetSequences[config],
		Promotions:     promotions,
		Upgrade:        d.upgradeInput(&c, stonesByTemplate(snap), holds, keptVectors(d.State.StageVersions)),
	}, opts, now)
	if err != nil {
		return "", err
	}
	if len(plan.Create) != 1 {
		return "", fmt.Errorf("promote %s: the source offers no vector yet", config)
	}
	d.applyConfigPlan(config, plan)
	return plan.Create[0].Name, nil
}

// observeStages records each stage's current vector and since when the
// overlay names it (what updateDelay of a Stage source measures). A vector
// the state has never seen (written by hand, or by another tool) is recorded
// from the overlay's images, so a promotion of it is a snapshot too.
func (d *Decision) observeStages(snap *source.Snapshot, now time.Time, prune bool) {
	s := d.State
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		observed := ref.Vector.Vector
		st := s.Stages[key]
		if st == nil {
			st = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: ref.Name}}
			st.Spec = v1alpha1.StageSpec{Landscape: ref.Landscape}
			s.Stages[key], d.ownedStages[key] = st, true
		}
		// The spec follows the repository: spec.deployment decides where
		// the active vector comes from.
		if spec, ok := snap.Stages[key]; ok && !equality.Semantic.DeepEqual(st.Spec, spec.Spec) {
			st = d.stage(key)
			st.Spec = *spec.Spec.DeepCopy()
		}
		if st.Status.Vector != observed || st.Status.VectorSince == nil {
			since := reconcilers.Stamp(now)
			st = d.stage(key)
			st.Status.Vector, st.Status.VectorSince, st.Status.Commit = observed, &since, ref.Commit
			if why, ok := d.notRunning[key]; ok {
				d.note("stage %s: now runs %s: %s", key, reconcilers.VectorOrNone(observed), why)
			} else {
				d.note("stage %s: now runs %s", key, reconcilers.VectorOrNone(observed))
			}
		}
		if observed != "" {
			d.recordOverlayVector(observed, ref)
		}
	}
	if !prune {
		return
	}
	for _, key := range keys.Absent(s.Stages, snap.StageIndex) {
		delete(s.Stages, key)
		d.note("stage %s: removed from the repository", key)
	}
}

// RunningVectors returns snap with no vector for each stage whose overlay
// names a vector it does not run: an images entry of the overlay sets one
// of that vector's components to another tag or digest (the annotation
// edited by hand, or copied from another overlay). A stage reports what it
// runs, so such a stage runs none: a config into it offers its source's
// vector, which sets the entries, and none out of it offers what it never
// ran. A vector vectors does not hold is what the first overlay naming it
// says, as observeStages records it. rendersOther clears the stages whose
// render does not run the vector their entries cannot decide alone
// (Inputs.RendersOther). why says, by stage key, what each cleared stage's
// overlay sets or renders. snap itself comes back when no stage is
// cleared; otherwise a copy sharing all but its StageIndex.
func RunningVectors(snap *source.Snapshot, vectors map[string]*v1alpha1.Vector, rendersOther map[string]string) (running *source.Snapshot, why map[string]string) {
	recorded := map[string][]v1alpha1.VectorComponent{} // vectors the pass records from overlays
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		named := ref.Vector.Vector
		if named == "" {
			continue
		}
		var components []v1alpha1.VectorComponent
		if v := vectors[named]; v != nil {
			components = v.Spec.Components
		} else if c, ok := recorded[named]; ok {
			components = c
		} else {
			recorded[named] = ref.Vector.Images
			continue
		}
		contradiction := ref.Vector.Contradiction(components)
		if contradiction == "" {
			contradiction = rendersOther[key]
		}
		if contradiction == "" {
			continue
		}
		if why == nil {
			why = map[string]string{}
			copied := *snap
			copied.StageIndex = maps.Clone(snap.StageIndex)
			running = &copied
		}
		why[key] = fmt.Sprintf("its overlay %s names %s, but %s", ref.Overlay, named, contradiction)
		ref.Vector.Vector = ""
		running.StageIndex[key] = ref
	}
	if why == nil {
		return snap, nil
	}
	return running, why
}

func (d *Decision) recordOverlayVector(ref string, stage source.StageRef) {
	if _, ok := d.State.Vectors[ref]; ok {
		return
	}
	template, version, err := v1alpha1.ParseVectorRef(ref)
	if err != nil {
		return
	}
	components := slices.Clone(stage.Vector.Images)
	sort.Slice(components, func(i, j int) bool { return components[i].Name < components[j].Name })
	d.State.Vectors[ref] = &v1alpha1.Vector{
		ObjectMeta: metav1.ObjectMeta{Name: template + "-" + version},
		Spec: v1alpha1.VectorSpec{Template: template, Version: version, Components: components,
			Digest: reconcilers.ComponentsDigest(components)},
	}
	d.note("vector %s: recorded from the overlay of stage %s", ref, source.StageKey(stage.Landscape, stage.Name))
}

// assembleVectors makes a new vector for every template whose resolved
// components differ from its latest vector's.
func (d *Decision) assembleVectors(snap *source.Snapshot, resolved map[string]map[string]string, registryProblems map[string]string, now time.Time) {
	templates := make(map[string]v1alpha1.VectorTemplate, len(snap.Templates))
	for name, t := range snap.Templates {
		tt := *t.DeepCopy()
		if st := d.State.Templates[name]; st != nil {
			tt.Status = *st.Status.DeepCopy()
		}
		templates[name] = tt
	}
	for _, name := range keys.Sorted(templates) {
		tmpl := templates[name]
		var latest *v1alpha1.Vector
		if v, ok := d.State.Vectors[tmpl.Status.LatestVector]; ok {
			latest = v
		}
		status := tmpl.Status
		plan, err := reconcilers.AssembleVector(reconcilers.AssembleInput{
			Template: name, Templates: templates, Resolved: resolved[name], Latest: latest,
		}, now)
		if err == nil && plan.Vector != nil && latest == nil {
			d.adoptRecordedVector(&plan, now)
		}
		cond := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: v1alpha1.VectorAssembledReason, ObservedGeneration: tmpl.Generation}
		problem := registryProblems[name]
		if err != nil {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.AssemblyFailedReason, err.Error()
			if problem != "" {
				cond.Message += "; " + problem
			}
		} else {
			status = plan.Status
			cond.Message = "latest vector " + status.LatestVector
			if plan.Vector != nil {
				d.State.Vectors[plan.Vector.Ref()] = plan.Vector
				d.note("template %s: assembled vector %s", name, plan.Vector.Ref())
			}
			if problem != "" {
				cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.RegistryUnavailableReason
				cond.Message = problem
			}
		}
		reconcilers.SetCondition(&status.Conditions, cond, now)
		d.State.Templates[name] = &v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: status}
	}
	if len(snap.Problems) == 0 {
		for _, name := range keys.Absent(d.State.Templates, snap.Templates) {
			delete(d.State.Templates, name)
		}
	}
}

// adoptRecordedVector makes a template's first vector the one a stage
// already runs when their components are the same (recorded from its
// overlay), instead of a second vector of the same components under a new
// version, which would be promoted as if it were new.
func (d *Decision) adoptRecordedVector(plan *reconcilers.VectorPlan, now time.Time) {
	var same *v1alpha1.Vector
	for _, ref := range keys.Sorted(d.State.Vectors) {
		v := d.State.Vectors[ref]
		if v.Spec.Template != plan.Vector.Spec.Template || v.Spec.Digest != plan.Vector.Spec.Digest {
			continue
		}
		if same == nil || newerVersion(v.Spec.Version, same.Spec.Version) {
			same = v
		}
	}
	if same == nil {
		return
	}
	since := reconcilers.Stamp(now)
	plan.Status.LatestVector, plan.Status.LatestVectorSince = same.Ref(), &since
	plan.Vector = nil
	d.note("template %s: its components are those of vector %s, which a stage runs; adopted it", same.Spec.Template, same.Ref())
}

// newerVersion orders vector versions by their time; versions that are not
// vectorflow's fall back to string order.
func newerVersion(a, b string) bool {
	ta, errA := reconcilers.ParseVectorVersion(a)
	tb, errB := reconcilers.ParseVectorVersion(b)
	if errA != nil || errB != nil {
		return a > b
	}
	return ta.After(tb)
}

// recordApprovals approves promotions whose count is complete. One still
// short keeps waiting, its Approved condition saying who approved, how many
// more are needed and what was refused, so the approvers see why nothing
// happens.
func (d *Decision) recordApprovals(counts map[string]ApprovalCount, now time.Time) {
	for _, name := range keys.Sorted(counts) {
		count := counts[name]
		p, ok := d.State.Promotions[name]
		if !ok {
			continue
		}
		if _, closed := reconcilers.ApprovalClosed(*p); closed {
			continue
		}
		if count.Complete() {
			res, err := reconcilers.ApproveAll(*p, count.Grants, count.Needed, now)
			if err != nil || !res.Changed {
				continue
			}
			approved := res.Promotion
			d.State.Promotions[name] = &approved
			if res.Transition != nil {
				d.Transitions = append(d.Transitions, res.Transition.String())
			}
			continue
		}
		p = d.promotion(name)
		reason := v1alpha1.WaitingForApprovalReason
		if len(count.Grants) == 0 {
			reason = v1alpha1.ApprovalRefusedReason
		}
		msg := count.Waiting(p.Spec.VectorPromotionConfigName)
		changed := false
		// Another channel's word on the condition (a closed pull request)
		// stays; the signed approvals so far still show in status.approvals.
		if cur := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition); cur == nil ||
			cur.Reason == v1alpha1.WaitingForApprovalReason || cur.Reason == v1alpha1.ApprovalRefusedReason {
			changed = reconcilers.SetCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ApprovedCondition,
				Status: metav1.ConditionFalse, Reason: reason, Message: msg}, now)
		}
		if !slices.Equal(approverNames(p.Status.Approvals), count.Approvers()) {
			p.Status.Approvals, changed = slices.Clone(count.Grants), true
		}
		if changed {
			p.Status.State = reconcilers.DeriveState(p)
			d.note("%s: %s", name, msg)
		}
	}
}

func approverNames(records []v1alpha1.ApprovalRecord) []string {
	names := make([]string, 0, len(records))
	for _, r := range records {
		names = append(names, r.ApprovedBy)
	}
	return names
}

// reconcileConfigs runs the config reconciler for each config and applies
// its plan to the state. Promotions of configs that no longer exist are
// deleted with them, as an owner reference would.
func (d *Decision) reconcileConfigs(snap *source.Snapshot, targetSequences map[string]int64, holds map[string]*reconcilers.StageHold, now time.Time, prune bool) {
	stones := stonesByTemplate(snap)
	byConfig := map[string][]v1alpha1.VectorPromotion{}
	for _, p := range d.State.Promotions {
		byConfig[p.Spec.VectorPromotionConfigName] = append(byConfig[p.Spec.VectorPromotionConfigName], *p)
	}
	conflicts := snap.ConfigConflicts()
	kept := keptVectors(d.State.StageVersions) // no config's plan records a StageVersion
	// Each config's plan reads only what no plan writes (the stages,
	// templates and vectors, and its own status and promotions), so the
	// plans are made on every core and applied in name order, as one
	// after the other would be.
	names := snap.ConfigNames()
	plans := make([]reconcilers.ConfigPlan, len(names))
	parallel.Each(len(names), func(i int) {
		name := names[i]
		cfg := d.configWithStatus(name, snap.Configs[name])
		plans[i] = reconcilers.ReconcileConfig(reconcilers.ConfigInput{
			Config:         cfg,
			Missing:        missingReferences(snap, &cfg),
			Conflicts:      conflicts[name],
			Source:         d.sourceState(&cfg),
			TargetVector:   targetVector(snap, &cfg),
			TargetSequence: targetSequences[name],
			Promotions:     byConfig[name],
			Upgrade:        d.upgradeInput(&cfg, stones, holds, kept),
		}, now)
	})
	for i, name := range names {
		d.applyConfigPlan(name, plans[i])
	}
	if !prune {
		// A config gone from the repository keeps its status while the
		// repository has problems. Every other config's status is the
		// plan's; this one becomes the decision's own here, as what
		// follows changes statuses in place.
		for name, c := range d.State.Configs {
			if _, ok := snap.Configs[name]; !ok {
				d.State.Configs[name] = c.DeepCopy()
			}
		}
		return
	}
	for _, name := range keys.Sorted(d.State.Promotions) {
		p := d.State.Promotions[name]
		if _, ok := snap.Configs[p.Spec.VectorPromotionConfigName]; !ok {
			d.deletePromotion(name)
			d.note("%s: deleted with its VectorPromotionConfig %s", name, p.Spec.VectorPromotionConfigName)
		}
	}
	for _, name := range keys.Absent(d.State.Configs, snap.Configs) {
		delete(d.State.Configs, name)
	}
}

// configWithStatus is the snapshot's config named name with the status the
// state holds for it, or none when the state holds none: a status comes
// from the state branch only, never from the config repository. A shallow
// copy: a plan reads the config and copies the status it changes
// (configPass.start), where copying every config twice was a third of the
// plans' time at 10,000 stages.
func (d *Decision) configWithStatus(name string, cfg *v1alpha1.VectorPromotionConfig) v1alpha1.VectorPromotionConfig {
	c := *cfg
	c.Status = v1alpha1.VectorPromotionConfigStatus{}
	if st := d.State.Configs[name]; st != nil {
		c.Status = st.Status
	}
	return c
}

// ApplyConfigPlan writes a config plan into the state, in the order the
// reconcilers package documents (one state commit makes it atomic anyway).
func (d *Decision) applyConfigPlan(name string, plan reconcilers.ConfigPlan) {
	s := d.State
	if kept := s.Configs[name]; kept != nil && !plan.StatusChanged {
		// The status the state holds, as the state holds it: the codec
		// then knows the file unchanged at a glance instead of comparing
		// 10,000 statuses field by field each pass.
		d.keptConfigs[name] = true
	} else {
		s.Configs[name] = &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: plan.Status}
		delete(d.keptConfigs, name)
	}
	for _, list := range [][]v1alpha1.VectorPromotion{plan.Create, plan.Update} {
		for i := range list {
			p := list[i]
			s.Promotions[p.Name] = &p
		}
	}
	for _, del := range plan.Delete {
		d.deletePromotion(del)
	}
	for _, t := range plan.Transitions {
		d.Transitions = append(d.Transitions, t.String())
	}
	if plan.Start != nil {
		d.Start = append(d.Start, plan.Start.Name)
	}
	if plan.RequeueAfter > 0 && (d.RequeueAfter == 0 || plan.RequeueAfter < d.RequeueAfter) {
		d.RequeueAfter = plan.RequeueAfter
	}
}

// deletePromotion removes a finished promotion. Its approval file stays: it
// is the approver's signed word, and audit reads it long after the
// promotion is gone.
func (d *Decision) deletePromotion(name string) {
	delete(d.State.Promotions, name)
}

// sourceState is the vector the config's source offers now and since when,
// with its components when the state holds it.
func (d *Decision) sourceState(cfg *v1alpha1.VectorPromotionConfig) reconcilers.SourceState {
	s := d.offeredBy(cfg)
	if v := d.State.Vectors[s.Vector]; v != nil {
		s.Components = v.Spec.Components
	}
	return s
}

func (d *Decision) offeredBy(cfg *v1alpha1.VectorPromotionConfig) reconcilers.SourceState {
	src := cfg.Spec.Source
	switch src.Kind {
	case v1alpha1.VectorTemplateKind:
		if t := d.State.Templates[src.Name]; t != nil {
			return reconcilers.SourceState{Vector: t.Status.LatestVector, Since: timeOf(t.Status.LatestVectorSince)}
		}
	case v1alpha1.StageKind:
		return reconcilers.StageSourceState(src, d.State.Stages[reconcilers.StageKey(src.Landscape, src.Name)])
	}
	return reconcilers.SourceState{}
}

func targetVector(snap *source.Snapshot, cfg *v1alpha1.VectorPromotionConfig) string {
	t := cfg.Spec.Target
	return snap.StageIndex[source.StageKey(t.Landscape, t.Name)].Vector.Vector
}

// missingReferences lists what the config names that the snapshot lacks.
func missingReferences(snap *source.Snapshot, cfg *v1alpha1.VectorPromotionConfig) []reconcilers.MissingReference {
	var missing []reconcilers.MissingReference
	stage := func(role reconcilers.Role, landscape, name string) {
		if _, ok := snap.Landscapes[landscape]; !ok {
			missing = append(missing, reconcilers.MissingReference{Role: role, Kind: v1alpha1.LandscapeKind, Name: landscape})
			return
		}
		if _, ok := snap.StageIndex[source.StageKey(landscape, name)]; !ok {
			missing = append(missing, reconcilers.MissingReference{Role: role, Kind: v1alpha1.StageKind, Name: name,
				Landscape: landscape, Reason: landscapeProblem(snap, landscape)})
		}
	}
	src := cfg.Spec.Source
	switch src.Kind {
	case v1alpha1.VectorTemplateKind:
		if _, ok := snap.Templates[src.Name]; !ok {
			missing = append(missing, reconcilers.MissingReference{Role: reconcilers.RoleSource, Kind: src.Kind, Name: src.Name})
		}
	case v1alpha1.StageKind:
		stage(reconcilers.RoleSource, src.Landscape, src.Name)
	}
	stage(reconcilers.RoleTarget, cfg.Spec.Target.Landscape, cfg.Spec.Target.Name)
	return missing
}

// landscapeProblem is why a landscape's stages do not resolve, when the
// landscape itself has a problem (its repository cannot be read, say): the
// config's Ready condition then says so, and recovers when the repository
// is back.
func landscapeProblem(snap *source.Snapshot, landscape string) string {
	for _, p := range snap.Problems {
		if p.Kind == v1alpha1.LandscapeKind && p.Name == landscape {
			return p.Field + ": " + p.Reason
		}
	}
	return ""
}

func (d *Decision) note(format string, args ...any) {
	d.Transitions = append(d.Transitions, fmt.Sprintf(format, args...))
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
