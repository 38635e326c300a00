package pass

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// TestCountApprovals judges approval files of dev-to-test-1 (vector acme:v1,
// approvers alice and bob) from the facts the shell found about their
// commits: each file on its own, so a bad one never hides a good one, and
// distinct approvers add up. controller's TestCountApprovals checks the
// same with real keys and signatures.
func TestCountApprovals(t *testing.T) {
	at := func(min int) time.Time {
		return time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC).Add(time.Duration(min)*time.Minute + 300*time.Millisecond)
	}
	commit := func(hash string, min int, sig ApprovalSignature) *ApprovalCommit {
		return &ApprovalCommit{Hash: hash, AuthorName: "Test Author", AuthorEmail: "author@example.com", CommittedAt: at(min), Signature: sig}
	}
	by := func(who string) ApprovalSignature { return ApprovalSignature{Outcome: SignatureVerified, Signer: who} }
	aliceAt1 := commit("a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 1, by("alice"))
	aliceAt2 := commit("a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2", 2, by("alice"))
	bobAt3 := commit("b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3", 3, by("bob"))
	carolAt1 := commit("c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1", 1, ApprovalSignature{Outcome: SignatureUnknownKey, KnownAs: "carol"})
	malloryAt1 := commit("d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1", 1, ApprovalSignature{Outcome: SignatureUnknownKey})
	unsigned := commit("e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1", 1, ApprovalSignature{Outcome: SignatureMissing})
	tampered := commit("f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1", 1, ApprovalSignature{Outcome: SignatureBad, Problem: "commit signature does not verify"})
	unchecked := commit("0101010101010101010101010101010101010101", 1, ApprovalSignature{Signer: "alice"})
	approval := func(promotion, vector string) *reconcilers.Approval {
		return &reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind, Promotion: promotion, Vector: vector}
	}
	good := approval("dev-to-test-1", "acme:v1")
	ev := func(path string, a *reconcilers.Approval, c *ApprovalCommit) ApprovalEvidence {
		return ApprovalEvidence{Path: "approvals/dev-to-test-1/" + path, Approval: a, Commit: c}
	}
	policy := func(min int32) *v1alpha1.ApprovalPolicy {
		p := &v1alpha1.ApprovalPolicy{Approvers: []v1alpha1.Approver{{Name: "alice", PublicKey: "alice's key"}, {Name: "bob", PublicKey: "bob's key"}}}
		if min > 0 {
			p.MinApprovals = &min
		}
		return p
	}
	grant := func(who string, c *ApprovalCommit) v1alpha1.ApprovalRecord {
		return v1alpha1.ApprovalRecord{ApprovedBy: who, ApprovedAt: metav1.NewTime(c.CommittedAt.Truncate(time.Second)), Commit: c.Hash}
	}
	subject := ApprovalSubject{Promotion: "dev-to-test-1", Vector: "acme:v1", Config: "dev-to-test", Policy: policy(0)}

	tests := []struct {
		name     string
		subject  func(*ApprovalSubject)
		evidence []ApprovalEvidence
		want     ApprovalCount
		complete bool
	}{{
		name: "no files",
		want: ApprovalCount{Needed: 1},
	}, {
		name:     "one trusted approval",
		evidence: []ApprovalEvidence{ev("a.yaml", good, aliceAt1)},
		want:     ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt1)}},
		complete: true,
	}, {
		name: "an untrusted file before a trusted one hides nothing",
		evidence: []ApprovalEvidence{
			ev("0-mallory.yaml", good, malloryAt1), ev("1-unsigned.yaml", good, unsigned), ev("2-alice.yaml", good, aliceAt2)},
		want: ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt2)}, Refusals: []string{
			"approval commit d1d1d1d1d1d1 is signed by a key that is not one of the approvers of dev-to-test (committed as Test Author <author@example.com>)",
			"approval commit e1e1e1e1e1e1 is not signed",
		}},
		complete: true,
	}, {
		name:     "an approver of another config is named and refused",
		evidence: []ApprovalEvidence{ev("c.yaml", good, carolAt1)},
		want: ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit c1c1c1c1c1c1 is signed by carol, who is not an approver of dev-to-test"}},
	}, {
		name:     "a tampered commit has a bad signature",
		evidence: []ApprovalEvidence{ev("a.yaml", good, tampered)},
		want: ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit f1f1f1f1f1f1 has a bad signature: commit signature does not verify"}},
	}, {
		name:     "a signature nobody checked counts for nothing",
		evidence: []ApprovalEvidence{ev("a.yaml", good, unchecked)},
		want:     ApprovalCount{Needed: 1, Refusals: []string{"approval commit 010101010101: its signature was not checked"}},
	}, {
		name:     "a file whose commit was not found",
		evidence: []ApprovalEvidence{ev("a.yaml", good, nil)},
		want:     ApprovalCount{Needed: 1, Refusals: []string{"approval file approvals/dev-to-test-1/a.yaml could not be read"}},
	}, {
		name: "another vector, another promotion, not an approval",
		evidence: []ApprovalEvidence{
			ev("a.yaml", approval("dev-to-test-1", "acme:v0"), aliceAt1),
			ev("b.yaml", approval("dev-to-test-2", "acme:v1"), aliceAt1),
			ev("c.yaml", &reconcilers.Approval{Problem: "it is not an Approval naming a promotion (kind \"ConfigMap\")"}, aliceAt1),
		},
		want: ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit a1a1a1a1a1a1 approves vector acme:v0 but dev-to-test-1 promotes acme:v1; approve again",
			"approval file approvals/dev-to-test-1/b.yaml (commit a1a1a1a1a1a1) names promotion dev-to-test-2, not dev-to-test-1",
			"approval file approvals/dev-to-test-1/c.yaml (commit a1a1a1a1a1a1) is not an approval: it is not an Approval naming a promotion (kind \"ConfigMap\")",
		}},
	}, {
		name:     "the config is gone: nobody is trusted",
		subject:  func(s *ApprovalSubject) { s.Policy = nil },
		evidence: []ApprovalEvidence{ev("a.yaml", good, aliceAt1)},
		want: ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit a1a1a1a1a1a1: VectorPromotionConfig dev-to-test does not exist, so no approver is trusted"}},
	}, {
		name:     "no approvers listed",
		subject:  func(s *ApprovalSubject) { s.Policy = &v1alpha1.ApprovalPolicy{} },
		evidence: []ApprovalEvidence{ev("a.yaml", good, aliceAt1)},
		want: ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit a1a1a1a1a1a1: VectorPromotionConfig dev-to-test lists no spec.approval.approvers"}},
	}, {
		name:     "approvers whose keys do not parse",
		subject:  func(s *ApprovalSubject) { s.ApproversProblem = "approver bob: not a public key" },
		evidence: []ApprovalEvidence{ev("a.yaml", good, aliceAt1)},
		want: ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit a1a1a1a1a1a1: VectorPromotionConfig dev-to-test: spec.approval.approvers: approver bob: not a public key"}},
	}, {
		name:     "four eyes: one approver twice is one approval",
		subject:  func(s *ApprovalSubject) { s.Policy = policy(2) },
		evidence: []ApprovalEvidence{ev("b.yaml", good, aliceAt2), ev("a.yaml", good, aliceAt1)},
		want:     ApprovalCount{Needed: 2, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt1)}},
	}, {
		name:     "four eyes: two approvers, oldest first",
		subject:  func(s *ApprovalSubject) { s.Policy = policy(2) },
		evidence: []ApprovalEvidence{ev("a.yaml", good, bobAt3), ev("b.yaml", good, aliceAt2), ev("c.yaml", good, carolAt1)},
		want: ApprovalCount{Needed: 2, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt2), grant("bob", bobAt3)}, Refusals: []string{
			"approval commit c1c1c1c1c1c1 is signed by carol, who is not an approver of dev-to-test"}},
		complete: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := subject
			if tt.subject != nil {
				tt.subject(&s)
			}
			got := CountApprovals(s, tt.evidence)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CountApprovals (-want +got):\n%s", diff)
			}
			if got.Complete() != tt.complete {
				t.Errorf("Complete() = %v, want %v", got.Complete(), tt.complete)
			}
		})
	}
}
