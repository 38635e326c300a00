package main

import (
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestRewoundStateBranchNeverRollsAStageBack: dev-to-test-3 ran and
// dev-to-test-2 was superseded; then someone force-pushes the state branch
// back to where dev-to-test-2 had just been approved. Every commit of that
// history is properly signed, so nothing there is flagged, but test's own
// history already holds sequence 3 of dev-to-test: dev-to-test-2 must not
// run, and test keeps dev-to-test-3's vector.
func TestRewoundStateBranchNeverRollsAStageBack(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	f.run(t)
	ps := f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionWaiting)
	wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionWaiting)
	older, newer := ps["dev-to-test-2"].Spec.Vector, ps["dev-to-test-3"].Spec.Vector
	if older == newer {
		t.Fatalf("dev-to-test-2 and -3 promote the same vector %s", older)
	}

	f.cli(t, "approve", "dev-to-test-2", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	rewound := f.stateTip(t)
	f.cli(t, "approve", "dev-to-test-3", "--signing-key", f.alice, "--identity", "Alice <alice@example.com>")
	f.run(t)
	ps = f.promotions(t)
	wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionSucceeded)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSuperseded)
	ran := ps["dev-to-test-3"].Status.Commit

	clone := f.clone(t)
	testutil.Git(t, clone, nil, "push", "-q", "--force", "origin", rewound+":refs/heads/"+"vectorflow/state")
	f.run(t)

	overlay := testutil.Git(t, f.clone(t), nil, "show", "origin/main:apps/overlays/test/kustomization.yaml")
	if !strings.Contains(overlay, "vectorflow.dev/vector: "+newer) {
		t.Errorf("test was rolled back from %s: its overlay now reads\n%s", newer, overlay)
	}
	ps = f.promotions(t)
	wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSuperseded)
	c := condition(ps["dev-to-test-2"], v1alpha1.SucceededCondition)
	if c.Reason != v1alpha1.PromotionSupersededInTargetReason || !strings.Contains(c.Message, "dev-to-test-3") || !strings.Contains(c.Message, ran[:12]) {
		t.Errorf("dev-to-test-2's Succeeded condition %+v: want %s naming dev-to-test-3 and its commit %s",
			c, v1alpha1.PromotionSupersededInTargetReason, ran)
	}
}

// stateTip is the state branch's tip on the server.
func (f *flowFixture) stateTip(t *testing.T) string {
	t.Helper()
	return f.tip(t, "refs/heads/vectorflow/state")
}

// mainTip is the commit the server's main branch is at.
func (f *flowFixture) mainTip(t *testing.T) string {
	t.Helper()
	return f.tip(t, "refs/heads/main")
}

func (f *flowFixture) tip(t *testing.T, ref string) string {
	t.Helper()
	out := testutil.Git(t, t.TempDir(), nil, "ls-remote", f.srv.HTTPURLWithCredentials("acme.git"), ref)
	fields := strings.Fields(out)
	if len(fields) == 0 {
		t.Fatalf("no %s on the server: %q", ref, out)
	}
	return fields[0]
}
