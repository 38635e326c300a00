package pass

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

func TestApprovalCountWaiting(t *testing.T) {
	r := func(who string) v1alpha1.ApprovalRecord { return v1alpha1.ApprovalRecord{ApprovedBy: who} }
	for _, tt := range []struct {
		count ApprovalCount
		want  string
	}{
		{ApprovalCount{Needed: 2, Grants: []v1alpha1.ApprovalRecord{r("alice")}}, "approved by alice; 1 more approval of dev-to-test's approvers needed"},
		{ApprovalCount{Needed: 4, Grants: []v1alpha1.ApprovalRecord{r("alice"), r("bob")}, Refusals: []string{"approval commit abc is not signed"}},
			"approved by alice and bob; 2 more approvals of dev-to-test's approvers needed; approval commit abc is not signed"},
		{ApprovalCount{Needed: 1, Refusals: []string{"x", "y"}}, "x; y"},
		{ApprovalCount{Needed: 1, Refusals: []string{"a", "b", "c", "d", "e"}}, "a; b; c; 2 more approval files refused"},
	} {
		if got := tt.count.Waiting("dev-to-test"); got != tt.want {
			t.Errorf("Waiting = %q, want %q", got, tt.want)
		}
	}
}

// TestDecideKeepsAnotherChannelsWord: a short count does not overwrite the
// Approved condition a pull request set (closed unmerged), which would flip
// it back and forth on every pass.
func TestDecideKeepsAnotherChannelsWord(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	state := decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0).State
	p := state.Promotions["dev-to-test-1"]
	closed := metav1.Condition{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.PullRequestClosedReason,
		Message: "pull request #1 was closed without merging", LastTransitionTime: metav1.NewTime(t0)}
	meta.SetStatusCondition(&p.Status.Conditions, closed)
	alice := v1alpha1.ApprovalRecord{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0), Commit: "c1"}
	d := decide(t, Inputs{Snapshot: spec.Build(), State: state, Approvals: map[string]ApprovalCount{
		"dev-to-test-1": {Needed: 2, Grants: []v1alpha1.ApprovalRecord{alice}}}}, t0.Add(time.Minute))
	got := d.State.Promotions["dev-to-test-1"]
	if diff := cmp.Diff(&closed, meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ApprovedCondition)); diff != "" {
		t.Errorf("Approved condition (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]v1alpha1.ApprovalRecord{alice}, got.Status.Approvals); diff != "" {
		t.Errorf("status.approvals (-want +got):\n%s", diff)
	}
}
