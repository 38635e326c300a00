package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TargetSequences reads, for every config whose target stage resolves in
// the snapshot, the highest sequence of that config its target branch's
// history holds, so that new promotions continue after it however the state
// branch was reset.
func TargetSequences(ctx context.Context, w *gitwriter.Writer, snap *source.Snapshot, remote func(url string) gitwriter.Remote) (map[string]int64, error) {
	histories, err := targetHistories(ctx, w, snap, remote)
	if err != nil {
		return nil, err
	}
	return sequencesOf(snap, histories), nil
}

// sequencesOf is the highest sequence of each config into its target that
// the target's history holds.
func sequencesOf(snap *source.Snapshot, histories map[string]*gitwriter.History) map[string]int64 {
	out := map[string]int64{}
	for name, h := range histories {
		if seq := h.Sequence(name, snap.Configs[name].Spec.Target.Ref()); seq > 0 {
			out[name] = seq
		}
	}
	return out
}

// targetHistories reads the promotion history of each config's target
// branch, by config name. Each branch is read once, at least as far as the
// commit the snapshot saw; the writer keeps the index, so a branch that did
// not change costs no fetch and no walk.
func targetHistories(ctx context.Context, w *gitwriter.Writer, snap *source.Snapshot, remote func(url string) gitwriter.Remote) (map[string]*gitwriter.History, error) {
	type branch struct{ url, name string }
	byBranch := map[branch]*gitwriter.History{}
	out := map[string]*gitwriter.History{}
	for _, name := range sortedKeys(snap.Configs) {
		t := snap.Configs[name].Spec.Target
		ref, ok := snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
		if !ok || ref.Branch == "" {
			continue // unresolved (the config is not Ready) or not a git repository
		}
		b := branch{ref.URL, ref.Branch}
		h, ok := byBranch[b]
		if !ok {
			tip := plumbing.ZeroHash
			if plumbing.IsHash(ref.Commit) {
				tip = plumbing.NewHash(ref.Commit)
			}
			var err error
			h, err = w.History(ctx, gitwriter.Target{Remote: remote(ref.URL), Branch: ref.Branch}, tip)
			if err != nil {
				return nil, fmt.Errorf("read the promotion history of the target of VectorPromotionConfig %s (stage %s/%s): %w",
					name, t.Landscape, t.Name, err)
			}
			byBranch[b] = h
		}
		out[name] = h
	}
	return out, nil
}

// landedResults adds to results (without changing it) a success for every
// InProgress promotion without a result whose commit is in its target's
// history, with its vector, while the overlay names that vector: a write
// whose answer was lost, or whose result a crash lost, is seen as done
// instead of being retired when the deadline passes. renders checks that
// the target's overlay, as the snapshot read it, runs the promotion's
// vector: a commit carrying its trailers and its vector annotation may be
// anyone's, so the annotation alone does not make it Succeeded.
func landedResults(snap *source.Snapshot, state *reconcilers.State, histories map[string]*gitwriter.History, results map[string]reconcilers.Result,
	renders func(p *v1alpha1.VectorPromotion, ref source.StageRef) error) map[string]reconcilers.Result {
	var out map[string]reconcilers.Result
	for _, name := range sortedKeys(state.Promotions) {
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
		for _, e := range h.Commits(name) {
			if e.Vector != p.Spec.Vector {
				continue
			}
			if out == nil {
				out = make(map[string]reconcilers.Result, len(results)+1)
				for k, v := range results {
					out[k] = v
				}
			}
			out[name] = reconcilers.Result{Outcome: reconcilers.OutcomeSucceeded, Commit: e.Commit.String()}
			break
		}
	}
	if out == nil {
		return results
	}
	return out
}

// WriterRemote pairs url with the credentials auth describes, derived the
// way the loader derives them, for the writer.
func WriterRemote(url string, auth source.Auth) gitwriter.Remote {
	r := gitwriter.Remote{URL: url}
	if repo, err := source.Open(url, auth); err == nil {
		r.Auth = repo.AuthMethod()
	}
	return r
}

// refusedByHistory is the result of a promotion the target's history
// refused (the ratchet): Superseded when a newer promotion of its config ran
// there, Failed when its name was used for another vector. Nothing was
// written either way.
func refusedByHistory(err error) (reconcilers.Result, bool) {
	var h *gitwriter.HistoryError
	if !errors.As(err, &h) {
		return reconcilers.Result{}, false
	}
	outcome := reconcilers.OutcomeFailed
	if h.Superseded() {
		outcome = reconcilers.OutcomeSuperseded
	}
	return reconcilers.Result{Outcome: outcome, Reason: h.Reason, Message: err.Error()}, true
}
