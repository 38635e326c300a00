package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// maxApprovalHistory bounds how far back the commit that added an approval
// file is looked for.
const maxApprovalHistory = 5000

type cachedVerdict struct {
	key     string
	verdict ApprovalVerdict
}

// verifyApprovals checks every approval file of a promotion that is still
// waiting: the commit that wrote the file must be signed by one of the
// approvers its config trusts, and the file must name the promotion's
// snapshotted vector. Verdicts are cached by file content and trusted keys.
func (c *Controller) verifyApprovals(ctx context.Context, snap *source.Snapshot, state *State, tip plumbing.Hash) (map[string]ApprovalVerdict, error) {
	pending := map[string]*Approval{}
	for name, a := range state.Approvals {
		p := state.Promotions[name]
		if p == nil || p.Status.Approval != nil || reconcilers.IsTerminal(reconcilers.DeriveState(p)) {
			continue
		}
		pending[name] = a
	}
	if len(pending) == 0 {
		return nil, nil
	}
	if _, err := c.stateHistory(ctx, tip); err != nil {
		return nil, err
	}
	verdicts := map[string]ApprovalVerdict{}
	for name, a := range pending {
		p := state.Promotions[name]
		cfg := snap.Configs[p.Spec.VectorPromotionConfigName]
		if cfg == nil {
			verdicts[name] = ApprovalVerdict{Refusal: fmt.Sprintf("VectorPromotionConfig %s does not exist, so no approver is trusted", p.Spec.VectorPromotionConfigName)}
			continue
		}
		v, err := c.verdict(p, cfg, a, tip)
		if err != nil {
			return nil, err
		}
		verdicts[name] = v
	}
	return verdicts, nil
}

func (c *Controller) verdict(p *v1alpha1.VectorPromotion, cfg *v1alpha1.VectorPromotionConfig, a *Approval, tip plumbing.Hash) (ApprovalVerdict, error) {
	var approvers []v1alpha1.Approver
	if cfg.Spec.Approval != nil {
		approvers = cfg.Spec.Approval.Approvers
	}
	file := ApprovalPath(p.Name)
	commit, blob, err := addingCommit(c.stateRepo.Storer(), tip, file)
	if err != nil {
		return ApprovalVerdict{}, err
	}
	key := verdictKey(blob, p.Spec.Vector, approvers)
	if cached, ok := c.verdicts[p.Name]; ok && cached.key == key {
		return cached.verdict, nil
	}
	v := judgeApproval(p, a, commit, approvers)
	c.verdicts[p.Name] = cachedVerdict{key: key, verdict: v}
	return v, nil
}

// judgeApproval decides whether a signed approval counts.
func judgeApproval(p *v1alpha1.VectorPromotion, a *Approval, commit *object.Commit, approvers []v1alpha1.Approver) ApprovalVerdict {
	if a.Vector != p.Spec.Vector {
		return ApprovalVerdict{Refusal: fmt.Sprintf("the approval names vector %s but %s promotes %s; approve again", a.Vector, p.Name, p.Spec.Vector)}
	}
	if len(approvers) == 0 {
		return ApprovalVerdict{Refusal: fmt.Sprintf("VectorPromotionConfig %s lists no spec.approval.approvers", p.Spec.VectorPromotionConfigName)}
	}
	keys := make([]gitwriter.TrustedKey, 0, len(approvers))
	for _, ap := range approvers {
		keys = append(keys, gitwriter.TrustedKey{Name: ap.Name, PublicKey: ap.PublicKey})
	}
	verifier, err := gitwriter.NewVerifier(keys)
	if err != nil {
		return ApprovalVerdict{Refusal: fmt.Sprintf("VectorPromotionConfig %s: spec.approval.approvers: %v", p.Spec.VectorPromotionConfigName, err)}
	}
	signer, err := verifier.VerifyCommit(commit)
	switch {
	case errors.Is(err, gitwriter.ErrUnsigned):
		return ApprovalVerdict{Refusal: fmt.Sprintf("the approval commit %s is not signed", short(commit.Hash))}
	case errors.Is(err, gitwriter.ErrUnknownSigner):
		return ApprovalVerdict{Refusal: fmt.Sprintf("the approval commit %s is signed by a key that is not one of the approvers of %s", short(commit.Hash), p.Spec.VectorPromotionConfigName)}
	case err != nil:
		return ApprovalVerdict{Refusal: fmt.Sprintf("the approval commit %s has a bad signature: %v", short(commit.Hash), err)}
	}
	return ApprovalVerdict{Approver: signer, At: commit.Committer.When}
}

// addingCommit finds the commit that gave file its current content: walking
// first parents from tip, the oldest commit in the run where the file has
// the tip's content.
func addingCommit(s storer.EncodedObjectStorer, tip plumbing.Hash, file string) (*object.Commit, plumbing.Hash, error) {
	c, err := object.GetCommit(s, tip)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("read state commit %s: %w", tip, err)
	}
	want, err := blobAt(c, file)
	if err != nil || want.IsZero() {
		return nil, plumbing.ZeroHash, fmt.Errorf("approval file %s is not in state commit %s", file, short(tip))
	}
	adding := c
	for i := 0; i < maxApprovalHistory && c.NumParents() > 0; i++ {
		parent, err := c.Parent(0)
		if err != nil {
			return nil, plumbing.ZeroHash, fmt.Errorf("read history of %s: %w", file, err)
		}
		h, err := blobAt(parent, file)
		if err != nil {
			return nil, plumbing.ZeroHash, err
		}
		if h != want {
			break
		}
		adding, c = parent, parent
	}
	return adding, want, nil
}

func blobAt(c *object.Commit, file string) (plumbing.Hash, error) {
	tree, err := c.Tree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read tree of %s: %w", c.Hash, err)
	}
	e, err := tree.FindEntry(file)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s at %s: %w", file, c.Hash, err)
	}
	return e.Hash, nil
}

func verdictKey(blob plumbing.Hash, vector string, approvers []v1alpha1.Approver) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", blob, vector)
	for _, a := range approvers {
		fmt.Fprintf(h, "%s\x00%s\x00", a.Name, a.PublicKey)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func short(h plumbing.Hash) string { return h.String()[:12] }
