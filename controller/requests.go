package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// judgeRequests checks every file under requests/ at tip: it must be a
// PromotionRequest for the config its directory names, added in a commit
// signed by one of that config's approvers or by a trusted state signer (the
// operator of an automatic config, which has no approvers, may ask too).
func (c *Controller) judgeRequests(ctx context.Context, snap *source.Snapshot, files map[string][]byte, tip plumbing.Hash) ([]pass.RequestVerdict, error) {
	paths := filesUnder(files, reconcilers.RequestsDir)
	if len(paths) == 0 {
		return nil, nil
	}
	s, err := c.stateHistory(ctx, tip)
	if err != nil {
		return nil, err
	}
	verdicts := make([]pass.RequestVerdict, 0, len(paths))
	for _, p := range paths {
		v, err := judgeRequest(s, snap, tip, p, files[p], c.trust.signers)
		if err != nil {
			return nil, err
		}
		verdicts = append(verdicts, v)
	}
	return verdicts, nil
}

func judgeRequest(s storer.EncodedObjectStorer, snap *source.Snapshot, tip plumbing.Hash, file string, data []byte, stateSigners *gitwriter.Verifier) (pass.RequestVerdict, error) {
	v := pass.RequestVerdict{Path: file}
	dir := strings.TrimPrefix(path.Dir(file), reconcilers.RequestsDir+"/")
	if path.Ext(file) != ".yaml" || strings.Contains(dir, "/") || dir == reconcilers.RequestsDir {
		v.Refusal = "not a promotion request: requests live in requests/<config>/<id>.yaml"
		return v, nil
	}
	if err := yaml.UnmarshalStrict(data, &v.Request); err != nil || v.Request.Kind != reconcilers.PromotionRequestKind {
		v.Refusal = fmt.Sprintf("not a %s: %v", reconcilers.PromotionRequestKind, err)
		return v, nil
	}
	if v.Request.Config != dir {
		v.Refusal = fmt.Sprintf("it names config %q but lives in the directory of %s", v.Request.Config, dir)
		return v, nil
	}
	cfg := snap.Configs[dir]
	if cfg == nil {
		v.Refusal = fmt.Sprintf("VectorPromotionConfig %s does not exist in %s", dir, snap.URL)
		return v, nil
	}
	commit, err := commitThatAdded(s, tip, file)
	if err != nil {
		return v, err
	}
	if who, err := stateSigners.VerifyCommit(commit); err == nil {
		v.Requester = who
		return v, nil
	}
	verifier, err := approversVerifier(cfg)
	if err != nil {
		v.Refusal = fmt.Sprintf("the request commit %s is not signed by a trusted state signer, and %v", v1alpha1.ShortCommit(commit.Hash.String()), err)
		return v, nil
	}
	who, err := verifier.VerifyCommit(commit)
	switch {
	case errors.Is(err, gitwriter.ErrUnsigned):
		v.Refusal = fmt.Sprintf("the request commit %s is not signed", v1alpha1.ShortCommit(commit.Hash.String()))
	case errors.Is(err, gitwriter.ErrUnknownSigner):
		v.Refusal = fmt.Sprintf("the request commit %s is signed by a key that is not one of the approvers of %s", v1alpha1.ShortCommit(commit.Hash.String()), cfg.Name)
	case err != nil:
		v.Refusal = fmt.Sprintf("the request commit %s has a bad signature: %v", v1alpha1.ShortCommit(commit.Hash.String()), err)
	default:
		v.Requester = who
	}
	return v, nil
}

// approversVerifier trusts the approvers of cfg.
func approversVerifier(cfg *v1alpha1.VectorPromotionConfig) (*gitwriter.Verifier, error) {
	if cfg.Spec.Approval == nil || len(cfg.Spec.Approval.Approvers) == 0 {
		return nil, fmt.Errorf("VectorPromotionConfig %s lists no spec.approval.approvers, so only the controller's key (or a run --trust key) may request its promotions", cfg.Name)
	}
	keys := make([]gitwriter.TrustedKey, 0, len(cfg.Spec.Approval.Approvers))
	for _, ap := range cfg.Spec.Approval.Approvers {
		keys = append(keys, gitwriter.TrustedKey{Name: ap.Name, PublicKey: ap.PublicKey})
	}
	v, err := gitwriter.NewVerifier(keys)
	if err != nil {
		return nil, fmt.Errorf("VectorPromotionConfig %s: spec.approval.approvers: %w", cfg.Name, err)
	}
	return v, nil
}

// commitThatAdded finds the commit that gave file the content it has at
// tip: following first parents from tip, the first whose parent lacks it or
// holds other content. An untrusted commit that rewrote a request taints the
// branch, but a healing commit restores only what lies outside requests/, so
// the rewritten request must be the rewriter's word, not the first adder's.
func commitThatAdded(s storer.EncodedObjectStorer, tip plumbing.Hash, file string) (*object.Commit, error) {
	c, err := object.GetCommit(s, tip)
	if err != nil {
		return nil, fmt.Errorf("read state commit %s: %w", tip, err)
	}
	blob, err := blobAt(c, file)
	if err != nil {
		return nil, err
	}
	for c.NumParents() > 0 {
		parent, err := c.Parent(0)
		if err != nil {
			return nil, fmt.Errorf("read the history of %s: %w", file, err)
		}
		before, err := blobAt(parent, file)
		if err != nil {
			return nil, err
		}
		if before != blob {
			break
		}
		c = parent
	}
	return c, nil
}

// ApproverOf names the approver of cfg that signer's key is, by signing a
// probe commit and verifying it as the controller will verify the request:
// `promote` refuses locally what the controller would drop.
func ApproverOf(cfg *v1alpha1.VectorPromotionConfig, signer interface {
	Sign(io.Reader) ([]byte, error)
}) (string, error) {
	verifier, err := approversVerifier(cfg)
	if err != nil {
		return "", err
	}
	who := object.Signature{Name: "vectorflow", Email: "probe@vectorflow.dev", When: time.Now()}
	probe := &object.Commit{Author: who, Committer: who, Message: "which approver signs this?\n",
		TreeHash: plumbing.ZeroHash}
	obj := &plumbing.MemoryObject{}
	if err := probe.EncodeWithoutSignature(obj); err != nil {
		return "", fmt.Errorf("sign a probe: %w", err)
	}
	r, err := obj.Reader()
	if err != nil {
		return "", fmt.Errorf("sign a probe: %w", err)
	}
	sig, err := signer.Sign(r)
	if err != nil {
		return "", fmt.Errorf("sign a probe: %w", err)
	}
	probe.PGPSignature = string(sig)
	name, err := verifier.VerifyCommit(probe)
	if err != nil {
		return "", fmt.Errorf("your signing key is not one of the approvers of %s (spec.approval.approvers): %w", cfg.Name, err)
	}
	return name, nil
}

// filesUnder are the state files under dir, sorted: the records of one
// kind that people add (requests/, holds/).
func filesUnder(files map[string][]byte, dir string) []string {
	// Filtered before sorted: the state branch holds tens of thousands of
	// files, and few are under dir.
	var paths []string
	for p := range files {
		if strings.HasPrefix(p, dir+"/") {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}
