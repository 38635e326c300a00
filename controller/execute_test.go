package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRefusedPushFailsThePromotion: a remote that refuses the push for good
// (here git itself, refusing to move the checked-out branch of a non-bare
// repository) fails the promotion with the remote's reason instead of
// retrying it until the deadline, and the pass settles.
func TestRefusedPushFailsThePromotion(t *testing.T) {
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", "-A")
	testutil.Git(t, dir, nil, "commit", "-qm", "acme")

	w := signedWriter(t)
	c, err := New(Options{URL: dir, Branch: "main", Writer: w})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunUntilStable(context.Background(), 10); err != nil {
		t.Fatalf("the pass did not settle: %v", err)
	}
	repo, err := source.Open(dir, source.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
	if err != nil {
		t.Fatal(err)
	}
	p := state.Promotions["latest-to-dev-1"]
	if p == nil {
		t.Fatalf("no latest-to-dev-1 on the state branch: %v", keys.Sorted(state.Promotions))
	}
	if got := reconcilers.DeriveState(p); got != v1alpha1.PromotionFailed {
		t.Fatalf("latest-to-dev-1 is %s, want Failed", got)
	}
	cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)
	if cond.Reason != v1alpha1.PromotionFailedReason || !strings.Contains(cond.Message, "checked out") {
		t.Errorf("Succeeded condition %+v: want PromotionFailed naming the refusal", cond)
	}
}
