package reconcilers

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// StageObservation is what the shell learned about one stage in a pass.
type StageObservation struct {
	Landscape, Name string
	// Vector is what the overlay names now ("" for none), Commit the commit
	// it was read at; LandedCommit, when set, is the commit of the
	// promotion of Vector that landed since the last pass.
	Vector, Commit, LandedCommit string
	// Render is the overlay rendered at Commit, given when the stage has no
	// StageVersion of Vector yet (nil when the render failed).
	Render *StageRender
	// Reports are the deployer's reports on the stage's revisions, in any
	// order.
	Reports []StageReport
	// Position orders the revisions of the stage's branch, higher is newer;
	// ok is false for a revision that is not on the branch's history. The
	// shell derives it from the branch's first-parent history, so no
	// timestamp decides which report is newer.
	Position func(revision string) (position int, ok bool)
}

// StageReport is a deployer's report on one revision, with what the
// stage's overlay names at that revision, read from Git.
type StageReport struct {
	Revision string
	Outcome  deployments.Outcome
	// Reason and Message are the deployer's words.
	Reason, Message string
	At              time.Time
	Channel         string
	// Vector is what the overlay names at Revision ("" for none).
	Vector string
	// Render is the overlay rendered at Revision, when the stage has no
	// StageVersion of Vector yet.
	Render *StageRender
}

// ObserveStage records one stage's versions and what runs there, in s (the
// stage's status must exist, as observeStages leaves it):
//
//  1. the StageVersion of the vector the overlay names (the target);
//  2. the active vector: with spec.deployment, from the reports (the vector
//     the overlay names at the newest revision reported healthy; a failed
//     report marks its version not ready and the stage not Active);
//     without, what the overlay names;
//  3. the stage's own usages, active first and then target, so the version
//     that runs is referenced at every step; CollectStageVersions runs
//     after, over the updated usages.
//
// A report older (by Position) than what the stage or the version already
// knows changes nothing, and so does one of the same revision made before
// the report that last changed what its version says (its ReportedAt):
// reports are idempotent, and one arriving late or sent again never
// overrides the deployer's newer word. It returns what changed, for the
// state commit message.
//
// The stage may be the one of the state the decision read, shared
// (State.CloneSharing): the observer works on a copy of what it may change
// and replaces the stage with a changed copy only when it changed, which at
// 10,000 stages is few of them.
func ObserveStage(s *State, obs StageObservation, now time.Time) []string {
	o := &stageObserver{s: s, obs: obs, now: now, key: StageKey(obs.Landscape, obs.Name)}
	read := s.Stages[o.key]
	if read == nil {
		return nil
	}
	work := *read
	work.Status.Conditions = slices.Clone(read.Status.Conditions)
	o.st = &work
	o.recordTarget()
	if o.st.Spec.Deployment == nil {
		o.activeFromOverlay()
	} else {
		o.activeFromReports()
	}
	o.setOwnUsage(v1alpha1.ActiveUsageReason, o.st.Status.ActiveVector)
	o.setOwnUsage(v1alpha1.TargetUsageReason, obs.Vector)
	if before, after := &read.Status, &work.Status; after.ActiveVector != before.ActiveVector || after.ActiveRevision != before.ActiveRevision ||
		!sameTime(after.ActiveSince, before.ActiveSince) || !sameConditions(after.Conditions, before.Conditions) {
		changed := read.DeepCopy()
		changed.Status.ActiveVector, changed.Status.ActiveRevision = after.ActiveVector, after.ActiveRevision
		changed.Status.ActiveSince, changed.Status.Conditions = after.ActiveSince.DeepCopy(), after.Conditions
		s.Stages[o.key] = changed
	}
	return o.notes
}

type stageObserver struct {
	s   *State
	obs StageObservation
	now time.Time
	key string
	// st is a shallow copy of the stage with conditions of its own: the
	// observer changes its status's ActiveVector, ActiveRevision,
	// ActiveSince (replaced, never changed in place) and Conditions, and
	// ObserveStage carries those four over.
	st    *v1alpha1.Stage
	notes []string
	// scratch holds a StageVersion's conditions while a change is tried.
	scratch []metav1.Condition
}

func (o *stageObserver) note(format string, args ...any) {
	o.notes = append(o.notes, fmt.Sprintf("stage %s: ", o.key)+fmt.Sprintf(format, args...))
}

// version returns the stage's StageVersion of vector, recording it first
// when there is none.
func (o *stageObserver) version(vector string, render *StageRender, commit string) *v1alpha1.StageVersion {
	name := StageVersionName(o.obs.Landscape, o.obs.Name, vector)
	if sv := o.s.StageVersions[name]; sv != nil {
		return sv
	}
	r := StageRender{Commit: commit}
	if render != nil {
		r = *render
		if commit != "" {
			r.Commit = commit
		}
	}
	ready := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionUnknown,
		Reason: v1alpha1.AwaitingDeploymentReason,
		Message: fmt.Sprintf("waiting for %s to report a revision naming vector %s applied and healthy",
			describeDeployment(o.st.Spec.Deployment), vector)}
	sv := newStageVersion(o.obs.Landscape, o.obs.Name, vector, r, ready, o.now)
	o.s.StageVersions[name] = sv
	o.note("recorded StageVersion %s of vector %s", name, vector)
	return sv
}

func (o *stageObserver) recordTarget() {
	if o.obs.Vector == "" {
		return
	}
	commit := o.obs.Commit
	if o.obs.LandedCommit != "" {
		commit = o.obs.LandedCommit
	}
	o.version(o.obs.Vector, o.obs.Render, commit)
}

// activeFromOverlay: without spec.deployment, what the overlay names counts
// as active, since the overlay named it.
func (o *stageObserver) activeFromOverlay() {
	st := &o.st.Status
	if o.obs.Vector == "" {
		if st.ActiveVector != "" {
			st.ActiveVector, st.ActiveRevision, st.ActiveSince = "", "", nil
		}
		removeCondition(&st.Conditions, v1alpha1.ActiveCondition)
		return
	}
	if st.ActiveVector != o.obs.Vector || st.ActiveSince == nil {
		since := st.VectorSince
		if since == nil {
			s := Stamp(o.now)
			since = &s
		}
		st.ActiveVector, st.ActiveSince = o.obs.Vector, since.DeepCopy()
	}
	st.ActiveRevision = st.Commit
	msg := "the stage has no spec.deployment: the vector its overlay names, " + o.obs.Vector + ", counts as active"
	SetCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ActiveCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.NoDeploymentReason, Message: msg}, o.now)
	o.setVersionStatus(o.version(o.obs.Vector, o.obs.Render, o.obs.Commit), st.Commit, nil,
		metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.NoDeploymentReason, Message: msg})
}

// setVersionStatus sets a StageVersion's revision and condition c, and
// when a report made them, the time it was made (nil: no deployer). A
// report that changes neither leaves the time as it was: deployers repeat
// themselves (Argo CD's reconciledAt moves every refresh), and each
// repeat would otherwise be a state commit; the controller's report queue
// drops what is older than a repeat it saw.
//
// The version may be the state's that the decision read (CloneSharing
// shares them, and a pass at 10,000 stages changes few): a change is made
// on a copy that replaces it, and the condition is tried on a scratch copy.
func (o *stageObserver) setVersionStatus(sv *v1alpha1.StageVersion, revision string, reported *metav1.Time, c metav1.Condition) {
	o.scratch = append(o.scratch[:0], sv.Status.Conditions...)
	if !SetCondition(&o.scratch, c, o.now) && sv.Status.Revision == revision {
		return
	}
	sv = sv.DeepCopy()
	sv.Status.Revision, sv.Status.ReportedAt, sv.Status.Conditions = revision, reported, slices.Clone(o.scratch)
	o.s.StageVersions[sv.Name] = sv
}

// activeFromReports applies the reports oldest revision first, so a batch
// decides as the same reports arriving one by one in order would.
func (o *stageObserver) activeFromReports() {
	st := &o.st.Status
	dep := describeDeployment(o.st.Spec.Deployment)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ActiveCondition); c == nil || c.Reason == v1alpha1.NoDeploymentReason {
		// spec.deployment is new: until it reports, nothing is known to run.
		st.ActiveVector, st.ActiveRevision, st.ActiveSince = "", "", nil
		SetCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ActiveCondition, Status: metav1.ConditionUnknown,
			Reason: v1alpha1.AwaitingDeploymentReason, Message: "waiting for " + dep + " to report a revision applied and healthy"}, o.now)
	}
	type placed struct {
		StageReport
		pos int
	}
	var reports []placed
	for _, r := range o.obs.Reports {
		if r.Outcome != deployments.Healthy && r.Outcome != deployments.Failed {
			continue // Progressing says nothing yet
		}
		pos, ok := o.position(r.Revision)
		if !ok {
			o.note("report of %s on revision %s ignored: the revision is not on the stage's branch", dep, ShortRevision(r.Revision))
			continue
		}
		if r.Vector == "" {
			o.note("report of %s on revision %s ignored: the overlay names no vector there", dep, ShortRevision(r.Revision))
			continue
		}
		if r.At.After(o.now) {
			r.At = o.now // not made after it arrived: see reportedSince
		}
		reports = append(reports, placed{r, pos})
	}
	slices.SortStableFunc(reports, func(a, b placed) int {
		if c := cmp.Compare(a.pos, b.pos); c != 0 {
			return c
		}
		return a.At.Compare(b.At)
	})
	if len(reports) == 0 {
		return
	}
	newest, known := o.newestReported()
	for _, r := range reports {
		if since, late := o.reportedSince(r.StageReport); late {
			o.note("report of %s on revision %s made at %s ignored: it reported on that revision at %s", dep,
				ShortRevision(r.Revision), r.At.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
			continue
		}
		o.reportOnVersion(r.StageReport, r.pos, dep)
		if known && r.pos < newest {
			continue // the stage already knows a newer revision
		}
		newest, known = r.pos, true
		o.reportOnStage(r.StageReport, dep)
	}
}

// reportedSince is when the deployer made the report that last changed
// what r's revision's version says, when that is after r was made: r
// arrived late (a retried delivery) or was sent again, and the deployer's
// newer word stands. The version of r's vector holds it, since the
// overlay names that vector at r's revision. A time after now is a
// deployer's clock running ahead, which would outrank every true report
// until then: it holds nothing.
func (o *stageObserver) reportedSince(r StageReport) (time.Time, bool) {
	sv := o.s.StageVersions[StageVersionName(o.obs.Landscape, o.obs.Name, r.Vector)]
	if sv == nil || sv.Status.Revision != r.Revision || sv.Status.ReportedAt == nil || !r.At.Before(sv.Status.ReportedAt.Time) ||
		sv.Status.ReportedAt.Time.After(o.now) {
		return time.Time{}, false
	}
	return sv.Status.ReportedAt.Time, true
}

// reportOnVersion sets the Ready condition of the reported vector's
// StageVersion, unless it already knows a newer revision.
func (o *stageObserver) reportOnVersion(r StageReport, pos int, dep string) {
	sv := o.version(r.Vector, r.Render, r.Revision)
	if prev, ok := o.position(sv.Status.Revision); ok && sv.Status.Revision != "" && pos < prev {
		return
	}
	reported := Stamp(r.At)
	o.setVersionStatus(sv, r.Revision, &reported, reportCondition(v1alpha1.ReadyCondition, r, dep))
}

// reportOnStage makes the newest report the stage's word: healthy makes its
// vector the active one; failed leaves the active vector (its version is
// what the stage falls back to) but the stage is not Active, and the time a
// vector has been active restarts with the next healthy report.
func (o *stageObserver) reportOnStage(r StageReport, dep string) {
	st := &o.st.Status
	was := meta.FindStatusCondition(st.Conditions, v1alpha1.ActiveCondition)
	healthyBefore := was != nil && was.Status == metav1.ConditionTrue
	SetCondition(&st.Conditions, reportCondition(v1alpha1.ActiveCondition, r, dep), o.now)
	if r.Outcome != deployments.Healthy {
		if healthyBefore || st.ActiveSince != nil {
			o.note("revision %s (vector %s) failed at %s: %s", ShortRevision(r.Revision), r.Vector, dep, reasonOf(r))
		}
		st.ActiveSince = nil
		return
	}
	if st.ActiveVector != r.Vector || !healthyBefore || st.ActiveSince == nil {
		at := r.At
		if at.IsZero() || at.After(o.now) {
			at = o.now
		}
		since := Stamp(at)
		st.ActiveSince = &since
		o.note("vector %s is active: revision %s reported applied and healthy by %s", r.Vector, ShortRevision(r.Revision), dep)
	}
	st.ActiveVector, st.ActiveRevision = r.Vector, r.Revision
}

func reportCondition(typ string, r StageReport, dep string) metav1.Condition {
	if r.Outcome == deployments.Healthy {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: v1alpha1.DeployedHealthyReason,
			Message: fmt.Sprintf("revision %s (vector %s) applied and healthy, reported by %s", ShortRevision(r.Revision), r.Vector, dep)}
	}
	msg := fmt.Sprintf("revision %s (vector %s) failed, reported by %s", ShortRevision(r.Revision), r.Vector, dep)
	if r.Message != "" {
		msg += ": " + r.Message
	}
	return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reasonOf(r), Message: msg}
}

// reasonOf is the deployer's reason when it is a valid condition reason.
func reasonOf(r StageReport) string {
	if r.Reason == "" || !conditionReason.MatchString(r.Reason) {
		return v1alpha1.DeploymentFailedReason
	}
	return r.Reason
}

// newestReported is the position of the newest revision the stage knows a
// report of: its active revision, or any of its versions' revisions.
func (o *stageObserver) newestReported() (int, bool) {
	newest, known := 0, false
	consider := func(rev string) {
		if rev == "" {
			return
		}
		if pos, ok := o.position(rev); ok && (!known || pos > newest) {
			newest, known = pos, true
		}
	}
	consider(o.st.Status.ActiveRevision)
	for _, sv := range o.s.StageVersionsOf(o.obs.Landscape, o.obs.Name) {
		consider(sv.Status.Revision)
	}
	return newest, known
}

func (o *stageObserver) position(rev string) (int, bool) {
	if rev == "" || o.obs.Position == nil {
		return 0, false
	}
	return o.obs.Position(rev)
}

// setOwnUsage points the stage's usage for reason at its version of
// vector; no vector, no usage.
func (o *stageObserver) setOwnUsage(reason, vector string) {
	name := OwnUsageName(o.obs.Landscape, o.obs.Name, reason)
	if vector == "" {
		delete(o.s.Usages, name)
		return
	}
	svName := StageVersionName(o.obs.Landscape, o.obs.Name, vector)
	if o.s.StageVersions[svName] == nil {
		o.version(vector, nil, "")
	}
	u := o.s.Usages[name]
	if u != nil && u.Spec.StageVersionRef != nil && u.Spec.StageVersionRef.Name == svName && u.Spec.Reason == reason {
		return
	}
	if u == nil {
		u = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{v1alpha1.StageNameLabel: o.obs.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(),
				Kind: v1alpha1.StageKind, Name: o.obs.Name}}}}
	} else {
		u = u.DeepCopy() // the state's that the decision read, maybe
	}
	u.Spec = v1alpha1.StageVersionUsageSpec{Reason: reason, StageVersionRef: &v1alpha1.LocalObjectReference{Name: svName}}
	o.s.Usages[name] = u
	o.note("%s usage now holds StageVersion %s (vector %s)", reason, svName, vector)
}
