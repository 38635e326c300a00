package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestUnreadableLandscapeRepository: a landscape whose repository cannot be
// read marks the configs that target it Ready=False, saying why, writes
// nothing there, and recovers by itself once the repository is back.
func TestUnreadableLandscapeRepository(t *testing.T) {
	srv := testutil.StartGitServer(t)
	prodRepo := filepath.Join(t.TempDir(), "prod.git")
	config := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	landscapes := filepath.Join(config, "vectorflow", "landscapes.yaml")
	b, err := os.ReadFile(landscapes)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(b), "name: prod\nspec: {}", "name: prod\nspec:\n  repository:\n    url: file://"+prodRepo+"\n    branch: main", 1)
	if moved == string(b) {
		t.Fatal("the quickstart's landscapes.yaml changed; update this test")
	}
	if err := os.WriteFile(landscapes, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.InitRepo(t, config, "main", "acme.git")

	w := signedWriter(t)
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	c, err := New(Options{URL: srv.HTTPURL("acme.git"), Branch: "main", Writer: w, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	ready := func() *metav1.Condition {
		t.Helper()
		if _, err := c.RunUntilStable(context.Background(), 20); err != nil {
			t.Fatal(err)
		}
		repo, err := source.Open(srv.HTTPURL("acme.git"), auth(""))
		if err != nil {
			t.Fatal(err)
		}
		_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
		if err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(state.Configs["test-to-prod"].Status.Conditions, v1alpha1.ReadyCondition)
	}

	cond := ready()
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.TargetNotFoundReason ||
		!strings.Contains(cond.Message, "cannot read the landscape repository") {
		t.Fatalf("test-to-prod Ready %+v: want False, TargetNotFound, saying the landscape repository cannot be read", cond)
	}

	// The prod repository appears: the config recovers on the next pass.
	testutil.Git(t, t.TempDir(), nil, "clone", "-q", "--bare", srv.BarePath("acme.git"), prodRepo)
	if cond := ready(); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("after the repository appeared, test-to-prod Ready %+v: want True", cond)
	}
}
