package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestForgedStateCommitIsRefused: someone with push access to the state
// branch marks a waiting promotion approved in an unsigned commit. The
// controller refuses to decide on top of it, so nothing is promoted, and
// says which commit and what to do; an approver's own `promote` is trusted.
func TestForgedStateCommitIsRefused(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	if p := f.promotions(t)["dev-to-test-2"]; p.Status.State != v1alpha1.PromotionWaiting {
		t.Fatalf("dev-to-test-2 is %s, want Waiting", p.Status.State)
	}

	// An approver's manual promotion is a state commit signed with their key.
	out := f.cli(t, "promote", "--config", "dev-to-test", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	if !strings.Contains(out, "created dev-to-test-3") {
		t.Fatalf("promote printed %q", out)
	}
	f.run(t)

	// The forgery: dev-to-test-3 made Ready by editing its file.
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "vectorflow/state", f.srv.HTTPURLWithCredentials("acme.git"), ".")
	file := filepath.Join(dir, "promotions", "dev-to-test", "dev-to-test-3.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(b), "requireApproval: true", "requireApproval: false", 1)
	if forged == string(b) {
		t.Fatalf("dev-to-test-3 does not require approval:\n%s", b)
	}
	if err := os.WriteFile(file, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "nothing to see here")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:vectorflow/state")

	out, err = f.cliE("run", "--once", "--signing-key", f.controller)
	if err == nil || !strings.Contains(err.Error(), "not signed by a trusted state signer") ||
		!strings.Contains(err.Error(), "promotions/dev-to-test/dev-to-test-3.yaml") {
		t.Fatalf("run on a forged state branch: err %v, want the forged commit named\n%s", err, out)
	}
	clone := f.clone(t)
	if log := testutil.Git(t, clone, nil, "log", "--format=%B", "--", "apps/overlays/test"); strings.Contains(log, "Vectorflow-Promotion: dev-to-test-3") {
		t.Fatalf("the forged promotion was executed:\n%s", log)
	}
}
