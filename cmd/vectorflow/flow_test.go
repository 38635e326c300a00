package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestPromotionFlow drives the whole story from the CLI against the
// quickstart on a real git server over HTTP, with real signatures: a
// template change makes a vector, it is auto-promoted to dev, a promotion
// to test waits, an untrusted approval is refused, a trusted one lets the
// controller write a signed commit with trailers, and audit verifies it.
func TestPromotionFlow(t *testing.T) {
	f := newFlowFixture(t)

	// First pass: the template assembles a vector, latest-to-dev writes it to
	// dev, and dev-to-test offers dev's vectors to test (waiting).
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "latest-to-dev-1", v1alpha1.PromotionSucceeded)
	wantState(t, ps, "dev-to-test-1", v1alpha1.PromotionWaiting)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionWaiting)
	first := ps["latest-to-dev-1"].Spec.Vector

	// A template change makes a new vector that flows to dev on its own.
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	f.run(t)
	ps = f.promotions(t)
	wantState(t, ps, "latest-to-dev-2", v1alpha1.PromotionSucceeded)
	second := ps["latest-to-dev-2"].Spec.Vector
	if second == first {
		t.Fatalf("the template change made no new vector (%s)", second)
	}
	wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionWaiting)
	if got := ps["dev-to-test-3"].Spec.Vector; got != second {
		t.Fatalf("dev-to-test-3 promotes %s, want dev's new vector %s", got, second)
	}

	// An approval signed by a key the config does not trust is refused:
	// approve itself refuses it, and a file mallory adds with git is
	// refused by the controller.
	if out, err := f.cliE("approve", "dev-to-test-3", "--signing-key", f.mallory, "--identity", "Mallory <mallory@example.com>"); err == nil {
		t.Fatalf("approve with an untrusted key succeeded:\n%s", out)
	}
	f.pushApprovalFile(t, f.mallory, "approvals/dev-to-test-3/mallory.yaml", approvalYAML("dev-to-test-3", second))
	f.run(t)
	ps = f.promotions(t)
	wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionWaiting)
	if c := condition(ps["dev-to-test-3"], v1alpha1.ApprovedCondition); c.Reason != v1alpha1.ApprovalRefusedReason ||
		!strings.Contains(c.Message, "not one of the approvers") {
		t.Fatalf("untrusted approval: Approved condition %+v, want ApprovalRefused naming the untrusted key", c)
	}

	// Alice, a trusted approver, approves: the controller writes the signed
	// promotion commit into test and supersedes the older candidates.
	out := f.cli(t, "approve", "dev-to-test-3", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	if !strings.Contains(out, "approved dev-to-test-3") {
		t.Fatalf("approve printed %q", out)
	}
	f.run(t)
	ps = f.promotions(t)
	wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionSucceeded)
	wantState(t, ps, "dev-to-test-1", v1alpha1.PromotionSuperseded)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSuperseded)
	if a := ps["dev-to-test-3"].Status.Approval; a == nil || a.ApprovedBy != "alice" {
		t.Fatalf("dev-to-test-3 approval %+v, want approvedBy alice", a)
	}

	// Approving a superseded promotion changes nothing and says so.
	out = f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	if !strings.Contains(out, "Superseded") {
		t.Fatalf("approving a superseded promotion printed %q", out)
	}

	// The test overlay's newest commit is the signed promotion with trailers.
	clone := f.clone(t)
	commit := strings.TrimSpace(testutil.Git(t, clone, nil, "log", "-1", "--format=%H", "--", "apps/overlays/test"))
	if commit != ps["dev-to-test-3"].Status.Commit {
		t.Fatalf("newest test overlay commit %s, promotion recorded %s", commit, ps["dev-to-test-3"].Status.Commit)
	}
	if out, err := testutil.GitVerifyCommit(clone, testutil.GPGHome(t, f.controllerKey), nil, commit); err != nil ||
		!strings.Contains(out, "Good signature") {
		t.Fatalf("git verify-commit %s: %v\n%s", commit, err, out)
	}
	trailers := testutil.Git(t, clone, nil, "log", "-1", "--format=%(trailers:only,unfold)", commit)
	for _, want := range []string{"Vectorflow-Promotion: dev-to-test-3", "Vectorflow-Sequence: 3", "Vectorflow-Vector: " + second,
		"Vectorflow-Source: Stage/dev/dev", "Vectorflow-Target: Stage/test/test", "Approved-by: alice", "Approved-at: "} {
		if !strings.Contains(trailers, want) {
			t.Errorf("trailers of %s lack %q:\n%s", commit, want, trailers)
		}
	}
	diff := testutil.Git(t, clone, nil, "show", "--format=", commit, "--", "apps/overlays/test/kustomization.yaml")
	if !strings.Contains(diff, "+    vectorflow.dev/vector: "+second) {
		t.Errorf("the promotion commit does not set the vector annotation:\n%s", diff)
	}

	// The first auto-promotion to dev changed exactly what changed: the vector
	// annotation and service-a's tag, with the file's format preserved.
	devCommit := ps["latest-to-dev-1"].Status.Commit
	changed := testutil.Git(t, clone, nil, "show", "--format=", "--unified=0", devCommit)
	var removed, added []string
	for _, l := range strings.Split(changed, "\n") {
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			removed = append(removed, strings.TrimSpace(l[1:]))
		case strings.HasPrefix(l, "+"):
			added = append(added, strings.TrimSpace(l[1:]))
		}
	}
	if diff := cmp.Diff([]string{"vectorflow.dev/vector: acme:2026.11.3-090000000Z", `newTag: "1.0.1"`}, removed); diff != "" {
		t.Errorf("latest-to-dev-1 removed other lines than the changed values (-want +got):\n%s\n%s", diff, changed)
	}
	if diff := cmp.Diff([]string{"vectorflow.dev/vector: " + first, `newTag: "1.0.2"`}, added); diff != "" {
		t.Errorf("latest-to-dev-1 added other lines than the changed values (-want +got):\n%s\n%s", diff, changed)
	}

	// audit names the approver and verifies both the signature and the approval.
	var entries []controller.AuditEntry
	if err := json.Unmarshal([]byte(f.cli(t, "audit", "--stage", "test", "-o", "json")), &entries); err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 || entries[0].Promotion != "dev-to-test-3" {
		t.Fatalf("audit of test, newest first: %+v", entries)
	}
	e := entries[0]
	if e.ApprovedBy != "alice" || !e.SignatureVerified || !e.ApprovalVerified || e.Commit != commit {
		t.Fatalf("audit entry %+v: want approvedBy alice, signature and approval verified", e)
	}
	if last := entries[len(entries)-1]; last.Promotion != "" || last.SignatureVerified {
		t.Errorf("the fixture commit that created the overlay should show with no promotion and no verified signature: %+v", last)
	}
}

func wantState(t *testing.T, ps map[string]v1alpha1.VectorPromotion, name string, want v1alpha1.PromotionState) {
	t.Helper()
	p, ok := ps[name]
	if !ok {
		names := make([]string, 0, len(ps))
		for n := range ps {
			names = append(names, n)
		}
		t.Fatalf("no promotion %s; have %v", name, names)
	}
	if p.Status.State != want {
		t.Fatalf("%s is %s, want %s (conditions %+v)", name, p.Status.State, want, p.Status.Conditions)
	}
}

func condition(p v1alpha1.VectorPromotion, typ string) (c struct{ Reason, Message string }) {
	for _, cond := range p.Status.Conditions {
		if cond.Type == typ {
			c.Reason, c.Message = cond.Reason, cond.Message
		}
	}
	return c
}

// flowFixture is the quickstart on a git server, with a controller key, a
// trusted approver (alice) and an untrusted one (mallory).
type flowFixture struct {
	srv                             *testutil.GitServer
	url                             string
	controller, alice, mallory, bob string // signing key files
	controllerPublic                string // the controller's public key file
	controllerKey                   testutil.OpenPGPKey
}

// flowOptions change the quickstart before it is pushed.
type flowOptions struct {
	// sshController signs the controller's commits with an SSH key, so the
	// git binary can sign commits as the controller (a revert).
	sshController bool
	// bobApprovesProd makes bob, not alice, the approver of test-to-prod,
	// and lets test's vector go to prod at once (no updateDelay).
	bobApprovesProd bool
	// noSigners leaves the Landscapes without spec.signers.
	noSigners bool
}

func newFlowFixture(t *testing.T) *flowFixture {
	t.Helper()
	return newFlowFixtureWith(t, flowOptions{})
}

func newFlowFixtureWith(t *testing.T, o flowOptions) *flowFixture {
	t.Helper()
	keys := t.TempDir()
	f := &flowFixture{srv: testutil.StartGitServer(t)}
	f.controllerKey = testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	alice := testutil.NewSSHKey(t, nil)
	mallory := testutil.NewSSHKey(t, nil)
	bob := testutil.NewSSHKey(t, nil)
	f.controller = writeFile(t, keys, "controller.asc", f.controllerKey.PrivateArmored)
	controllerPublic := f.controllerKey.PublicArmored
	if o.sshController {
		k := testutil.NewSSHKey(t, nil)
		f.controller = writeFile(t, keys, "controller", k.PrivatePEM)
		controllerPublic = []byte(k.AuthorizedKey)
	}
	f.alice = writeFile(t, keys, "alice", alice.PrivatePEM)
	f.mallory = writeFile(t, keys, "mallory", mallory.PrivatePEM)
	f.bob = writeFile(t, keys, "bob", bob.PrivatePEM)

	dir := testutil.CopyDir(t, filepath.Join("..", "..", "examples", "quickstart"))
	promotions := readFile(t, filepath.Join(dir, "vectorflow", "promotions.yaml"))
	exampleKey := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBIKmQETi40xtnnFdhUcbxbea0XwaqKrvfMa/IPBVZrx alice@example.com"
	if !strings.Contains(promotions, exampleKey) {
		t.Fatal("the quickstart's example approver key changed; update this test")
	}
	if o.bobApprovesProd {
		head, prod, ok := strings.Cut(promotions, "name: test-to-prod\n")
		if !ok || !strings.Contains(prod, "updateDelay: 1h\n") || !strings.Contains(prod, "- name: alice\n") {
			t.Fatal("the quickstart's test-to-prod changed; update this test")
		}
		prod = strings.Replace(prod, "  updateDelay: 1h\n", "", 1)
		prod = strings.Replace(prod, "- name: alice\n", "- name: bob\n", 1)
		prod = strings.ReplaceAll(prod, exampleKey, strings.TrimSpace(bob.AuthorizedKey))
		promotions = head + "name: test-to-prod\n" + prod
	}
	writeFile(t, filepath.Join(dir, "vectorflow"), "promotions.yaml",
		[]byte(strings.ReplaceAll(promotions, exampleKey, strings.TrimSpace(alice.AuthorizedKey))))
	if !o.noSigners {
		writeFile(t, filepath.Join(dir, "vectorflow"), "landscapes.yaml", []byte(landscapesWithSigner(controllerPublic)))
	}
	f.controllerPublic = writeFile(t, keys, "controller.pub", controllerPublic)

	f.srv.InitRepo(t, dir, "main", "acme.git")
	f.url = f.srv.HTTPURL("acme.git")
	t.Setenv("VECTORFLOW_GIT_USERNAME", f.srv.Username)
	t.Setenv("VECTORFLOW_GIT_PASSWORD", f.srv.Password)
	t.Setenv("VECTORFLOW_SIGNING_PASSPHRASE", "")
	os.Unsetenv("VECTORFLOW_SIGNING_PASSPHRASE")
	return f
}

func landscapesWithSigner(publicKey []byte) string {
	var b strings.Builder
	for _, name := range []string{"dev", "test", "prod"} {
		b.WriteString("---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: " + name + "\nspec:\n  signers:\n    - name: vectorflow\n      publicKey: |\n")
		for _, line := range strings.Split(strings.TrimSpace(string(publicKey)), "\n") {
			b.WriteString("        " + line + "\n")
		}
	}
	return b.String()
}

// cli runs vectorflow in-process against the fixture's repository.
func (f *flowFixture) cli(t *testing.T, args ...string) string {
	t.Helper()
	out, err := f.cliE(args...)
	if err != nil {
		t.Fatalf("vectorflow %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (f *flowFixture) cliE(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--repo", f.url))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func (f *flowFixture) run(t *testing.T) {
	t.Helper()
	f.cli(t, "run", "--once", "--signing-key", f.controller)
}

func (f *flowFixture) promotions(t *testing.T) map[string]v1alpha1.VectorPromotion {
	t.Helper()
	var list v1alpha1.VectorPromotionList // a `kind: List`, whose items decode as promotions
	if err := json.Unmarshal([]byte(f.cli(t, "get", "promotions", "-o", "json", "--trust", f.controllerPublic)), &list); err != nil {
		t.Fatal(err)
	}
	m := map[string]v1alpha1.VectorPromotion{}
	for _, p := range list.Items {
		m[p.Name] = p
	}
	return m
}

func (f *flowFixture) clone(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", f.srv.HTTPURLWithCredentials("acme.git"), ".")
	return dir
}

// pushTemplateChange changes one component version of the template in a
// commit pushed by a person with the git binary.
func (f *flowFixture) pushTemplateChange(t *testing.T, component, from, to string) {
	t.Helper()
	dir := f.clone(t)
	file := filepath.Join(dir, "vectorflow", "template.yaml")
	old := readFile(t, file)
	needle := "name: " + component + "\n      version: \"" + from + "\""
	if !strings.Contains(old, needle) {
		t.Fatalf("template.yaml has no %q", needle)
	}
	writeFile(t, filepath.Dir(file), "template.yaml", []byte(strings.Replace(old, needle,
		"name: "+component+"\n      version: \""+to+"\"", 1)))
	testutil.Git(t, dir, nil, "commit", "-qam", "bump "+component+" to "+to)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
