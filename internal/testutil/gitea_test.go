package testutil

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStartGitea checks the helpers do what the forge tests rely on: users
// with working tokens, a repository that accepts a push over HTTP, and a
// branch protection requiring approvals.
func TestStartGitea(t *testing.T) {
	g := StartGitea(t)
	user, password, token := g.CreateUser(t, "carol")

	status, body, err := g.API(http.MethodGet, "/user", TokenAuth(token), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /user with carol's token: %d %s %v", status, body, err)
	}
	var me struct {
		Login string `json:"login"`
	}
	if err := json.Unmarshal(body, &me); err != nil || me.Login != user {
		t.Fatalf("token belongs to %q (%v), want %q", me.Login, err, user)
	}

	cloneURL := g.CreateRepo(t, user, "overlays", token)
	if want := g.URL + "/carol/overlays.git"; cloneURL != want {
		t.Errorf("clone URL %q, want %q", cloneURL, want)
	}
	dir := t.TempDir()
	Git(t, dir, nil, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("stage overlays\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, nil, "add", ".")
	Git(t, dir, nil, "commit", "-q", "-m", "init")
	Git(t, dir, nil, "push", "-q", CredentialURL(t, cloneURL, user, password), "main")
	g.WaitForBranch(t, user, "overlays", "main", token)

	g.ProtectBranch(t, user, "overlays", "main", 2, token)
	status, body, err = g.API(http.MethodGet, "/repos/carol/overlays/branch_protections/main", TokenAuth(token), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET branch protection: %d %s %v", status, body, err)
	}
	var rule struct {
		RuleName          string `json:"rule_name"`
		EnablePush        bool   `json:"enable_push"`
		RequiredApprovals int    `json:"required_approvals"`
	}
	if err := json.Unmarshal(body, &rule); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(struct {
		RuleName          string `json:"rule_name"`
		EnablePush        bool   `json:"enable_push"`
		RequiredApprovals int    `json:"required_approvals"`
	}{"main", false, 2}, rule); diff != "" {
		t.Errorf("branch protection (-want +got):\n%s", diff)
	}

	// The protection is real: a direct push to main is now refused.
	Git(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "direct")
	if _, err := GitE(dir, nil, "push", "-q", CredentialURL(t, cloneURL, user, password), "main"); err == nil || !strings.Contains(err.Error(), "protected") {
		t.Errorf("direct push to protected main: %v, want a refusal naming the protection", err)
	}
}
