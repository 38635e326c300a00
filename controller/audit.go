package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// AuditEntry is one commit that changed a stage's overlay. A commit that no
// promotion made has an empty Promotion, so hand edits stand out.
type AuditEntry struct {
	Commit    string `json:"commit"`
	Stage     string `json:"stage"`
	Time      string `json:"time"`
	Author    string `json:"author"`
	Subject   string `json:"subject"`
	Promotion string `json:"promotion"`
	Sequence  int64  `json:"sequence,omitempty"`
	Vector    string `json:"vector"`
	// Forced and Rollback are the commit's Vectorflow-Forced and
	// Vectorflow-Rollback trailers: a promotion allowed down across a
	// stepping stone, and a vectorflow rollback.
	Forced   bool `json:"forced,omitempty"`
	Rollback bool `json:"rollback,omitempty"`
	// ApprovedBy names the approvers of the commit's Approved-by
	// trailers, comma-separated (Approvers lists them), and ApprovedAt
	// the time of the last.
	ApprovedBy        string   `json:"approvedBy"`
	ApprovedAt        string   `json:"approvedAt"`
	Approvers         []string `json:"approvers,omitempty"`
	Signer            string   `json:"signer,omitempty"`
	SignatureVerified bool     `json:"signatureVerified"`
	ApprovalVerified  bool     `json:"approvalVerified"`
	// PullRequest is the forge pull request whose review or merge approved
	// the promotion; ApprovedBy is then the forge user, in the word of the
	// forge rather than a signature.
	PullRequest string `json:"pullRequest,omitempty"`
	// Verified is true when the signature verifies and, for a promotion
	// that needs approval, the approval counts as the controller counts it;
	// otherwise Reason says why not (the Reason* constants).
	Verified bool   `json:"verified"`
	Reason   string `json:"reason,omitempty"`
}

// Why an audit entry is not verified.
const (
	ReasonUnsigned        = "unsigned"
	ReasonUnknownKey      = "unknown key"
	ReasonBadSignature    = "bad signature"
	ReasonApprovalMissing = "approval missing"
)

// AuditInput is what Audit reads.
type AuditInput struct {
	Snapshot *source.Snapshot
	// Open returns the repository at url with branch fetched (the config
	// repository or a landscape's own).
	Open func(url, branch string) (*source.Repository, error)
	// StateRepo and StateBranch hold the approvals.
	StateRepo   *source.Repository
	StateBranch string
	// StateTrust, when set, checks the state branch as the controller does:
	// a state that does not verify is read as of its last trusted commit, so
	// a forged promotion record or approval never shows as one.
	StateTrust *StateTrust
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
	stages := keys.Sorted(in.Snapshot.StageIndex)
	if in.Stage != "" {
		stages = matchingStages(stages, in.Stage)
		if len(stages) == 0 {
			return nil, fmt.Errorf("audit: no stage %q in %s (give `name` or `landscape/name`)", in.Stage, in.Snapshot.URL)
		}
	}
	approvals, err := newApprovalChecker(ctx, in)
	if err != nil {
		return nil, err
	}
	var all []AuditEntry
	for _, key := range stages {
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
	verifier, err := gitwriter.NewVerifier(trustedSigners(in, ref.Landscape, ref.Name))
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
		entries = append(entries, auditEntry(key, ref, c, verifier, approvals))
	}
	return entries, nil
}

func auditEntry(stage string, ref source.StageRef, c *object.Commit, verifier *gitwriter.Verifier, approvals *approvalChecker) AuditEntry {
	subject, _, _ := strings.Cut(c.Message, "\n")
	e := AuditEntry{
		Commit: c.Hash.String(), Stage: stage, Subject: subject,
		Time:   c.Committer.When.UTC().Format(time.RFC3339),
		Author: fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
	}
	signer, err := verifier.VerifyCommit(c)
	switch {
	case err == nil:
		e.Signer, e.SignatureVerified = signer, true
	case errors.Is(err, gitwriter.ErrUnsigned):
		e.Reason = ReasonUnsigned
	case errors.Is(err, gitwriter.ErrUnknownSigner):
		e.Reason = ReasonUnknownKey
	default:
		e.Reason = ReasonBadSignature
	}
	t, ok := gitwriter.ParseTrailers(c.Message)
	if ok {
		e.Promotion, e.Sequence, e.Vector = t.Promotion, t.Sequence, t.Vector
		e.Forced, e.Rollback = t.Forced, t.Rollback
		if len(t.Approvals) > 0 {
			e.Approvers = t.ApprovedBy()
			e.ApprovedBy = strings.Join(e.Approvers, ", ")
			if last := t.Approvals[len(t.Approvals)-1].At; !last.IsZero() {
				e.ApprovedAt = last.UTC().Format(time.RFC3339)
			}
			e.ApprovalVerified = approvals.verified(t, ref)
		}
		approvals.pullRequest(&e)
		if e.Reason == "" && !e.ApprovalVerified && e.PullRequest == "" &&
			(len(t.Approvals) > 0 || approvals.requiresApproval(t)) {
			e.Reason = ReasonApprovalMissing
		}
	}
	e.Verified = e.Reason == ""
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
		e.Approvers = []string{p.Status.Approval.ApprovedBy}
		e.ApprovedBy = p.Status.Approval.ApprovedBy
		e.ApprovedAt = p.Status.Approval.ApprovedAt.UTC().Format(time.RFC3339)
	case p.Status.Approval.ApprovedBy:
	default:
		return
	}
	e.PullRequest = p.Status.PullRequest.URL
}

// trustedSigners are the keys whose commit signatures audit accepts for a
// stage: its landscape's spec.signers, the approvers of the configs that
// promote into it, and extra keys. An approver of another config has no say
// over this stage, as the controller gives them none.
func trustedSigners(in AuditInput, landscape, stage string) []gitwriter.TrustedKey {
	var trusted []gitwriter.TrustedKey
	seen := map[string]bool{}
	add := func(list []v1alpha1.Approver) {
		for _, a := range list {
			if !seen[a.PublicKey] {
				seen[a.PublicKey] = true
				trusted = append(trusted, gitwriter.TrustedKey{Name: a.Name, PublicKey: a.PublicKey})
			}
		}
	}
	if l := in.Snapshot.Landscapes[landscape]; l != nil {
		add(l.Spec.Signers)
	}
	for _, name := range keys.Sorted(in.Snapshot.Configs) {
		cfg := in.Snapshot.Configs[name]
		if a := cfg.Spec.Approval; a != nil && targets(cfg, landscape, stage) {
			add(a.Approvers)
		}
	}
	for _, k := range in.Trusted {
		if !seen[k.PublicKey] {
			seen[k.PublicKey] = true
			trusted = append(trusted, k)
		}
	}
	return trusted
}

// targets reports whether cfg promotes into the stage.
func targets(cfg *v1alpha1.VectorPromotionConfig, landscape, stage string) bool {
	return cfg.Spec.Target.Landscape == landscape && cfg.Spec.Target.Name == stage
}

// approvalChecker counts the approval files on the state branch, with
// CountApprovals as the controller does.
type approvalChecker struct {
	in     AuditInput
	tip    plumbing.Hash
	state  *reconcilers.State
	files  map[string][]string
	known  []gitwriter.TrustedKey
	counts map[string]pass.ApprovalCount // by promotion and vector
	// evidence of every approval file, found on first use.
	evidence map[string][]ApprovalEvidence
}

func newApprovalChecker(ctx context.Context, in AuditInput) (*approvalChecker, error) {
	a := &approvalChecker{in: in, known: allApprovers(in.Snapshot), counts: map[string]pass.ApprovalCount{}}
	if in.StateRepo == nil {
		return a, nil
	}
	tip, _, state, err := ReadState(ctx, in.StateRepo, in.StateBranch)
	if err != nil && state == nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if in.StateTrust != nil && !tip.IsZero() {
		v, err := in.StateTrust.Verify(in.StateRepo.Storer(), tip, in.Snapshot.Configs)
		if err != nil {
			return nil, fmt.Errorf("audit: check the history of state branch %s: %w", in.StateBranch, err)
		}
		if !v.Trusted {
			tip, state = plumbing.NewHash(v.LastTrusted), reconcilers.NewState()
			if !tip.IsZero() {
				files, err := readCommitFiles(in.StateRepo, tip)
				if err != nil {
					return nil, fmt.Errorf("audit: %w", err)
				}
				state, _ = reconcilers.DecodeState(files)
			}
		}
	}
	a.tip, a.state = tip, state
	a.files, _ = ApprovalFiles(state.Approvals)
	return a, nil
}

// configOf is the config of the promotion the trailers name: the state's
// record while it keeps the promotion, else the name without its sequence.
func (a *approvalChecker) configOf(t gitwriter.Trailers) string {
	if a.state != nil {
		if p := a.state.Promotions[t.Promotion]; p != nil {
			return p.Spec.VectorPromotionConfigName
		}
	}
	return strings.TrimSuffix(t.Promotion, fmt.Sprintf("-%d", t.Sequence))
}

// requiresApproval reports whether the promotion the trailers name had to
// wait for an approval.
func (a *approvalChecker) requiresApproval(t gitwriter.Trailers) bool {
	if a.state != nil {
		if p := a.state.Promotions[t.Promotion]; p != nil {
			return p.Spec.RequireApproval
		}
	}
	cfg := a.in.Snapshot.Configs[a.configOf(t)]
	return cfg == nil || reconcilers.RequireApproval(&cfg.Spec)
}

// verified reports whether the approval files of the promotion t names
// count as the controller counts them, for t's vector, and every approver
// its Approved-by trailers name is among those counted. The promotion's
// config must promote into the stage the commit changed: an approval of a
// promotion into another stage says nothing about this one.
func (a *approvalChecker) verified(t gitwriter.Trailers, stage source.StageRef) bool {
	if a.state == nil || a.tip.IsZero() {
		return false
	}
	if cfg := a.in.Snapshot.Configs[a.configOf(t)]; cfg == nil || !targets(cfg, stage.Landscape, stage.Name) {
		return false
	}
	if a.evidence == nil {
		// One walk finds the evidence of every approval file, however many
		// promotions the audited commits name.
		evidence, err := approvalEvidence(a.in.StateRepo.Storer(), a.tip, a.state.Approvals, a.files, nil)
		if err != nil {
			a.evidence = map[string][]ApprovalEvidence{}
			return false
		}
		a.evidence = evidence
	}
	key := t.Promotion + "\x00" + t.Vector
	count, ok := a.counts[key]
	if !ok {
		count = CountApprovals(subjectOf(a.in.Snapshot, t.Promotion, a.configOf(t), t.Vector, a.known), a.evidence[t.Promotion])
		a.counts[key] = count
	}
	if !count.Complete() {
		return false
	}
	counted := map[string]bool{}
	for _, g := range count.Grants {
		counted[g.ApprovedBy] = true
	}
	for _, by := range t.ApprovedBy() {
		if !counted[by] {
			return false
		}
	}
	return true
}
