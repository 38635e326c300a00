package pass

import (
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// observeDeployments records each stage's StageVersions and what runs there
// (reconcilers.ObserveStage), then the usages' conditions, then deletes
// what no usage holds beyond maxRevisions: in that order, so the version a
// stage runs is referenced at every step.
func (d *Decision) observeDeployments(in Inputs, now time.Time, prune bool) {
	snap := in.Snapshot
	landed := landedCommits(d.State, in.Results)
	maxRevisions := map[string]int{}
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		st := d.State.Stages[key]
		if st == nil {
			continue
		}
		maxRevisions[key] = reconcilers.MaxRevisions(&st.Spec)
		obs := reconcilers.StageObservation{Landscape: ref.Landscape, Name: ref.Name,
			Vector: ref.Vector.Vector, Commit: ref.Commit, LandedCommit: landed[key+"@"+ref.Vector.Vector],
			Reports: in.Reports[key]}
		if r, ok := in.StageRenders[key]; ok {
			obs.Render = &r
		}
		if in.Positions != nil {
			obs.Position = func(rev string) (int, bool) { return in.Positions(key, rev) }
		}
		d.Transitions = append(d.Transitions, reconcilers.ObserveStage(d.State, obs, now)...)
	}
	for _, key := range keys.Sorted(in.Reports) {
		if _, ok := snap.StageIndex[key]; !ok {
			d.note("stage %s: %d deployer reports ignored: the stage does not resolve", key, len(in.Reports[key]))
		}
	}
	declared := snap.Usages
	if declared == nil {
		declared = map[string]*v1alpha1.StageVersionUsage{}
	}
	d.Transitions = append(d.Transitions, reconcilers.ReconcileUsages(d.State, declared, prune, now)...)
	d.Transitions = append(d.Transitions, reconcilers.CollectGarbage(d.State, maxRevisions, prune)...)
}

// landedCommits are the commits of promotions that succeeded since the last
// state commit, by `<stage key>@<vector>`: the StageVersion of that vector
// records the promotion's own commit.
func landedCommits(state *reconcilers.State, results map[string]reconcilers.Result) map[string]string {
	out := map[string]string{}
	for _, name := range keys.Sorted(results) {
		r := results[name]
		p := state.Promotions[name]
		if p == nil || r.Outcome != reconcilers.OutcomeSucceeded || r.Commit == "" {
			continue
		}
		t := p.Spec.Target
		out[source.StageKey(t.Landscape, t.Name)+"@"+p.Spec.Vector] = r.Commit
	}
	return out
}

// NeedsRender lists the stages (by StageKey) whose overlay names a vector
// the state has no StageVersion of: the shell renders those overlays for
// Inputs.StageRenders, and only those.
func NeedsRender(snap *source.Snapshot, state *reconcilers.State) []string {
	var out []string
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		if ref.Vector.Vector == "" {
			continue
		}
		if _, ok := state.StageVersions[reconcilers.StageVersionName(ref.Landscape, ref.Name, ref.Vector.Vector)]; !ok {
			out = append(out, key)
		}
	}
	return out
}
