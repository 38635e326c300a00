package controller

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

// t0 is when the first decision of every scenario is made.
var t0 = passtest.T0

// TestCountApprovals judges approval files of dev-to-test-1 (vector acme:v1,
// approvers alice and bob) signed with real keys: each file on its own, so a
// bad one never hides a good one, and distinct approvers add up.
func TestCountApprovals(t *testing.T) {
	alice, bob := testutil.NewSSHKey(t, nil), testutil.NewOpenPGPKey(t, "Bob", "bob@example.com", nil)
	carol, mallory := testutil.NewSSHKey(t, nil), testutil.NewSSHKey(t, nil)
	st := memory.NewStorage()
	at := func(min int) time.Time {
		return time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
	}
	signed := func(key []byte, min int) *object.Commit { return signedCommit(t, st, key, at(min)) }
	aliceAt1, aliceAt2, bobAt3 := signed(alice.PrivatePEM, 1), signed(alice.PrivatePEM, 2), signed(bob.PrivateArmored, 3)
	carolAt1, malloryAt1, unsigned := signed(carol.PrivatePEM, 1), signed(mallory.PrivatePEM, 1), signedCommit(t, st, nil, at(1))
	approval := func(promotion, vector string) *reconcilers.Approval {
		return &reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind, Promotion: promotion, Vector: vector}
	}
	good := approval("dev-to-test-1", "acme:v1")
	ev := func(path string, a *reconcilers.Approval, c *object.Commit) ApprovalEvidence {
		return ApprovalEvidence{Path: "approvals/dev-to-test-1/" + path, Approval: a, Commit: c}
	}
	policy := func(min int32) *v1alpha1.ApprovalPolicy {
		p := &v1alpha1.ApprovalPolicy{Approvers: []v1alpha1.Approver{
			{Name: "alice", PublicKey: alice.AuthorizedKey}, {Name: "bob", PublicKey: string(bob.PublicArmored)}}}
		if min > 0 {
			p.MinApprovals = &min
		}
		return p
	}
	grant := func(who string, c *object.Commit) v1alpha1.ApprovalRecord {
		return v1alpha1.ApprovalRecord{ApprovedBy: who, ApprovedAt: metav1.NewTime(c.Committer.When.UTC()), Commit: c.Hash.String()}
	}
	known := []gitwriter.TrustedKey{{Name: "alice", PublicKey: alice.AuthorizedKey}, {Name: "carol", PublicKey: carol.AuthorizedKey}}
	subject := ApprovalSubject{Promotion: "dev-to-test-1", Vector: "acme:v1", Config: "dev-to-test", Policy: policy(0), Known: known}
	tamperedAlice := tamper(t, st, aliceAt1)

	tests := []struct {
		name     string
		subject  func(*ApprovalSubject)
		evidence []ApprovalEvidence
		want     pass.ApprovalCount
		complete bool
	}{{
		name:     "no files",
		want:     pass.ApprovalCount{Needed: 1},
		complete: false,
	}, {
		name:     "one trusted approval",
		evidence: []ApprovalEvidence{ev("a.yaml", good, aliceAt1)},
		want:     pass.ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt1)}},
		complete: true,
	}, {
		name: "an untrusted file before a trusted one hides nothing",
		evidence: []ApprovalEvidence{
			ev("0-mallory.yaml", good, malloryAt1), ev("1-unsigned.yaml", good, unsigned), ev("2-alice.yaml", good, aliceAt2)},
		want: pass.ApprovalCount{Needed: 1, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt2)}, Refusals: []string{
			"approval commit " + v1alpha1.ShortCommit(malloryAt1.Hash.String()) + " is signed by a key that is not one of the approvers of dev-to-test (committed as Test Author <author@example.com>)",
			"approval commit " + v1alpha1.ShortCommit(unsigned.Hash.String()) + " is not signed",
		}},
		complete: true,
	}, {
		name:     "an approver of another config is named and refused",
		evidence: []ApprovalEvidence{ev("c.yaml", good, carolAt1)},
		want: pass.ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit " + v1alpha1.ShortCommit(carolAt1.Hash.String()) + " is signed by carol, who is not an approver of dev-to-test"}},
	}, {
		name:     "a tampered commit has a bad signature",
		evidence: []ApprovalEvidence{ev("a.yaml", good, tamperedAlice)},
		want: pass.ApprovalCount{Needed: 1, Refusals: []string{"approval commit " + v1alpha1.ShortCommit(tamperedAlice.Hash.String()) +
			" has a bad signature: commit " + tamperedAlice.Hash.String() + ": commit signature does not verify: SSH key " + sshFingerprint(t, alice.AuthorizedKey) + ": ssh: signature did not verify"}},
	}, {
		name: "another vector, another promotion, not an approval",
		evidence: []ApprovalEvidence{
			ev("a.yaml", approval("dev-to-test-1", "acme:v0"), aliceAt1),
			ev("b.yaml", approval("dev-to-test-2", "acme:v1"), aliceAt1),
			ev("c.yaml", &reconcilers.Approval{Problem: "it is not an Approval naming a promotion (kind \"ConfigMap\")"}, aliceAt1),
		},
		want: pass.ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit " + v1alpha1.ShortCommit(aliceAt1.Hash.String()) + " approves vector acme:v0 but dev-to-test-1 promotes acme:v1; approve again",
			"approval file approvals/dev-to-test-1/b.yaml (commit " + v1alpha1.ShortCommit(aliceAt1.Hash.String()) + ") names promotion dev-to-test-2, not dev-to-test-1",
			"approval file approvals/dev-to-test-1/c.yaml (commit " + v1alpha1.ShortCommit(aliceAt1.Hash.String()) + ") is not an approval: it is not an Approval naming a promotion (kind \"ConfigMap\")",
		}},
	}, {
		name:     "the config is gone: nobody is trusted",
		subject:  func(s *ApprovalSubject) { s.Policy = nil },
		evidence: []ApprovalEvidence{ev("a.yaml", good, aliceAt1)},
		want: pass.ApprovalCount{Needed: 1, Refusals: []string{
			"approval commit " + v1alpha1.ShortCommit(aliceAt1.Hash.String()) + ": VectorPromotionConfig dev-to-test does not exist, so no approver is trusted"}},
	}, {
		name:     "four eyes: one approver twice is one approval",
		subject:  func(s *ApprovalSubject) { s.Policy = policy(2) },
		evidence: []ApprovalEvidence{ev("b.yaml", good, aliceAt2), ev("a.yaml", good, aliceAt1)},
		want:     pass.ApprovalCount{Needed: 2, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt1)}},
	}, {
		name:     "four eyes: two approvers, oldest first",
		subject:  func(s *ApprovalSubject) { s.Policy = policy(2) },
		evidence: []ApprovalEvidence{ev("a.yaml", good, bobAt3), ev("b.yaml", good, aliceAt2), ev("c.yaml", good, carolAt1)},
		want: pass.ApprovalCount{Needed: 2, Grants: []v1alpha1.ApprovalRecord{grant("alice", aliceAt2), grant("bob", bobAt3)}, Refusals: []string{
			"approval commit " + v1alpha1.ShortCommit(carolAt1.Hash.String()) + " is signed by carol, who is not an approver of dev-to-test"}},
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

func sshFingerprint(t *testing.T, authorizedKey string) string {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorizedKey))
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(k)
}

// TestApprovalEvidence: each file's evidence is the commit that gave it its
// current content, however deep, found in one walk; commits that do not
// touch approvals/ are passed over.
func TestApprovalEvidence(t *testing.T) {
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "init", "-q", "-b", "state")
	commit := func(file, content string) string {
		p := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, nil, "add", file)
		testutil.Git(t, dir, nil, "commit", "-qm", "write "+file)
		return strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))
	}
	addsA := commit("approvals/p-1/a.yaml", "one")
	for i := 0; i < 30; i++ {
		commit("promotions/c/p-1.yaml", strings.Repeat("x", i+1))
	}
	addsB := commit("approvals/p-1/b.yaml", "two")
	commit("approvals/p-2.yaml", "other")
	rewritesLegacy := commit("approvals/p-1.yaml", "legacy")
	tip := commit("promotions/c/p-1.yaml", "last")

	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{"p-1": {"approvals/p-1.yaml", "approvals/p-1/a.yaml", "approvals/p-1/b.yaml"}}
	approvals := map[string]*reconcilers.Approval{}
	for _, f := range files["p-1"] {
		approvals[f] = &reconcilers.Approval{Promotion: "p-1"}
	}
	cache := &evidenceCache{}
	got, err := approvalEvidence(repo.Storer, plumbing.NewHash(tip), approvals, files, cache)
	if err != nil {
		t.Fatal(err)
	}
	origins := map[string]string{}
	for _, e := range got["p-1"] {
		origins[e.Path] = e.Commit.Hash.String()
	}
	want := map[string]string{"approvals/p-1.yaml": rewritesLegacy, "approvals/p-1/a.yaml": addsA, "approvals/p-1/b.yaml": addsB}
	if diff := cmp.Diff(want, origins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}

	// The next walk stops at the remembered tip and takes the remembered
	// origins of files unchanged since; a file rewritten later has the
	// rewrite as its evidence: the commit that gave it the content it has.
	if cache.tip.String() != tip || len(cache.origins) != 3 {
		t.Fatalf("cache after the walk: tip %s, %d origins", cache.tip, len(cache.origins))
	}
	rewritesA := commit("approvals/p-1/a.yaml", "changed")
	newTip := commit("promotions/c/p-1.yaml", "later")
	for _, c := range []*evidenceCache{cache, nil} {
		got, err = approvalEvidence(repo.Storer, plumbing.NewHash(newTip), approvals, files, c)
		if err != nil {
			t.Fatal(err)
		}
		origins = map[string]string{}
		for _, e := range got["p-1"] {
			origins[e.Path] = e.Commit.Hash.String()
		}
		want["approvals/p-1/a.yaml"] = rewritesA
		if diff := cmp.Diff(want, origins); diff != "" {
			t.Errorf("origins after a rewrite, cache %v (-want +got):\n%s", c != nil, diff)
		}
	}

	// A rewritten history never reaches the remembered tip: the walk is
	// complete on its own. Here the branch is reset to before b.yaml and
	// the same b.yaml is added again, unsigned, by another commit.
	testutil.Git(t, dir, nil, "reset", "-q", "--hard", addsA)
	readdsB := commit("approvals/p-1/b.yaml", "two")
	got, err = approvalEvidence(repo.Storer, plumbing.NewHash(readdsB), approvals, map[string][]string{"p-1": {"approvals/p-1/b.yaml"}}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if c := got["p-1"][0].Commit.Hash.String(); c != readdsB {
		t.Errorf("after a rewrite, b.yaml's evidence is %s, want the commit that re-added it, %s", c, readdsB)
	}
}

// signedCommit stores an empty-tree commit dated at, signed with key
// (unsigned when key is nil).
func signedCommit(t *testing.T, st *memory.Storage, key []byte, at time.Time) *object.Commit {
	t.Helper()
	who := object.Signature{Name: "Test Author", Email: "author@example.com", When: at}
	c := &object.Commit{Author: who, Committer: who, Message: "approve\n",
		TreeHash: plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")}
	if key != nil {
		s, err := gitwriter.NewSigner(key, nil)
		if err != nil {
			t.Fatal(err)
		}
		payload := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(payload); err != nil {
			t.Fatal(err)
		}
		r, _ := payload.Reader()
		var b bytes.Buffer
		if _, err := b.ReadFrom(r); err != nil {
			t.Fatal(err)
		}
		sig, err := s.Sign(&b)
		if err != nil {
			t.Fatal(err)
		}
		c.PGPSignature = string(sig)
	}
	return storeCommit(t, st, c)
}

// tamper is c with another message and c's signature: someone editing a
// signed approval commit.
func tamper(t *testing.T, st *memory.Storage, c *object.Commit) *object.Commit {
	t.Helper()
	forged := *c
	forged.Message = "approve everything\n"
	return storeCommit(t, st, &forged)
}

func storeCommit(t *testing.T, st *memory.Storage, c *object.Commit) *object.Commit {
	t.Helper()
	stored, err := object.GetCommit(st, testutil.StoreObject(t, st, c))
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// TestDecideCountsApprovals: a count short of minApprovals keeps the
// promotion Waiting, saying who approved and how many are missing, with
// status.approvals so far; a complete count approves it with every approver
// and status.approval the one that completed it.
func TestDecideCountsApprovals(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	state := pass.Decide(pass.Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0).State
	rec := func(who string, min int) v1alpha1.ApprovalRecord {
		return v1alpha1.ApprovalRecord{ApprovedBy: who, ApprovedAt: metav1.NewTime(t0.Add(time.Duration(min) * time.Minute)), Commit: who + "-commit"}
	}
	alice, bob := rec("alice", 1), rec("bob", 2)

	short := pass.Decide(pass.Inputs{Snapshot: spec.Build(), State: state, Approvals: map[string]pass.ApprovalCount{
		"dev-to-test-1": {Needed: 2, Grants: []v1alpha1.ApprovalRecord{alice}}}}, t0.Add(3*time.Minute))
	p := passtest.WantPromotion(t, short.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition)
	if c == nil || c.Reason != v1alpha1.WaitingForApprovalReason || c.Message != "approved by alice; 1 more approval of dev-to-test's approvers needed" {
		t.Errorf("Approved condition %+v, want WaitingForApproval saying who approved and what is missing", c)
	}
	if diff := cmp.Diff([]v1alpha1.ApprovalRecord{alice}, p.Status.Approvals); diff != "" || p.Status.Approval != nil {
		t.Errorf("status.approvals (-want +got):\n%s\nstatus.approval %+v, want none yet", diff, p.Status.Approval)
	}
	if slices.Contains(short.Start, "dev-to-test-1") {
		t.Errorf("a promotion short of approvals started")
	}

	done := pass.Decide(pass.Inputs{Snapshot: spec.Build(), State: short.State, Approvals: map[string]pass.ApprovalCount{
		"dev-to-test-1": {Needed: 2, Grants: []v1alpha1.ApprovalRecord{alice, bob}}}}, t0.Add(4*time.Minute))
	p = passtest.WantPromotion(t, done.State, "dev-to-test-1", v1alpha1.PromotionInProgress, "acme:v1")
	if diff := cmp.Diff([]v1alpha1.ApprovalRecord{alice, bob}, p.Status.Approvals); diff != "" {
		t.Errorf("status.approvals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&bob, p.Status.Approval); diff != "" {
		t.Errorf("status.approval is the approval that completed the count (-want +got):\n%s", diff)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition); c == nil || c.Message != "approved by alice, bob" {
		t.Errorf("Approved condition %+v", c)
	}
	want := []gitwriter.TrailerApproval{{By: "alice", At: alice.ApprovedAt.Time}, {By: "bob", At: bob.ApprovedAt.Time}}
	if diff := cmp.Diff(want, approvalTrailers(p)); diff != "" {
		t.Errorf("approval trailers (-want +got):\n%s", diff)
	}
}
