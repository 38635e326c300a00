package pass

import (
	"fmt"
	"sort"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// An approval is a file of its own: `vectorflow approve` adds
// approvals/<promotion>/<key-id>-<unique>.yaml in a commit signed with the
// approver's key, and never rewrites or removes a file. So one approver's
// approval stands on its own: a refused file (unsigned, signed by someone
// else, of another vector, not YAML at all) is refused alone and never
// hides or blocks another approver's good one, and with
// spec.approval.minApprovals several approvals add up.
//
// CountApprovals is the one judge of what the files of a promotion add up
// to; the controller (before deciding) and audit (long after) both ask it,
// once the shell has found each file's commit and checked its signature.

// ApprovalSubject is what approvals must be of: a promotion, its
// snapshotted vector, and its own config's approval policy (nil when the
// config is gone, so nobody is trusted).
type ApprovalSubject struct {
	Promotion string
	Vector    string
	Config    string
	Policy    *v1alpha1.ApprovalPolicy
	// ApproversProblem says why the keys of the policy's approvers cannot
	// verify anything; "" when they can.
	ApproversProblem string
}

// ApprovalEvidence is one approval file of a promotion with the commit that
// gave the file its content, whose signature says who approved.
type ApprovalEvidence struct {
	Path     string
	Approval *reconcilers.Approval
	// Commit is nil when the file's commit could not be found.
	Commit *ApprovalCommit
}

// ApprovalCommit is what the shell found about the commit that gave an
// approval file its content.
type ApprovalCommit struct {
	Hash                    string
	AuthorName, AuthorEmail string
	CommittedAt             time.Time
	Signature               ApprovalSignature
}

// SignatureOutcome is what checking a commit's signature against the keys of
// the subject's approvers found.
type SignatureOutcome string

const (
	// SignatureVerified: an approver's key verifies it (Signer says whose).
	SignatureVerified SignatureOutcome = "Verified"
	// SignatureMissing: the commit is not signed.
	SignatureMissing SignatureOutcome = "Missing"
	// SignatureUnknownKey: it is signed with a key of none of the approvers.
	SignatureUnknownKey SignatureOutcome = "UnknownKey"
	// SignatureBad: it does not verify (Problem says why).
	SignatureBad SignatureOutcome = "Bad"
)

// ApprovalSignature is a commit's signature checked against the keys of the
// subject's approvers.
type ApprovalSignature struct {
	Outcome SignatureOutcome
	// Signer is the approver whose key verifies the signature.
	Signer string
	// KnownAs names the signer of a SignatureUnknownKey signature when the
	// key is another config's approver's: only to say who, never to count.
	KnownAs string
	// Problem says why a SignatureBad signature does not verify.
	Problem string
}

// CountApprovals judges each approval file of a promotion on its own and
// counts the distinct approvers of its config who approved its vector. A
// file counts when it names the promotion and its vector, and the commit
// that gave it its content is signed by one of the config's approvers.
func CountApprovals(s ApprovalSubject, evidence []ApprovalEvidence) ApprovalCount {
	count := ApprovalCount{Needed: s.Policy.RequiredApprovals()}
	var approvers []v1alpha1.Approver
	if s.Policy != nil {
		approvers = s.Policy.Approvers
	}
	sorted := append([]ApprovalEvidence(nil), evidence...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	first := map[string]v1alpha1.ApprovalRecord{}
	for _, e := range sorted {
		refuse := func(format string, args ...any) {
			count.Refusals = append(count.Refusals, fmt.Sprintf(format, args...))
		}
		a, c := e.Approval, e.Commit
		if a == nil || c == nil {
			refuse("approval file %s could not be read", e.Path)
			continue
		}
		short := v1alpha1.ShortCommit(c.Hash)
		switch {
		case a.Problem != "":
			refuse("approval file %s (commit %s) is not an approval: %s", e.Path, short, a.Problem)
			continue
		case a.Promotion != s.Promotion:
			refuse("approval file %s (commit %s) names promotion %s, not %s", e.Path, short, a.Promotion, s.Promotion)
			continue
		case a.Vector != s.Vector:
			refuse("approval commit %s approves vector %s but %s promotes %s; approve again", short, a.Vector, s.Promotion, s.Vector)
			continue
		case s.Policy == nil:
			refuse("approval commit %s: VectorPromotionConfig %s does not exist, so no approver is trusted", short, s.Config)
			continue
		case len(approvers) == 0:
			refuse("approval commit %s: VectorPromotionConfig %s lists no spec.approval.approvers", short, s.Config)
			continue
		case s.ApproversProblem != "":
			refuse("approval commit %s: VectorPromotionConfig %s: spec.approval.approvers: %s", short, s.Config, s.ApproversProblem)
			continue
		}
		sig := c.Signature
		switch sig.Outcome {
		case SignatureVerified:
		case SignatureMissing:
			refuse("approval commit %s is not signed", short)
			continue
		case SignatureUnknownKey:
			who := fmt.Sprintf("a key that is not one of the approvers of %s (committed as %s <%s>)", s.Config, c.AuthorName, c.AuthorEmail)
			if sig.KnownAs != "" {
				who = fmt.Sprintf("%s, who is not an approver of %s", sig.KnownAs, s.Config)
			}
			refuse("approval commit %s is signed by %s", short, who)
			continue
		case SignatureBad:
			refuse("approval commit %s has a bad signature: %s", short, sig.Problem)
			continue
		default: // never checked: nothing is trusted unchecked
			refuse("approval commit %s: its signature was not checked", short)
			continue
		}
		grant := v1alpha1.ApprovalRecord{ApprovedBy: sig.Signer, Commit: c.Hash,
			ApprovedAt: reconcilers.Stamp(c.CommittedAt)}
		if prev, ok := first[sig.Signer]; !ok || grant.ApprovedAt.Before(&prev.ApprovedAt) {
			first[sig.Signer] = grant
		}
	}
	for _, g := range first {
		count.Grants = append(count.Grants, g)
	}
	sort.Slice(count.Grants, func(i, j int) bool {
		a, b := count.Grants[i], count.Grants[j]
		if !a.ApprovedAt.Equal(&b.ApprovedAt) {
			return a.ApprovedAt.Before(&b.ApprovedAt)
		}
		return a.ApprovedBy < b.ApprovedBy
	})
	return count
}
