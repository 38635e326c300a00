package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestInitScaffoldsARepositoryThatPromotes: what init writes validates,
// and on a real git server with real keys it runs the tour: run --once
// promotes a vector to dev on its own and offers it to test; the approver
// named at init approves, and the next run promotes it to test.
func TestInitScaffoldsARepositoryThatPromotes(t *testing.T) {
	for _, deployer := range []string{"--flux", "--argocd"} {
		t.Run(deployer, func(t *testing.T) {
			keys := t.TempDir()
			alice := testutil.NewSSHKey(t, nil)
			ctl := testutil.NewSSHKey(t, nil)
			alicePub := writeFile(t, keys, "alice.pub", []byte(alice.AuthorizedKey))
			aliceKey := writeFile(t, keys, "alice", alice.PrivatePEM)
			ctlPub := writeFile(t, keys, "controller.pub", []byte(ctl.AuthorizedKey))
			ctlKey := writeFile(t, keys, "controller", ctl.PrivatePEM)

			dir := filepath.Join(t.TempDir(), "shop")
			f := &flowFixture{}
			out := f.cliNoRepo(t, "init", dir, "--approver", "alice="+alicePub, "--controller-key", ctlPub, deployer)
			if !strings.Contains(out, "wrote ") {
				t.Fatalf("init printed %q", out)
			}
			for _, p := range []string{"README.md", "apps/base/kustomization.yaml", "apps/overlays/dev/kustomization.yaml",
				"apps/overlays/test/kustomization.yaml", "apps/overlays/prod/kustomization.yaml", "vectorflow/promotions.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
					t.Errorf("init wrote no %s: %v", p, err)
				}
			}
			readme := readFile(t, filepath.Join(dir, "README.md"))
			for _, want := range []string{"ssh-keygen", "--signing-key", "spec.approval.approvers"} {
				if !strings.Contains(readme, want) {
					t.Errorf("README.md says nothing of %q", want)
				}
			}
			switch deployer {
			case "--flux":
				if k := readFile(t, filepath.Join(dir, "clusters", "shop", "shop-test.yaml")); !strings.Contains(k, "kind: Kustomization") || !strings.Contains(k, "path: ./apps/overlays/test") {
					t.Errorf("the Flux Kustomization of test:\n%s", k)
				}
			case "--argocd":
				if a := readFile(t, filepath.Join(dir, "argocd", "applicationset.yaml")); !strings.Contains(a, "kind: ApplicationSet") || !strings.Contains(a, `name: "shop-{{.path.basename}}"`) {
					t.Errorf("the ApplicationSet:\n%s", a)
				}
			}
			if out := f.cliNoRepo(t, "validate", dir); !strings.Contains(out, "no problems") {
				t.Fatalf("validate of what init wrote:\n%s", out)
			}

			// The tour, on a git server.
			srv := testutil.StartGitServer(t)
			srv.InitRepo(t, dir, "main", "shop.git")
			f = &flowFixture{srv: srv, url: srv.HTTPURL("shop.git"), controllerPublic: ctlPub}
			t.Setenv("VECTORFLOW_GIT_USERNAME", srv.Username)
			t.Setenv("VECTORFLOW_GIT_PASSWORD", srv.Password)
			f.cli(t, "run", "--once", "--signing-key", ctlKey)
			ps := f.promotions(t)
			wantState(t, ps, "latest-to-dev-1", v1alpha1.PromotionSucceeded)
			wantState(t, ps, "dev-to-test-1", v1alpha1.PromotionWaiting)
			f.cli(t, "approve", "dev-to-test-1", "--signing-key", aliceKey, "--identity", "Alice <alice@example.com>")
			f.cli(t, "run", "--once", "--signing-key", ctlKey)
			ps = f.promotions(t)
			wantState(t, ps, "dev-to-test-1", v1alpha1.PromotionSucceeded)
			wantState(t, ps, "test-to-prod-1", v1alpha1.PromotionWaiting)
			// The controller's key, listed as the landscape's signer, makes
			// the promotion commits verify.
			if audit := f.cli(t, "audit", "--stage", "test"); !regexp.MustCompile(`dev-to-test-1 .* verified \(vectorflow\) +verified`).MatchString(audit) {
				t.Errorf("audit --strict of test:\n%s", audit)
			}
		})
	}
}

// TestInitNeverReplacesAFile: a non-empty directory is refused; with
// --force init adds what is missing and keeps, and names, every file that
// exists.
func TestInitNeverReplacesAFile(t *testing.T) {
	keys := t.TempDir()
	alicePub := writeFile(t, keys, "alice.pub", []byte(testutil.NewSSHKey(t, nil).AuthorizedKey))
	dir := t.TempDir()
	mine := "# my own\n"
	if err := os.MkdirAll(filepath.Join(dir, "vectorflow"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "vectorflow"), "template.yaml", []byte(mine))

	f := &flowFixture{}
	if out, err := f.cliNoRepoE("init", dir, "--approver", "alice="+alicePub); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("init into a non-empty directory: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
		t.Fatal("the refused init wrote README.md")
	}
	out := f.cliNoRepo(t, "init", dir, "--approver", "alice="+alicePub, "--force")
	if !strings.Contains(out, "kept "+filepath.Join(dir, "vectorflow", "template.yaml")) {
		t.Errorf("init --force does not name the file it kept:\n%s", out)
	}
	if got := readFile(t, filepath.Join(dir, "vectorflow", "template.yaml")); got != mine {
		t.Errorf("init --force replaced vectorflow/template.yaml:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Errorf("init --force did not add README.md: %v", err)
	}

	// An armored OpenPGP key is as good as an SSH key line.
	pgp := writeFile(t, keys, "bob.asc", testutil.NewOpenPGPKey(t, "bob", "bob@example.com", nil).PublicArmored)
	withPGP := filepath.Join(t.TempDir(), "pgp")
	f.cliNoRepo(t, "init", withPGP, "--approver", "alice="+alicePub, "--approver", "bob="+pgp, "--controller-key", pgp)
	if out := f.cliNoRepo(t, "validate", withPGP); !strings.Contains(out, "no problems") {
		t.Fatalf("validate of a scaffold with an OpenPGP approver:\n%s", out)
	}
	if out, err := f.cliNoRepoE("init", t.TempDir(), "--approver", "alice="+writeFile(t, keys, "alice", []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"))); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("init with a private key as the approver's: %v\n%s", err, out)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"init", t.TempDir()}, "give at least one approver"},
		{[]string{"init", t.TempDir(), "--approver", "alice=" + filepath.Join(keys, "missing.pub")}, "missing.pub"},
		{[]string{"init", t.TempDir(), "--approver", "Alice=" + alicePub}, "want NAME=FILE"},
		{[]string{"init", t.TempDir(), "--approver", "alice=" + alicePub, "--name", "Not_A_Name"}, "--name"},
		{[]string{"init", t.TempDir(), "--approver", "alice=" + alicePub, "--flux", "--argocd"}, "none of the others can be"},
	} {
		if out, err := f.cliNoRepoE(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("vectorflow %v: %v, want an error saying %q\n%s", tt.args, err, tt.want, out)
		}
	}
}
