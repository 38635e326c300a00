package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
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
	for _, name := range snap.ConfigNames() {
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

// landedHistories gives the core each config's target history, read
// lazily: only the promotions it asks about are looked up.
func landedHistories(histories map[string]*gitwriter.History) map[string]pass.PromotionHistory {
	out := make(map[string]pass.PromotionHistory, len(histories))
	for name, h := range histories {
		if h != nil {
			out[name] = promotionHistory{h}
		}
	}
	return out
}

// promotionHistory is a target branch's history as pass.LandedResults reads it.
type promotionHistory struct{ h *gitwriter.History }

func (p promotionHistory) Landed(promotion string) []pass.LandedCommit {
	entries := p.h.Commits(promotion)
	out := make([]pass.LandedCommit, 0, len(entries))
	for _, e := range entries {
		out = append(out, pass.LandedCommit{Vector: e.Vector, Commit: e.Commit.String()})
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
