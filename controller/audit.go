package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/source"
)

// AuditEntry is one commit that changed a stage's overlay. A commit that no
// promotion made has an empty Promotion, so hand edits stand out.
type AuditEntry struct {
	Commit            string `json:"commit"`
	Stage             string `json:"stage"`
	Time              string `json:"time"`
	Author            string `json:"author"`
	Subject           string `json:"subject"`
	Promotion         string `json:"promotion"`
	Sequence          int64  `json:"sequence,omitempty"`
	Vector            string `json:"vector"`
	ApprovedBy        string `json:"approvedBy"`
	ApprovedAt        string `json:"approvedAt"`
	Signer            string `json:"signer,omitempty"`
	SignatureVerified bool   `json:"signatureVerified"`
	ApprovalVerified  bool   `json:"approvalVerified"`
	// PullRequest is the forge pull request whose review or merge approved
	// the promotion; ApprovedBy is then the forge user, in the word of the
	// forge rather than a signature.
	PullRequest string `json:"pullRequest,omitempty"`
}

// AuditInput is what Audit reads.
type AuditInput struct {
	Snapshot *source.Snapshot
	// Open returns the repository at url with branch fetched (the config
	// repository or a landscape's own).
	Open func(url, branch string) (*source.Repository, error)
	// StateRepo and StateBranch hold the approvals.
	StateRepo   *source.Repository
	StateBranch string
	// Trusted are extra keys whose signatures count, beyond each landscape's
	// spec.signers and the approvers of every config.
	Trusted []gitwriter.TrustedKey
	// Stage limits the audit to one stage (`name` or `landscape/name`).
	Stage string
	// Limit bounds the commits read per stage; 0 means 1000.
	Limit int
}

// Audit lists, newest first, every commit that changed each stage's overlay,
// with the promotion its trailers name, whether its signature verifies
// against a trusted key, and whether its Approved-by names an approver whose
// signed approval of that promotion is on the state branch.
func Audit(ctx context.Context, in AuditInput) ([]AuditEntry, error) {
	if in.Limit <= 0 {
		in.Limit = 1000
	}
	keys := sortedKeys(in.Snapshot.StageIndex)
	if in.Stage != "" {
		keys = matchingStages(keys, in.Stage)
		if len(keys) == 0 {
			return nil, fmt.Errorf("audit: no stage %q in %s (give `name` or `landscape/name`)", in.Stage, in.Snapshot.URL)
		}
	}
	approvals, err := newApprovalChecker(ctx, in)
	if err != nil {
		return nil, err
	}
	var all []AuditEntry
	for _, key := range keys {
		entries, err := auditStage(in, key, approvals)
		if err != nil {
			return nil, err
		}
		all = append(all, entries...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time > all[j].Time })
	return all, nil
}

func matchingStages(keys []string, want string) []string {
	var out []string
	for _, k := range keys {
		if k == want || strings.HasSuffix(k, "/"+want) {
			out = append(out, k)
		}
	}
	return out
}

func auditStage(in AuditInput, key string, approvals *approvalChecker) ([]AuditEntry, error) {
	ref := in.Snapshot.StageIndex[key]
	repo, err := in.Open(ref.URL, ref.Branch)
	if err != nil {
		return nil, err
	}
	tip := plumbing.NewHash(ref.Commit)
	if ref.Commit == "" {
		return nil, fmt.Errorf("audit stage %s: %s is not a Git repository", key, ref.URL)
	}
	verifier, err := gitwriter.NewVerifier(trustedSigners(in, ref.Landscape))
	if err != nil {
		return nil, fmt.Errorf("audit stage %s: trusted keys: %w", key, err)
	}
	prefix := strings.TrimSuffix(ref.Overlay, "/") + "/"
	iter, err := repo.Repo().Log(&git.LogOptions{
		From:       tip,
		Order:      git.LogOrderCommitterTime,
		PathFilter: func(p string) bool { return strings.HasPrefix(p, prefix) },
	})
	if err != nil {
		return nil, fmt.Errorf("audit stage %s: read history of %s: %w", key, ref.Overlay, err)
	}
	defer iter.Close()
	var entries []AuditEntry
	for len(entries) < in.Limit {
		c, err := iter.Next()
		if err != nil {
			break // io.EOF, or the end of what is fetched
		}
		entries = append(entries, auditEntry(key, c, verifier, approvals))
	}
	return entries, nil
}

func auditEntry(stage string, c *object.Commit, verifier *gitwriter.Verifier, approvals *approvalChecker) AuditEntry {
	subject, _, _ := strings.Cut(c.Message, "\n")
	e := AuditEntry{
		Commit: c.Hash.String(), Stage: stage, Subject: subject,
		Time:   c.Committer.When.UTC().Format(time.RFC3339),
		Author: fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
	}
	if signer, err := verifier.VerifyCommit(c); err == nil {
		e.Signer, e.SignatureVerified = signer, true
	}
	t, ok := gitwriter.ParseTrailers(c.Message)
	if !ok {
		return e
	}
	e.Promotion, e.Sequence, e.Vector, e.ApprovedBy = t.Promotion, t.Sequence, t.Vector, t.ApprovedBy
	if !t.ApprovedAt.IsZero() {
		e.ApprovedAt = t.ApprovedAt.UTC().Format(time.RFC3339)
	}
	if t.ApprovedBy != "" {
		e.ApprovalVerified = approvals.verified(t)
	}
	approvals.pullRequest(&e)
	return e
}

// pullRequest names the pull request that approved e's promotion. A commit
// merged by people (merge: forge) was signed before anyone reviewed it, so
// its trailers cannot name the reviewer: the promotion's recorded approval
// does, for as long as the state keeps the promotion.
func (a *approvalChecker) pullRequest(e *AuditEntry) {
	if a.state == nil || e.Promotion == "" {
		return
	}
	p := a.state.Promotions[e.Promotion]
	if p == nil || p.Status.PullRequest == nil || p.Status.Approval == nil {
		return
	}
	switch e.ApprovedBy {
	case "":
		e.ApprovedBy = p.Status.Approval.ApprovedBy
		e.ApprovedAt = p.Status.Approval.ApprovedAt.UTC().Format(time.RFC3339)
	case p.Status.Approval.ApprovedBy:
	default:
		return
	}
	e.PullRequest = p.Status.PullRequest.URL
}

// trustedSigners are the keys whose commit signatures audit accepts for a
// landscape: its spec.signers, every config's approvers, and extra keys.
func trustedSigners(in AuditInput, landscape string) []gitwriter.TrustedKey {
	var keys []gitwriter.TrustedKey
	seen := map[string]bool{}
	add := func(list []v1alpha1.Approver) {
		for _, a := range list {
			if !seen[a.PublicKey] {
				seen[a.PublicKey] = true
				keys = append(keys, gitwriter.TrustedKey{Name: a.Name, PublicKey: a.PublicKey})
			}
		}
	}
	if l := in.Snapshot.Landscapes[landscape]; l != nil {
		add(l.Spec.Signers)
	}
	for _, name := range sortedKeys(in.Snapshot.Configs) {
		if a := in.Snapshot.Configs[name].Spec.Approval; a != nil {
			add(a.Approvers)
		}
	}
	for _, k := range in.Trusted {
		if !seen[k.PublicKey] {
			seen[k.PublicKey] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// approvalChecker verifies the approval files on the state branch.
type approvalChecker struct {
	in    AuditInput
	tip   plumbing.Hash
	state *State
}

func newApprovalChecker(ctx context.Context, in AuditInput) (*approvalChecker, error) {
	if in.StateRepo == nil {
		return &approvalChecker{in: in}, nil
	}
	tip, _, state, err := ReadState(ctx, in.StateRepo, in.StateBranch)
	if err != nil && state == nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return &approvalChecker{in: in, tip: tip, state: state}, nil
}

// verified reports whether the promotion t names was approved by
// t.ApprovedBy with a signed approval of t.Vector that its config trusts.
func (a *approvalChecker) verified(t gitwriter.Trailers) bool {
	if a.state == nil || a.tip.IsZero() {
		return false
	}
	approval := a.state.Approvals[t.Promotion]
	if approval == nil {
		return false
	}
	config := strings.TrimSuffix(t.Promotion, fmt.Sprintf("-%d", t.Sequence))
	cfg := a.in.Snapshot.Configs[config]
	if cfg == nil || cfg.Spec.Approval == nil {
		return false
	}
	commit, _, err := addingCommit(a.in.StateRepo.Storer(), a.tip, ApprovalPath(t.Promotion))
	if err != nil {
		return false
	}
	p := &v1alpha1.VectorPromotion{}
	p.Name, p.Spec.Vector, p.Spec.VectorPromotionConfigName = t.Promotion, t.Vector, config
	v := judgeApproval(p, approval, commit, cfg.Spec.Approval.Approvers)
	return v.Approver != "" && v.Approver == t.ApprovedBy
}
