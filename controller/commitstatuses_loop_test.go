package controller

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestCommitStatusesMakeAVectorActive closes the loop through a real Gitea,
// for deployers that cannot reach vectorflow: the quickstart lives on Gitea,
// dev names its Flux Kustomization with spec.deployment.commitStatus, and
// the controller promotes to dev. Nothing is active and dev-to-test
// (readiness Active) offers nothing until a commit status is posted on the
// promotion commit as Flux's notification-controller posts it; then dev's
// active vector is the promoted one, and dev-to-test offers it.
func TestCommitStatusesMakeAVectorActive(t *testing.T) {
	g := testutil.StartGitea(t)
	owner, password, token := g.CreateUser(t, "flux")
	cloneURL := g.CreateRepo(t, owner, "acme", token)
	t.Setenv(statusTokenEnv, token)

	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	stages := filepath.Join(dir, "vectorflow", "stages.yaml")
	data, err := os.ReadFile(stages)
	if err != nil {
		t.Fatal(err)
	}
	dev := "  landscape: dev\n  path: apps/overlays/dev\n"
	if !strings.Contains(string(data), dev) {
		t.Fatal("the quickstart's dev stage changed; update this test")
	}
	deployment := "  deployment:\n    kind: Kustomization\n    name: acme-dev\n    namespace: flux-system\n" +
		"    commitStatus: {forge: gitea, apiURL: " + g.APIURL() + ", tokenEnv: " + statusTokenEnv + "}\n"
	data = []byte(strings.Replace(string(data), dev, dev+deployment, 1))
	if err := os.WriteFile(stages, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vectorflow", "promotions.yaml"), []byte(closedLoopPromotions), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "acme")
	testutil.Git(t, dir, nil, "push", "-q", testutil.CredentialURL(t, cloneURL, owner, password), "main")
	g.WaitForBranch(t, owner, "acme", "main", token)

	w := signedWriter(t)
	auth := source.Auth{Username: owner, Password: password}
	c, err := New(Options{URL: cloneURL, Branch: "main", Writer: w, Auth: func(string) source.Auth { return auth }, Clock: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	repo, err := source.Open(cloneURL, auth)
	if err != nil {
		t.Fatal(err)
	}
	s := readDriftState(t, repo)
	vector := s.Stages["dev/dev"].Status.Vector
	if s.Promotions["latest-to-dev-1"] == nil || s.Promotions["latest-to-dev-1"].Status.State != v1alpha1.PromotionSucceeded {
		t.Fatalf("latest-to-dev-1 did not promote to dev: %+v", s.Promotions["latest-to-dev-1"])
	}
	if active := s.Stages["dev/dev"].Status.ActiveVector; active != "" {
		t.Errorf("dev claims %s active before any commit status", active)
	}
	if w := meta.FindStatusCondition(s.Configs["dev-to-test"].Status.Conditions, v1alpha1.WaitingForDeploymentCondition); w == nil || !strings.Contains(w.Message, "acme-dev") {
		t.Errorf("dev-to-test WaitingForDeployment %+v, want it to name Kustomization acme-dev", w)
	}
	head := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "ls-remote", testutil.CredentialURL(t, cloneURL, owner, password), "refs/heads/main"))
	head, _, _ = strings.Cut(head, "\t")

	// Flux's Gitea provider posts on the commit it applied.
	status, body, err := g.API(http.MethodPost, "/repos/"+owner+"/acme/statuses/"+head, testutil.TokenAuth(token), map[string]any{
		"state": "success", "context": "kustomization/acme-dev/0c9c2e41", "description": "reconciliation succeeded",
	})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("post the status: %d %s %v", status, body, err)
	}
	// The poll runs beside each pass and hands its report to the next.
	var st *v1alpha1.Stage
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		s = readDriftState(t, repo)
		if st = s.Stages["dev/dev"]; st.Status.ActiveVector != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Status.ActiveVector != vector || st.Status.ActiveRevision != head {
		t.Fatalf("dev active %q at %q, want %s at the promotion commit %s", st.Status.ActiveVector, st.Status.ActiveRevision, vector, head)
	}
	// updateDelay (30m) now counts from activeSince: the config says so.
	if d := meta.FindStatusCondition(s.Configs["dev-to-test"].Status.Conditions, v1alpha1.UpdateDelayedCondition); d == nil || !strings.Contains(d.Message, vector) {
		t.Errorf("dev-to-test UpdateDelayed %+v, want the soak of %s", d, vector)
	}
}
