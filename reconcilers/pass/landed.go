package pass

import (
	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// PromotionHistory is what LandedResults needs of a target branch's
// promotion history; the shell reads it from git.
type PromotionHistory interface {
	// Landed are the commits of promotion on the branch, newest first.
	Landed(promotion string) []LandedCommit
}

// LandedCommit is one commit of a promotion on its target branch: the
// vector its trailers name.
type LandedCommit struct {
	Vector string
	Commit string
}

// LandedResults adds to results (without changing it) a success for every
// InProgress promotion without a result whose commit is in its target's
// history, with its vector, while the overlay names that vector: a write
// whose answer was lost, or whose result a crash lost, is seen as done
// instead of being retired when the deadline passes. renders checks that
// the target's overlay, as the snapshot read it, runs the promotion's
// vector: a commit carrying its trailers and its vector annotation may be
// anyone's, so the annotation alone does not make it Succeeded.
func LandedResults(snap *source.Snapshot, state *reconcilers.State, histories map[string]PromotionHistory, results map[string]reconcilers.Result,
	renders func(p *v1alpha1.VectorPromotion, ref source.StageRef) error) map[string]reconcilers.Result {
	var out map[string]reconcilers.Result
	for _, name := range keys.Sorted(state.Promotions) {
		p := state.Promotions[name]
		if _, known := results[name]; known || reconcilers.DeriveState(p) != v1alpha1.PromotionInProgress {
			continue
		}
		h, cfg := histories[p.Spec.VectorPromotionConfigName], snap.Configs[p.Spec.VectorPromotionConfigName]
		if h == nil || cfg == nil || cfg.Spec.Target != p.Spec.Target {
			continue // the history read is of another target
		}
		t := p.Spec.Target
		ref := snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
		if ref.Vector.Vector != p.Spec.Vector || renders(p, ref) != nil {
			continue
		}
		for _, e := range h.Landed(name) {
			if e.Vector != p.Spec.Vector {
				continue
			}
			if out == nil {
				out = make(map[string]reconcilers.Result, len(results)+1)
				for k, v := range results {
					out[k] = v
				}
			}
			out[name] = reconcilers.Result{Outcome: reconcilers.OutcomeSucceeded, Commit: e.Commit}
			break
		}
	}
	if out == nil {
		return results
	}
	return out
}
