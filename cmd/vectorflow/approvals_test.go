package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// approvalFixture is the flow fixture with more people: bob approves
// dev-to-test beside alice, and carol approves only test-to-prod.
type approvalFixture struct {
	*flowFixture
	bob, carol string // signing key files
}

// newApprovalFixture adds bob to dev-to-test's approvers and carol to
// test-to-prod's, and sets dev-to-test's minApprovals when min > 0.
func newApprovalFixture(t *testing.T, min int) *approvalFixture {
	t.Helper()
	f := &approvalFixture{flowFixture: newFlowFixture(t)}
	keys := t.TempDir()
	bob, carol := testutil.NewSSHKey(t, nil), testutil.NewSSHKey(t, nil)
	f.bob = writeFile(t, keys, "bob", bob.PrivatePEM)
	f.carol = writeFile(t, keys, "carol", carol.PrivatePEM)

	dir := f.clone(t)
	file := filepath.Join(dir, "vectorflow", "promotions.yaml")
	promotions := readFile(t, file)
	docs := strings.Split(promotions, "\n---\n")
	if len(docs) != 3 || !strings.Contains(docs[1], "name: dev-to-test") || !strings.Contains(docs[2], "name: test-to-prod") {
		t.Fatalf("the quickstart's promotions.yaml changed shape; update this test:\n%s", promotions)
	}
	extra := "\n      - name: bob\n        publicKey: " + bob.AuthorizedKey + "\n"
	if min > 0 {
		docs[1] = strings.Replace(docs[1], "  approval:\n    required: true\n", "  approval:\n    required: true\n    minApprovals: "+itoa(min)+"\n", 1)
	}
	docs[1] = strings.TrimRight(docs[1], "\n") + extra
	docs[2] = strings.TrimRight(docs[2], "\n") + "\n      - name: carol\n        publicKey: " + carol.AuthorizedKey + "\n"
	writeFile(t, filepath.Dir(file), "promotions.yaml", []byte(strings.Join(docs, "\n---\n")))
	testutil.Git(t, dir, nil, "commit", "-qam", "more approvers")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
	return f
}

func itoa(n int) string { return string(rune('0' + n)) }

// pushApprovalFile adds an approval file to the state branch the way a
// person with push access could, with the git binary: signed with the SSH
// key in keyFile, or unsigned when keyFile is empty. It returns the commit.
func (f *flowFixture) pushApprovalFile(t *testing.T, keyFile, path, content string) string {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", controller.DefaultStateBranch, f.srv.HTTPURLWithCredentials("acme.git"), ".")
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, path, []byte(content))
	testutil.Git(t, dir, nil, "add", path)
	args := []string{"commit", "-qm", "approve"}
	if keyFile != "" {
		args = append([]string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + keyFile}, append(args, "-S")...)
	}
	testutil.Git(t, dir, nil, args...)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:"+controller.DefaultStateBranch)
	return strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))
}

func approvalYAML(promotion, vector string) string {
	return "apiVersion: vectorflow.dev/v1alpha1\nkind: Approval\npromotion: " + promotion + "\nvector: " + vector +
		"\napprovedBy: someone\napprovedAt: \"2026-01-01T00:00:00Z\"\n"
}

// promotionTrailers are the trailers of the promotion commit on the test
// overlay, as git interpret-trailers reads them.
func (f *approvalFixture) promotionTrailers(t *testing.T, commit string) []string {
	t.Helper()
	clone := f.clone(t)
	msg := testutil.Git(t, clone, nil, "log", "-1", "--format=%B", commit)
	out := testutil.Git(t, clone, nil, "interpret-trailers", "--parse", writeFile(t, t.TempDir(), "msg", []byte(msg)))
	return strings.Split(strings.TrimSpace(out), "\n")
}

func approvedBy(trailers []string) []string {
	var by []string
	for _, l := range trailers {
		if v, ok := strings.CutPrefix(l, "Approved-by: "); ok {
			by = append(by, v)
		}
	}
	return by
}

// TestBadApprovalNeverHidesAGoodOne: an unsigned approval file written at the
// path `approve` used to write, and another signed by an approver of
// another config, are refused with the commit and the signer named; a
// trusted approver's approval still counts and the promotion runs.
func TestBadApprovalNeverHidesAGoodOne(t *testing.T) {
	f := newApprovalFixture(t, 0)
	f.run(t)
	p := f.promotions(t)["dev-to-test-2"]
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionWaiting)

	// Carol approves only test-to-prod; her signature on dev-to-test-2 is
	// refused, naming her commit and her.
	carolCommit := f.pushApprovalFile(t, f.carol, "approvals/dev-to-test-2/carol.yaml", approvalYAML("dev-to-test-2", p.Spec.Vector))
	f.run(t)
	c := condition(f.promotions(t)["dev-to-test-2"], v1alpha1.ApprovedCondition)
	if c.Reason != v1alpha1.ApprovalRefusedReason || !strings.Contains(c.Message, carolCommit[:12]) ||
		!strings.Contains(c.Message, "carol") || !strings.Contains(c.Message, "not an approver of dev-to-test") {
		t.Fatalf("approval signed by carol: Approved %+v, want ApprovalRefused naming %s and carol", c, carolCommit[:12])
	}

	// An unsigned approval at the legacy path.
	f.pushApprovalFile(t, "", "approvals/dev-to-test-2.yaml", approvalYAML("dev-to-test-2", p.Spec.Vector))
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionWaiting)

	// Alice's approve makes a new commit of its own and counts.
	out := f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	stateTip := strings.TrimSpace(testutil.Git(t, f.srv.BarePath("acme.git"), nil, "rev-parse", controller.DefaultStateBranch))
	if !strings.Contains(out, "approved dev-to-test-2") || !strings.Contains(out, stateTip) {
		t.Fatalf("approve printed %q, want the commit it made, %s", out, stateTip)
	}
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSucceeded)
	if got := approvedBy(f.promotionTrailers(t, ps["dev-to-test-2"].Status.Commit)); strings.Join(got, ",") != "alice" {
		t.Fatalf("Approved-by trailers %q, want alice", got)
	}
}

// TestStrayApprovalFilesDoNotStopPasses: files under approvals/ that belong
// to no promotion's place (another name, malformed YAML, another kind) are
// skipped; passes go on.
func TestStrayApprovalFilesDoNotStopPasses(t *testing.T) {
	f := newApprovalFixture(t, 0)
	f.run(t)
	vector := f.promotions(t)["dev-to-test-2"].Spec.Vector
	f.pushApprovalFile(t, "", "approvals/zzz.yaml", approvalYAML("dev-to-test-2", vector))
	f.pushApprovalFile(t, "", "approvals/dev-to-test-2/broken.yaml", "kind: Approval\npromotion: [\n")
	f.pushApprovalFile(t, "", "approvals/dev-to-test-2/other.yaml", "apiVersion: v1\nkind: ConfigMap\n")
	if out, err := f.cliE("run", "--once", "--signing-key", f.controller); err != nil {
		t.Fatalf("run with stray approval files: %v\n%s", err, out)
	}
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionWaiting)
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.bob, "--identity", "Bob <bob@example.com>")
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionSucceeded)
}

// TestApproveChecksLocally: approve refuses a key that is not an approver
// of the promotion's config, and a --vector other than the promotion's,
// with a non-zero exit and the reason, and writes nothing.
func TestApproveChecksLocally(t *testing.T) {
	f := newApprovalFixture(t, 0)
	f.run(t)
	p := f.promotions(t)["dev-to-test-2"]
	tip := func() string {
		return strings.TrimSpace(testutil.Git(t, f.srv.BarePath("acme.git"), nil, "rev-parse", controller.DefaultStateBranch))
	}
	before := tip()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"untrusted key", []string{"--signing-key", f.mallory}, []string{"not one of the approvers", "dev-to-test"}},
		{"approver of another config", []string{"--signing-key", f.carol}, []string{"not one of the approvers", "dev-to-test"}},
		{"other vector", []string{"--signing-key", f.alice, "--vector", "acme:0000.00.0-000000000Z"},
			[]string{"promotes " + p.Spec.Vector, "acme:0000.00.0-000000000Z"}},
	} {
		out, err := f.cliE(append([]string{"approve", "dev-to-test-2", "--identity", "Someone <someone@example.com>"}, tc.args...)...)
		if err == nil {
			t.Errorf("%s: approve succeeded:\n%s", tc.name, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
	if after := tip(); after != before {
		t.Fatalf("a refused approve wrote the state branch: %s -> %s", before, after)
	}
	// The matching --vector is accepted.
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>", "--vector", p.Spec.Vector)

	// Once it has run, approving it again says so, exits 0 and writes nothing.
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionSucceeded)
	before = tip()
	out := f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.bob, "--identity", "Bob <bob@example.com>")
	if !strings.Contains(out, "it has finished") || tip() != before {
		t.Fatalf("approving a finished promotion printed %q and moved the state branch %s -> %s", out, before, tip())
	}
}

// TestFourEyes: with minApprovals 2, one approval (even given twice) keeps
// the promotion Waiting with who approved and how many are missing; a
// second approver's makes it run, with one Approved-by trailer each; audit
// verifies it.
func TestFourEyes(t *testing.T) {
	f := newApprovalFixture(t, 2)
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionWaiting)

	for i := 0; i < 2; i++ {
		f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
		f.run(t)
		ps := f.promotions(t)
		wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionWaiting)
		c := condition(ps["dev-to-test-2"], v1alpha1.ApprovedCondition)
		if want := "approved by alice; 1 more approval of dev-to-test's approvers needed"; !strings.Contains(c.Message, want) {
			t.Fatalf("after alice's approval #%d: Approved %+v, want %q", i+1, c, want)
		}
	}
	if table := f.cli(t, "get", "promotions"); !regexp.MustCompile(`dev-to-test-2 .* Waiting +alice +`).MatchString(table) {
		t.Errorf("get promotions does not show alice's approval of the waiting promotion:\n%s", table)
	}
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.bob, "--identity", "Bob <bob@example.com>")
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSucceeded)
	p := ps["dev-to-test-2"]
	if len(p.Status.Approvals) != 2 || p.Status.Approval == nil || p.Status.Approval.ApprovedBy != "bob" {
		t.Fatalf("status approvals %+v, approval %+v: want alice and bob, completed by bob", p.Status.Approvals, p.Status.Approval)
	}
	trailers := f.promotionTrailers(t, p.Status.Commit)
	if got := approvedBy(trailers); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("Approved-by trailers %q, want alice and bob:\n%s", got, strings.Join(trailers, "\n"))
	}

	var entries []controller.AuditEntry
	if err := json.Unmarshal([]byte(f.cli(t, "audit", "--stage", "test", "-o", "json")), &entries); err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if e.Promotion != "dev-to-test-2" || !e.ApprovalVerified || !e.Verified || e.Reason != "" {
		t.Fatalf("audit of the four-eyes promotion: %+v", e)
	}
	var counted []string
	for _, a := range p.Status.Approvals {
		counted = append(counted, a.ApprovedBy)
	}
	if strings.Join(e.Approvers, ",") != strings.Join(counted, ",") {
		t.Errorf("audit names approvers %q, the controller counted %q", e.Approvers, counted)
	}
}

// TestAuditSaysWhyNotVerified: audit names why each commit does not verify,
// agrees with what the controller decided, and --strict fails on any.
func TestAuditSaysWhyNotVerified(t *testing.T) {
	f := newApprovalFixture(t, 0)
	f.run(t)
	ps := f.promotions(t)
	vector := ps["dev-to-test-2"].Spec.Vector
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionSucceeded)

	// Commits on the test overlay nobody approved: an unsigned one, one
	// signed by an unknown key, and one that claims an approval with
	// trailers the state branch does not back (signed by bob, a trusted
	// key, so only the approval is missing).
	clone := f.clone(t)
	overlay := filepath.Join(clone, "apps", "overlays", "test", "kustomization.yaml")
	edit := func(keyFile, msg string) {
		writeFile(t, filepath.Dir(overlay), "kustomization.yaml", []byte(readFile(t, overlay)+"# "+msg+"\n"))
		args := []string{"commit", "-qam", msg}
		if keyFile != "" {
			args = append([]string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + keyFile}, append(args, "-S")...)
		}
		testutil.Git(t, clone, nil, args...)
	}
	edit("", "unsigned edit")
	edit(f.mallory, "edit by mallory")
	edit(f.bob, "forged promotion\n\nVectorflow-Promotion: dev-to-test-9\nVectorflow-Sequence: 9\nVectorflow-Vector: "+vector+"\nApproved-by: bob\nApproved-at: 2026-01-01T00:00:00Z")
	// A commit bob signed, its message changed afterwards.
	edit(f.bob, "signed by bob")
	raw := testutil.Git(t, clone, nil, "cat-file", "commit", "HEAD")
	forged := writeFile(t, t.TempDir(), "commit", []byte(strings.Replace(raw, "signed by bob", "tampered after signing", 1)))
	tampered := strings.TrimSpace(testutil.Git(t, clone, nil, "hash-object", "-t", "commit", "-w", forged))
	testutil.Git(t, clone, nil, "reset", "-q", "--hard", tampered)
	testutil.Git(t, clone, nil, "push", "-q", "origin", "main")

	var entries []controller.AuditEntry
	if err := json.Unmarshal([]byte(f.cli(t, "audit", "--stage", "test", "-o", "json")), &entries); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, e := range entries {
		reasons[e.Subject] = e.Reason
		if e.Verified == (e.Reason != "") {
			t.Errorf("audit entry %s: verified %v with reason %q", e.Subject, e.Verified, e.Reason)
		}
	}
	for subject, want := range map[string]string{
		"unsigned edit":          "unsigned",
		"edit by mallory":        "unknown key",
		"forged promotion":       "approval missing",
		"tampered after signing": "bad signature",
	} {
		if reasons[subject] != want {
			t.Errorf("audit reason of %q is %q, want %q (all: %v)", subject, reasons[subject], want, reasons)
		}
	}
	// Audit agrees with the controller on the promotion it ran.
	for _, e := range entries {
		if e.Promotion == "dev-to-test-2" && (!e.Verified || !e.ApprovalVerified) {
			t.Errorf("the controller ran dev-to-test-2 on alice's approval, audit says %+v", e)
		}
	}
	table := f.cli(t, "audit", "--stage", "test")
	for _, want := range []string{"REASON", "unsigned", "unknown key", "approval missing", "bad signature"} {
		if !strings.Contains(table, want) {
			t.Errorf("audit table lacks %q:\n%s", want, table)
		}
	}
	if out, err := f.cliE("audit", "--stage", "test", "--strict"); err == nil {
		t.Fatalf("audit --strict exited 0 with commits that do not verify:\n%s", out)
	}
}

// TestAuditTrustsOnlyTheStagesOwnApprovers: an approver of dev-to-test
// (bob, whose approvals count only for the test stage) cannot make a change
// of the prod overlay verify: neither by signing it himself, nor by naming
// one of his own config's promotions in the trailers of a commit a prod
// approver (carol) signed, backed by an approval file he added for it.
func TestAuditTrustsOnlyTheStagesOwnApprovers(t *testing.T) {
	f := newApprovalFixture(t, 0)
	f.run(t)
	vector := f.promotions(t)["dev-to-test-2"].Spec.Vector
	f.pushApprovalFile(t, f.bob, "approvals/dev-to-test-9/bob.yaml", approvalYAML("dev-to-test-9", vector))

	clone := f.clone(t)
	overlay := filepath.Join(clone, "apps", "overlays", "prod", "kustomization.yaml")
	edit := func(keyFile, msg string) {
		writeFile(t, filepath.Dir(overlay), "kustomization.yaml", []byte(readFile(t, overlay)+"# edit\n"))
		testutil.Git(t, clone, nil, "-c", "gpg.format=ssh", "-c", "user.signingkey="+keyFile, "commit", "-S", "-qam", msg)
	}
	edit(f.bob, "prod hotfix by bob")
	edit(f.carol, "prod change named after a dev-to-test promotion\n\nVectorflow-Promotion: dev-to-test-9\nVectorflow-Sequence: 9\nVectorflow-Config: dev-to-test\nVectorflow-Vector: "+vector+
		"\nVectorflow-Target: Stage/test/test\nApproved-by: bob\nApproved-at: 2026-01-01T00:00:00Z")
	testutil.Git(t, clone, nil, "push", "-q", "origin", "main")

	var entries []controller.AuditEntry
	if err := json.Unmarshal([]byte(f.cli(t, "audit", "--stage", "prod", "-o", "json")), &entries); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Subject, "prod ") {
			continue
		}
		seen++
		if e.Verified || e.ApprovalVerified {
			t.Errorf("audit verifies %q on prod, which only bob (an approver of dev-to-test) vouched for: %+v", e.Subject, e)
		}
	}
	if seen != 2 {
		t.Fatalf("audit lists %d of the 2 prod commits: %+v", seen, entries)
	}
	if out, err := f.cliE("audit", "--stage", "prod", "--strict"); err == nil {
		t.Fatalf("audit --strict exited 0 with prod commits only a dev-to-test approver vouched for:\n%s", out)
	}
}

// TestAuditDoesNotBelieveForgedState: an unsigned state commit records
// dev-to-test-9 as approved by alice through a pull request; bob (trusted
// for test) signs a test overlay change naming dev-to-test-9. The
// controller refuses that state; audit must not show alice's approval from
// it either.
func TestAuditDoesNotBelieveForgedState(t *testing.T) {
	f := newApprovalFixture(t, 0)
	f.run(t)
	vector := f.promotions(t)["dev-to-test-2"].Spec.Vector

	dir := f.stateClone(t)
	var p v1alpha1.VectorPromotion
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(dir, "promotions", "dev-to-test", "dev-to-test-2.yaml"))), &p); err != nil {
		t.Fatal(err)
	}
	p.Name, p.Spec.Sequence = "dev-to-test-9", 9
	p.Status.PullRequest = &v1alpha1.PullRequestStatus{Number: 9, URL: "https://forge.example.com/acme/pull/9", State: "merged"}
	p.Status.Approval = &v1alpha1.ApprovalRecord{ApprovedBy: "alice"}
	data, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "promotions", "dev-to-test"), "dev-to-test-9.yaml", data)
	f.commitState(t, dir, "", "record a pull request")

	clone := f.clone(t)
	overlay := filepath.Join(clone, "apps", "overlays", "test", "kustomization.yaml")
	writeFile(t, filepath.Dir(overlay), "kustomization.yaml", []byte(readFile(t, overlay)+"# edit\n"))
	testutil.Git(t, clone, nil, "-c", "gpg.format=ssh", "-c", "user.signingkey="+f.bob, "commit", "-S", "-qam",
		"test change\n\nVectorflow-Promotion: dev-to-test-9\nVectorflow-Sequence: 9\nVectorflow-Vector: "+vector)
	testutil.Git(t, clone, nil, "push", "-q", "origin", "main")

	var entries []controller.AuditEntry
	if err := json.Unmarshal([]byte(f.cli(t, "audit", "--stage", "test", "-o", "json", "--trust", f.controllerPublic)), &entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Subject == "test change" && (e.Verified || e.ApprovedBy != "" || e.PullRequest != "") {
			t.Errorf("audit believes the forged state: %+v", e)
		}
	}
}
