package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// TestForgedStateCommitIsRefused: someone with push access to the state
// branch lifts a waiting promotion's approval gate in an unsigned commit.
// The controller refuses to decide on top of it, so nothing is promoted, and
// says which commit and what to do.
func TestForgedStateCommitIsRefused(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	if p := f.promotions(t)["dev-to-test-2"]; p.Status.State != v1alpha1.PromotionWaiting {
		t.Fatalf("dev-to-test-2 is %s, want Waiting", p.Status.State)
	}

	// The forgery: dev-to-test-2 made Ready by editing its file.
	dir := f.stateClone(t)
	file := filepath.Join(dir, "promotions", "dev-to-test", "dev-to-test-2.yaml")
	b := readFile(t, file)
	forged := strings.Replace(b, "requireApproval: true", "requireApproval: false", 1)
	if forged == b {
		t.Fatalf("dev-to-test-2 does not require approval:\n%s", b)
	}
	writeFile(t, filepath.Dir(file), filepath.Base(file), []byte(forged))
	bad := f.commitState(t, dir, "", "nothing to see here")

	out, err := f.cliE("run", "--once", "--signing-key", f.controller)
	if err == nil || !strings.Contains(err.Error(), bad[:12]) || !strings.Contains(err.Error(), "unsigned") ||
		!strings.Contains(err.Error(), "promotions/dev-to-test/dev-to-test-2.yaml") {
		t.Fatalf("run on a forged state branch: err %v, want the forged commit %s named, unsigned\n%s", err, bad[:12], out)
	}
	f.wantNotExecuted(t, "test", "dev-to-test-2")
}

// TestApproverOfAnotherConfigCannotEditState is rule 1 of issue 9: alice
// approves dev-to-test only. She marks test-to-prod-1 approved by bob in a
// commit signed with her own key. The controller refuses it, naming the
// commit and alice, and prod is untouched. A commit signed by the
// controller's key that does not restore the last trusted content does not
// heal the branch; `git revert` of both, signed with the controller's key
// by the git binary, does (rule 5).
func TestApproverOfAnotherConfigCannotEditState(t *testing.T) {
	f := newFlowFixtureWith(t, flowOptions{sshController: true, bobApprovesProd: true})
	f.run(t)
	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSucceeded)
	wantState(t, ps, "test-to-prod-1", v1alpha1.PromotionWaiting)

	// alice forges bob's approval of test-to-prod-1, signed by her.
	dir := f.stateClone(t)
	file := filepath.Join(dir, "promotions", "test-to-prod", "test-to-prod-1.yaml")
	var p v1alpha1.VectorPromotion
	if err := yaml.Unmarshal([]byte(readFile(t, file)), &p); err != nil {
		t.Fatal(err)
	}
	res, err := reconcilers.Approve(p, "bob", time.Now())
	if err != nil || !res.Changed {
		t.Fatalf("forge the approval: %v %+v", err, res)
	}
	data, err := yaml.Marshal(res.Promotion)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(file), filepath.Base(file), data)
	bad := f.commitState(t, dir, f.alice, "approve test-to-prod-1")

	out, err := f.cliE("run", "--once", "--signing-key", f.controller)
	if err == nil {
		t.Fatalf("run executed a promotion alice approved for bob:\n%s", out)
	}
	t.Logf("the refusal: %v", err)
	for _, want := range []string{bad[:12], "promotions/test-to-prod/test-to-prod-1.yaml", "signed by alice",
		"alice is an approver of dev-to-test", "revert"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	f.wantNotExecuted(t, "prod", "test-to-prod-1")
	if _, err := f.cliE("get", "promotions", "--trust", f.controllerPublic); err == nil || !strings.Contains(err.Error(), bad[:12]) {
		t.Errorf("get promotions on a tainted state branch: %v, want a refusal naming %s", err, bad[:12])
	}
	table := f.cli(t, "get", "promotions", "--unverified", "--trust", f.controllerPublic)
	if !strings.Contains(table, "VERIFIED") || !lineEnds(table, "test-to-prod-1", "no") || !lineEnds(table, "dev-to-test-2", "yes") {
		t.Errorf("get promotions --unverified does not mark the forged promotion alone:\n%s", table)
	}

	// The controller's key signing a commit that keeps the forgery does not
	// clear it.
	dir = f.stateClone(t)
	writeFile(t, dir, "NOTES.md", []byte("looked at it\n"))
	keep := f.commitState(t, dir, f.controller, "notes")
	if _, err := f.cliE("run", "--once", "--signing-key", f.controller); err == nil || !strings.Contains(err.Error(), bad[:12]) {
		t.Fatalf("run after a controller-signed commit %s that keeps the forgery: %v, want the forged commit named", keep[:12], err)
	}

	// The documented remedy: revert both, signed with the controller's key.
	testutil.Git(t, dir, nil, "-c", "gpg.format=ssh", "-c", "user.signingkey="+f.controller, "-c", "commit.gpgsign=true",
		"revert", "--no-edit", keep, bad)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:vectorflow/state")
	f.run(t)
	wantState(t, f.promotions(t), "test-to-prod-1", v1alpha1.PromotionWaiting)
	f.wantNotExecuted(t, "prod", "test-to-prod-1")

	// The branch is trusted again: bob's own approval goes through.
	f.cli(t, "approve", "test-to-prod-1", "--signing-key", f.bob, "--identity", "Bob <bob@example.com>")
	f.run(t)
	wantState(t, f.promotions(t), "test-to-prod-1", v1alpha1.PromotionSucceeded)
}

// TestDeepForgedHistoryIsRefused is rule 2 of issue 9: an unsigned forged
// approval buried under 2,001 unsigned commits that only add files under
// approvals/ is found however deep it is.
func TestDeepForgedHistoryIsRefused(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	dir := f.stateClone(t)
	file := filepath.Join(dir, "promotions", "dev-to-test", "dev-to-test-2.yaml")
	var p v1alpha1.VectorPromotion
	if err := yaml.Unmarshal([]byte(readFile(t, file)), &p); err != nil {
		t.Fatal(err)
	}
	res, err := reconcilers.Approve(p, "alice", time.Now())
	if err != nil || !res.Changed {
		t.Fatalf("forge the approval: %v %+v", err, res)
	}
	forged, err := yaml.Marshal(res.Promotion)
	if err != nil {
		t.Fatal(err)
	}

	// One git fast-import stream: the forgery, then 2,001 commits adding
	// one file under approvals/ each.
	var stream strings.Builder
	blob := func(path string, data []byte) {
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", path, len(data), data)
	}
	commit := func(n int, msg string) {
		fmt.Fprintf(&stream, "commit refs/heads/vectorflow/state\ncommitter Mallory <mallory@example.com> %d +0000\ndata %d\n%s\n",
			1764000000+n, len(msg), msg)
	}
	parent := strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))
	commit(0, "tidy up")
	fmt.Fprintf(&stream, "from %s\n", parent)
	blob("promotions/dev-to-test/dev-to-test-2.yaml", forged)
	for i := 1; i <= 2001; i++ {
		commit(i, fmt.Sprintf("note %d", i))
		blob(fmt.Sprintf("approvals/notes/%d.txt", i), []byte(fmt.Sprintf("note %d\n", i)))
	}
	fastImport := exec.Command("git", "fast-import", "--quiet")
	fastImport.Dir, fastImport.Stdin = dir, strings.NewReader(stream.String())
	if out, err := fastImport.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	testutil.Git(t, dir, nil, "push", "-q", "origin", "vectorflow/state:vectorflow/state")
	bad := strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "vectorflow/state~2001"))

	out, err := f.cliE("run", "--once", "--signing-key", f.controller)
	if err == nil || !strings.Contains(err.Error(), bad[:12]) || !strings.Contains(err.Error(), "unsigned") {
		t.Fatalf("run over a forgery 2,001 commits deep: %v, want commit %s named\n%s", err, bad[:12], out)
	}
	f.wantNotExecuted(t, "test", "dev-to-test-2")
}

// TestPromoteRequest: `promote` is a request signed by an approver of the
// config; the controller turns a valid one into exactly one promotion and
// drops any other, saying why.
func TestPromoteRequest(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	before := len(f.promotions(t))

	out, err := f.cliE("promote", "--config", "dev-to-test", "--signing-key", f.mallory, "--identity", "Mallory <mallory@example.com>")
	if err == nil || !strings.Contains(err.Error(), "not one of the approvers of dev-to-test") {
		t.Fatalf("promote by a non-approver: %v, want a refusal\n%s", err, out)
	}

	// mallory pushes a request by hand, signed with her key.
	dir := f.stateClone(t)
	req := "apiVersion: vectorflow.dev/v1alpha1\nkind: PromotionRequest\nconfig: dev-to-test\nrequestedBy: Mallory <mallory@example.com>\nrequestedAt: \"2026-12-01T10:00:00Z\"\n"
	if err := os.MkdirAll(filepath.Join(dir, "requests", "dev-to-test"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "requests", "dev-to-test"), "by-hand.yaml", []byte(req))
	f.commitState(t, dir, f.mallory, "promote dev-to-test")
	out = f.cli(t, "run", "--once", "--signing-key", f.controller)
	if !strings.Contains(out, "requests/dev-to-test/by-hand.yaml") || !strings.Contains(out, "not one of the approvers of dev-to-test") {
		t.Errorf("run does not say why mallory's request was dropped:\n%s", out)
	}
	if n := len(f.promotions(t)); n != before {
		t.Fatalf("mallory's request made %d promotions", n-before)
	}
	if files := f.stateFiles(t, "requests"); files != "" {
		t.Errorf("the refused request is still on the state branch: %s", files)
	}

	// alice's request makes one promotion, once.
	out = f.cli(t, "promote", "--config", "dev-to-test", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	if !strings.Contains(out, "requested a promotion of dev-to-test") || !strings.Contains(out, "next pass") {
		t.Fatalf("promote printed %q", out)
	}
	f.run(t)
	f.run(t)
	ps := f.promotions(t)
	if len(ps) != before+1 {
		t.Fatalf("alice's request made %d promotions, want 1", len(ps)-before)
	}
	name := fmt.Sprintf("dev-to-test-%d", before)
	if _, ok := ps[name]; !ok {
		t.Fatalf("no %s after alice's request: %v", name, ps)
	}
	wantState(t, ps, name, v1alpha1.PromotionWaiting)
	if files := f.stateFiles(t, "requests"); files != "" {
		t.Errorf("the consumed request is still on the state branch: %s", files)
	}

	// An automatic config has no approvers: promote cannot check the key
	// locally, and the controller takes the request only from its own key.
	automatic := func() int {
		n := 0
		for p := range f.promotions(t) {
			if strings.HasPrefix(p, "latest-to-dev-") {
				n++
			}
		}
		return n
	}
	before = automatic()
	f.cli(t, "promote", "--config", "latest-to-dev", "--signing-key", f.mallory, "--identity", "Mallory <mallory@example.com>")
	out = f.cli(t, "run", "--once", "--signing-key", f.controller)
	if !strings.Contains(out, "not signed by a trusted state signer") {
		t.Errorf("run does not say why mallory's request for latest-to-dev was dropped:\n%s", out)
	}
	if n := automatic(); n != before {
		t.Fatalf("mallory's request for an automatic config made %d promotions", n-before)
	}
	f.cli(t, "promote", "--config", "latest-to-dev", "--signing-key", f.controller, "--identity", "Operator <ops@example.com>")
	f.run(t)
	if n := automatic(); n != before+1 {
		t.Fatalf("the controller key's request for latest-to-dev made %d promotions, want 1", n-before)
	}
}

// TestGetVerifiesTheStateBranch: get checks the state branch like the
// controller, with the --trust keys when no Landscape names signers, and
// says so when it knows no key at all.
func TestGetVerifiesTheStateBranch(t *testing.T) {
	f := newFlowFixtureWith(t, flowOptions{noSigners: true})
	f.run(t)
	cmd := newRootCommand()
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"get", "promotions", "--repo", f.url})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "unverified") || !strings.Contains(stdout.String(), "dev-to-test-2") {
		t.Errorf("get with no trusted key: want the table and a warning on stderr\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if out := f.cli(t, "get", "promotions", "--trust", f.controllerPublic); strings.Contains(out, "unverified") || strings.Contains(out, "VERIFIED") {
		t.Errorf("get with the controller's key on a trusted branch:\n%s", out)
	}

	dir := f.stateClone(t)
	writeFile(t, filepath.Join(dir, "promotions", "dev-to-test"), "dev-to-test-9.yaml", []byte("kind: VectorPromotion\n"))
	bad := f.commitState(t, dir, f.mallory, "one more")
	out, err := f.cliE("get", "promotions", "--trust", f.controllerPublic)
	if err == nil || !strings.Contains(err.Error(), bad[:12]) || !strings.Contains(err.Error(), "signed by an unknown key") {
		t.Fatalf("get --trust on a branch mallory wrote: %v, want her commit %s named\n%s", err, bad[:12], out)
	}
}

// stateClone clones the state branch with the git binary.
func (f *flowFixture) stateClone(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "vectorflow/state", f.srv.HTTPURLWithCredentials("acme.git"), ".")
	return dir
}

// commitState commits everything in the state clone dir, signed with the
// SSH key file (unsigned when empty), pushes it, and returns the commit.
func (f *flowFixture) commitState(t *testing.T, dir, sshKey, msg string) string {
	t.Helper()
	testutil.Git(t, dir, nil, "add", "-A")
	args := []string{"commit", "-q", "-m", msg}
	if sshKey != "" {
		args = append([]string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + sshKey}, append(args, "-S")...)
	}
	testutil.Git(t, dir, nil, args...)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:vectorflow/state")
	return strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))
}

// stateFiles lists the files under dir on the state branch.
func (f *flowFixture) stateFiles(t *testing.T, dir string) string {
	t.Helper()
	clone := f.stateClone(t)
	return strings.TrimSpace(testutil.Git(t, clone, nil, "ls-files", dir))
}

func (f *flowFixture) wantNotExecuted(t *testing.T, stage, promotion string) {
	t.Helper()
	clone := f.clone(t)
	if log := testutil.Git(t, clone, nil, "log", "--format=%B", "--", "apps/overlays/"+stage); strings.Contains(log, "Vectorflow-Promotion: "+promotion+"\n") {
		t.Fatalf("%s was executed into %s:\n%s", promotion, stage, log)
	}
}

// lineEnds reports whether the table row of name ends with the field want.
func lineEnds(table, name, want string) bool {
	for _, l := range strings.Split(table, "\n") {
		if fields := strings.Fields(l); len(fields) > 0 && fields[0] == name {
			return fields[len(fields)-1] == want
		}
	}
	return false
}

// TestConfigFileCannotWriteStatus: whoever writes the config repository
// puts a `status:` on a config the state branch does not hold yet, with a
// promotion history that never happened. Statuses are vectorflow's to
// write, on the state branch: validate and run name the file, the object
// and the field, and the forged history never reaches the state.
func TestConfigFileCannotWriteStatus(t *testing.T) {
	f := newFlowFixture(t)
	forged := "status:\n  sequence: 7\n  promotionHistory:\n    - vector: acme:forged\n      promotion: latest-to-dev-7\n" +
		"      sequence: 7\n      state: Succeeded\n      reason: PromotionSucceeded\n      finishedAt: \"2026-11-30T12:00:00Z\"\n"
	f.editFile(t, "vectorflow/promotions.yaml", func(s string) string {
		head, tail, ok := strings.Cut(s, "    landscape: dev\n---\n")
		if !ok || !strings.Contains(head, "name: latest-to-dev\n") {
			t.Fatalf("the quickstart's latest-to-dev changed; update this test:\n%s", s)
		}
		return head + "    landscape: dev\n" + forged + "---\n" + tail
	}, "latest-to-dev has been promoted before, honest")

	want := []string{"vectorflow/promotions.yaml", "VectorPromotionConfig/latest-to-dev", "status"}
	for _, args := range [][]string{{"validate"}, {"run", "--once", "--signing-key", f.controller}} {
		out, err := f.cliE(args...)
		for _, w := range want {
			if err == nil || !strings.Contains(out+err.Error(), w) {
				t.Fatalf("vectorflow %s on a config with a status: err %v, want %q named\n%s", args[0], err, w, out)
			}
		}
	}
	if refs := testutil.Git(t, f.clone(t), nil, "ls-remote", "origin", "vectorflow/state"); strings.TrimSpace(refs) != "" {
		clone := f.stateClone(t)
		if grep, _ := testutil.GitE(clone, nil, "grep", "-l", "acme:forged"); strings.TrimSpace(grep) != "" {
			t.Fatalf("the forged history reached the state branch in %s", grep)
		}
	}
}
