package pass

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// activeVectorOf is the vector a stage runs for the safe-upgrade rules:
// the one its deployer reported active, or, until it reports one (or
// without spec.deployment), the one its overlay names. It is the one
// place that choice is made.
func activeVectorOf(st *v1alpha1.StageStatus) string {
	if st == nil {
		return ""
	}
	if st.ActiveVector != "" {
		return st.ActiveVector
	}
	return st.Vector
}

// stonesByTemplate are every template's stepping stones by component, over
// its base chain; a template whose chain does not resolve has none here
// (its assembly fails and says why).
func stonesByTemplate(snap *source.Snapshot) map[string]map[string][]string {
	templates := make(map[string]v1alpha1.VectorTemplate, len(snap.Templates))
	for name, t := range snap.Templates {
		templates[name] = *t
	}
	out := map[string]map[string][]string{}
	for name := range templates {
		components, err := reconcilers.ResolveComponents(name, templates)
		if err != nil {
			continue
		}
		for _, c := range components {
			if len(c.SteppingStones) == 0 {
				continue
			}
			if out[name] == nil {
				out[name] = map[string][]string{}
			}
			out[name][c.Name] = c.SteppingStones
		}
	}
	return out
}

// upgradeInput is what the safe-upgrade rules know about cfg's target.
func (d *Decision) upgradeInput(cfg *v1alpha1.VectorPromotionConfig, stones map[string]map[string][]string, holds map[string]*reconcilers.StageHold,
	kept map[string]map[string]bool) reconcilers.UpgradeInput {
	t := cfg.Spec.Target
	key := reconcilers.StageKey(t.Landscape, t.Name)
	u := reconcilers.UpgradeInput{Stones: stones, Vectors: d.State.Vectors, Hold: holds[key], Kept: kept[key]}
	if u.Kept == nil {
		u.Kept = map[string]bool{}
	}
	if st := d.State.Stages[key]; st != nil {
		u.ActiveVector = activeVectorOf(&st.Status)
		if v := d.State.Vectors[u.ActiveVector]; v != nil {
			u.Active = v.Spec.Components
		}
	}
	return u
}

// keptVectors are the vectors each stage (by key) keeps a StageVersion of:
// what a rollback may go back to. Indexed once per decision, not once per
// config, which was quadratic: 0.36 s of each Decide at 10,000 stages.
func keptVectors(stageVersions map[string]*v1alpha1.StageVersion) map[string]map[string]bool {
	kept := map[string]map[string]bool{}
	for _, sv := range stageVersions {
		key := reconcilers.StageKey(sv.Spec.Landscape, sv.Spec.Stage)
		if kept[key] == nil {
			kept[key] = map[string]bool{}
		}
		kept[key][sv.Spec.Vector] = true
	}
	return kept
}

// requestOptions are what a promotion request asks for beyond the source's
// current vector.
func requestOptions(r reconcilers.PromotionRequest) reconcilers.PromoteOptions {
	return reconcilers.PromoteOptions{Vector: r.PromoteVector, Forced: r.Force, Rollback: r.Rollback}
}

// HeldCondition is True on a stage's status while it is held; its reason
// is StageHeld, or ManualChange for a hold vectorflow set itself.
const HeldCondition = "Held"

// markHeld records each stage's hold as its Held condition, so `get
// stages` shows it without judging signatures again.
func (d *Decision) markHeld(snap *source.Snapshot, holds map[string]*reconcilers.StageHold, now time.Time) {
	var scratch []metav1.Condition
	for _, key := range keys.SortedLike(d.State.Stages, snap.ResolvedStageKeys()) {
		st := d.State.Stages[key]
		h := holds[key]
		if h == nil {
			if meta.FindStatusCondition(st.Status.Conditions, HeldCondition) != nil {
				meta.RemoveStatusCondition(&d.stage(key).Status.Conditions, HeldCondition)
				d.note("stage %s: released", key)
			}
			continue
		}
		reason := v1alpha1.StageHeldReason
		if strings.HasPrefix(h.Reason, v1alpha1.ManualChangeReason) {
			reason = v1alpha1.ManualChangeReason
		}
		scratch = append(scratch[:0], st.Status.Conditions...)
		if reconcilers.SetCondition(&scratch, metav1.Condition{Type: HeldCondition, Status: metav1.ConditionTrue,
			Reason: reason, Message: h.String()}, now) {
			d.stage(key).Status.Conditions = slices.Clone(scratch)
			d.note("%s", h.String())
		}
	}
}

// holdForRollback holds the target stage of a rollback request's
// promotion, so automatic promotions do not roll it forward again.
func (d *Decision) holdForRollback(snap *source.Snapshot, r RequestVerdict, promotion string, now time.Time) {
	cfg := snap.Configs[r.Request.Config]
	if cfg == nil {
		return
	}
	t := cfg.Spec.Target
	stage := reconcilers.StageKey(t.Landscape, t.Name)
	why := fmt.Sprintf("rollback to %s by promotion %s, requested by %s", r.Request.PromoteVector, promotion, r.Requester)
	if r.Request.Reason != "" {
		why += ": " + r.Request.Reason
	}
	d.addHold(reconcilers.HoldRecord{Stage: stage, By: r.Requester, Reason: why}, promotion, now)
	d.approveRollback(cfg, r, promotion, now)
}

// approveRollback takes the rollback request's signature as the
// promotion's approval where its config requires one: the requester signed
// the request naming the vector, and is one of the config's approvers (the
// controller checked the signature against their keys). Where the config
// needs several approvals, the others are still needed.
func (d *Decision) approveRollback(cfg *v1alpha1.VectorPromotionConfig, r RequestVerdict, promotion string, now time.Time) {
	p := d.State.Promotions[promotion]
	a := cfg.Spec.Approval
	if p == nil || !p.Spec.RequireApproval || a == nil || a.RequiredApprovals() != 1 ||
		!slices.ContainsFunc(a.Approvers, func(ap v1alpha1.Approver) bool { return ap.Name == r.Requester }) {
		return
	}
	res, err := reconcilers.Approve(*p, r.Requester, now)
	if err != nil || !res.Changed {
		return
	}
	approved := res.Promotion
	d.State.Promotions[promotion] = &approved
	if res.Transition != nil {
		d.Transitions = append(d.Transitions, res.Transition.String())
	}
}

// holdManualChanges holds a stage whose overlay a commit vectorflow did not
// make changed after an automatic config promoted into it (the config's
// Drift says TargetChangedByHand): a person's hand edit or revert stays
// until someone releases the stage, even when the source moves on. The
// same change holds once: after a release it is not held again.
func (d *Decision) holdManualChanges(snap *source.Snapshot, records []reconcilers.HoldVerdict, holds map[string]*reconcilers.StageHold, now time.Time) {
	for _, name := range snap.ConfigNames() {
		st := d.State.Configs[name]
		if st == nil {
			continue
		}
		c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.DriftCondition)
		if c == nil || c.Reason != v1alpha1.TargetChangedByHandReason {
			continue
		}
		t := snap.Configs[name].Spec.Target
		stage := reconcilers.StageKey(t.Landscape, t.Name)
		if holds[stage] != nil {
			continue
		}
		ref := snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
		about := manualChangeAbout(name, st.Status.TargetVector, lastSuccess(st.Status.PromotionHistory))
		if slices.ContainsFunc(records, func(v reconcilers.HoldVerdict) bool {
			return v.Signer != "" && v.Record.Stage == stage && v.Record.About == about
		}) {
			continue
		}
		d.addHold(reconcilers.HoldRecord{Stage: stage, By: "vectorflow", Commit: ref.Commit, About: about,
			Reason: fmt.Sprintf("%s: the overlay of stage %s was changed by a commit vectorflow did not make (it names %s as of commit %s); "+
				"automatic promotions wait so as not to undo it", v1alpha1.ManualChangeReason, stage,
				reconcilers.VectorOrNone(st.Status.TargetVector), v1alpha1.ShortCommit(ref.Commit))}, about, now)
	}
}

func manualChangeAbout(config, targetVector, lastPromotion string) string {
	return v1alpha1.ManualChangeReason + " " + config + " " + lastPromotion + " " + targetVector
}

func lastSuccess(history []v1alpha1.PromotionRecord) string {
	for _, r := range history {
		if r.State == v1alpha1.PromotionSucceeded {
			return r.Promotion
		}
	}
	return ""
}

func (d *Decision) addHold(rec reconcilers.HoldRecord, about string, now time.Time) {
	at := reconcilers.Stamp(now)
	rec.APIVersion, rec.Kind, rec.At = v1alpha1.GroupVersion.String(), reconcilers.HoldKind, at
	if d.NewHolds == nil {
		d.NewHolds = map[string]reconcilers.HoldRecord{}
	}
	d.NewHolds[reconcilers.HoldPath(rec.Stage, reconcilers.HoldID(now, rec.Stage+" "+about))] = rec
	d.note("stage %s: held by %s: %s", rec.Stage, rec.By, rec.Reason)
}
