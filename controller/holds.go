package controller

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-git/go-git/v5/plumbing/object"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// judgeHolds checks every record under holds/ at tip: a Hold or Release of
// the stage its directory names, added in a commit signed by a trusted
// state signer (the controller) or by an approver of a config whose target
// is that stage. CurrentHolds (in the core) makes the holds of them.
func (c *Controller) judgeHolds(ctx context.Context, snap *source.Snapshot, files map[string][]byte, tip plumbing.Hash) ([]reconcilers.HoldVerdict, error) {
	paths := filesUnder(files, reconcilers.HoldsDir)
	if len(paths) == 0 {
		return nil, nil
	}
	s, err := c.stateHistory(ctx, tip)
	if err != nil {
		return nil, err
	}
	return JudgeHolds(s, snap, tip, files, paths, c.trust.signers)
}

// JudgeHolds judges the hold records at paths; `get stages` and the
// controller share it.
func JudgeHolds(s storer.EncodedObjectStorer, snap *source.Snapshot, tip plumbing.Hash, files map[string][]byte, paths []string,
	stateSigners *gitwriter.Verifier) ([]reconcilers.HoldVerdict, error) {
	out := make([]reconcilers.HoldVerdict, 0, len(paths))
	for _, p := range paths {
		v, err := judgeHold(s, snap, tip, p, files[p], stateSigners)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, setDepths(s, tip, out)
}

// setDepths sets each verdict's Depth: its commit's distance from tip along
// the first parents, walking only as far as the oldest of them.
func setDepths(s storer.EncodedObjectStorer, tip plumbing.Hash, verdicts []reconcilers.HoldVerdict) error {
	want := map[string]bool{}
	for _, v := range verdicts {
		if v.Commit != "" {
			want[v.Commit] = true
		}
	}
	depth := map[string]int{}
	for h, d := tip, 0; len(depth) < len(want) && !h.IsZero(); d++ {
		// A commit the store lacks fails the walk: stopping there would
		// leave the older records at depth 0, the newest.
		c, err := object.GetCommit(s, h)
		if err != nil {
			return fmt.Errorf("read state commit %s: %w", h, err)
		}
		if want[h.String()] {
			depth[h.String()] = d
		}
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	for i := range verdicts {
		if d, ok := depth[verdicts[i].Commit]; ok {
			verdicts[i].Depth = d
		}
	}
	return nil
}

func judgeHold(s storer.EncodedObjectStorer, snap *source.Snapshot, tip plumbing.Hash, file string, data []byte, stateSigners *gitwriter.Verifier) (reconcilers.HoldVerdict, error) {
	v := reconcilers.HoldVerdict{Path: file}
	stage, ok := reconcilers.HoldStage(file)
	if !ok {
		v.Refusal = "not a hold record: they live in holds/<landscape>/<stage>/<id>.yaml"
		return v, nil
	}
	if err := yaml.UnmarshalStrict(data, &v.Record); err != nil ||
		(v.Record.Kind != reconcilers.HoldKind && v.Record.Kind != reconcilers.ReleaseKind) {
		v.Refusal = fmt.Sprintf("not a %s or %s record: %v", reconcilers.HoldKind, reconcilers.ReleaseKind, err)
		return v, nil
	}
	if v.Record.Stage != stage {
		v.Refusal = fmt.Sprintf("it names stage %q but lives in the directory of %s", v.Record.Stage, stage)
		return v, nil
	}
	commit, err := commitThatAdded(s, tip, file)
	if err != nil {
		return v, err
	}
	v.Commit = commit.Hash.String()
	if who, err := stateSigners.VerifyCommit(commit); err == nil {
		v.Signer = who
		return v, nil
	}
	configs := configsTargeting(snap, stage)
	if len(configs) == 0 {
		v.Refusal = fmt.Sprintf("no VectorPromotionConfig targets stage %s, so only the controller's key may hold it", stage)
		return v, nil
	}
	var refusals []string
	for _, cfg := range configs {
		verifier, err := approversVerifier(cfg)
		if err != nil {
			refusals = append(refusals, err.Error())
			continue
		}
		who, err := verifier.VerifyCommit(commit)
		switch {
		case err == nil:
			v.Signer = who
			return v, nil
		case errors.Is(err, gitwriter.ErrUnsigned):
			v.Refusal = fmt.Sprintf("the hold commit %s is not signed", v1alpha1.ShortCommit(v.Commit))
			return v, nil
		default:
			refusals = append(refusals, fmt.Sprintf("not signed by an approver of %s", cfg.Name))
		}
	}
	v.Refusal = fmt.Sprintf("the hold commit %s: %s", v1alpha1.ShortCommit(v.Commit), strings.Join(refusals, "; "))
	return v, nil
}

// configsTargeting are the configs whose target is stage, by name.
func configsTargeting(snap *source.Snapshot, stage string) []*v1alpha1.VectorPromotionConfig {
	var out []*v1alpha1.VectorPromotionConfig
	for _, name := range snap.ConfigNames() {
		t := snap.Configs[name].Spec.Target
		if reconcilers.StageKey(t.Landscape, t.Name) == stage {
			out = append(out, snap.Configs[name])
		}
	}
	return out
}

// holdFiles are the decision's new hold records as state files.
func holdFiles(holds map[string]reconcilers.HoldRecord) (map[string][]byte, error) {
	out := make(map[string][]byte, len(holds))
	for _, p := range keys.Sorted(holds) {
		b, err := yaml.Marshal(holds[p])
		if err != nil {
			return nil, fmt.Errorf("encode hold record %s: %w", p, err)
		}
		out[p] = b
	}
	return out, nil
}
