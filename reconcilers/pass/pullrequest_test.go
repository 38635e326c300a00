package pass

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

// TestDecidePullRequests walks dev-to-test promotions through pull-request
// approval, one decision at a time, with the forge's facts as inputs: what
// the core asks the shell to open and close, when a review or a merge
// approves, and how a merged stale pull request is reported.
func TestDecidePullRequests(t *testing.T) {
	opened := func(n int) v1alpha1.PullRequestStatus {
		return v1alpha1.PullRequestStatus{Number: n, URL: fmt.Sprintf("https://git.example.com/acme/pulls/%d", n),
			Branch: fmt.Sprintf("vectorflow/promote/dev-to-test-%d", n), HeadSHA: fmt.Sprintf("head%d", n), State: v1alpha1.PullRequestOpen}
	}
	reviewedAt := t0.Add(30 * time.Second)
	type step struct {
		merge      string
		devVector  string
		testVector string
		in         func(*Inputs)
		check      func(t *testing.T, d Decision)
	}
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "merge forge: a waiting promotion gets a pull request once; a review alone does nothing; the merge approves and starts it",
		steps: []step{{
			devVector: "acme:v1",
			check: func(t *testing.T, d Decision) {
				passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				wantActions(t, d, PullRequestAction{Kind: OpenPullRequest, Promotion: "dev-to-test-1"})
			},
		}, {
			devVector: "acme:v1",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-1": opened(1)}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				if diff := cmp.Diff(&v1alpha1.PullRequestStatus{Number: 1, URL: "https://git.example.com/acme/pulls/1",
					Branch: "vectorflow/promote/dev-to-test-1", HeadSHA: "head1", State: "open"}, p.Status.PullRequest); diff != "" {
					t.Errorf("status.pullRequest (-want +got):\n%s", diff)
				}
				wantActions(t, d)
			},
		}, {
			devVector: "acme:v1",
			in: func(in *Inputs) {
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "open", HeadSHA: "head1", Reviewer: "alice", ReviewedAt: reviewedAt}}
			},
			check: func(t *testing.T, d Decision) {
				passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				wantActions(t, d)
			},
		}, {
			// Merged, but the snapshot does not show it on the target yet.
			devVector: "acme:v1",
			in: func(in *Inputs) {
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "merged", HeadSHA: "head1", MergedBy: "bob", Reviewer: "alice", ReviewedAt: reviewedAt}}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				if p.Status.PullRequest.State != "merged" {
					t.Errorf("pull request state %q, want merged", p.Status.PullRequest.State)
				}
			},
		}, {
			devVector: "acme:v1", testVector: "acme:v1",
			in: func(in *Inputs) {
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "merged", HeadSHA: "head1", MergedBy: "bob", Reviewer: "alice", ReviewedAt: reviewedAt}}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionInProgress, "acme:v1")
				if a := p.Status.Approval; a == nil || a.ApprovedBy != "alice" || !a.ApprovedAt.Time.Equal(reviewedAt) {
					t.Errorf("status.approval %+v, want alice at %s", a, reviewedAt)
				}
				if !slices.Contains(d.Start, "dev-to-test-1") {
					t.Errorf("Start %v: the merged promotion must run so its merged commit is recorded", d.Start)
				}
				wantActions(t, d) // merged: nothing to close
			},
		}},
	}, {
		name: "merge forge: a merge without a counting review is approved by whoever merged",
		steps: []step{{devVector: "acme:v1"}, {
			devVector: "acme:v1", testVector: "acme:v1",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-1": opened(1)}
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "merged", MergedBy: "bob"}}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionInProgress, "acme:v1")
				if a := p.Status.Approval; a == nil || a.ApprovedBy != "bob" {
					t.Errorf("status.approval %+v, want bob", a)
				}
			},
		}},
	}, {
		name: "merge vectorflow: a counting review approves; the superseded pull request is closed pointing to the newer one, then the executed one",
		steps: []step{{merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v1"}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-1": opened(1)}
			},
			check: func(t *testing.T, d Decision) {
				passtest.WantPromotion(t, d.State, "dev-to-test-2", v1alpha1.PromotionWaiting, "acme:v2")
				wantActions(t, d, PullRequestAction{Kind: OpenPullRequest, Promotion: "dev-to-test-2"})
			},
		}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-2": opened(2)}
				in.PullRequests = map[string]PullRequestFacts{
					"dev-to-test-1": {State: "open", HeadSHA: "head1"},
					"dev-to-test-2": {State: "open", HeadSHA: "head2", Reviewer: "alice", ReviewedAt: reviewedAt},
				}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-2", v1alpha1.PromotionInProgress, "acme:v2")
				if a := p.Status.Approval; a == nil || a.ApprovedBy != "alice" {
					t.Errorf("status.approval %+v, want alice", a)
				}
				passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionSuperseded, "acme:v1")
				wantActions(t, d, PullRequestAction{Kind: ClosePullRequest, Promotion: "dev-to-test-1", Number: 1,
					Comment: "Superseded by dev-to-test-2 (pull request #2 https://git.example.com/acme/pulls/2), which promotes acme:v2; acme:v1 will not be promoted."})
			},
		}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2", testVector: "acme:v2",
			in: func(in *Inputs) {
				in.Results = map[string]reconcilers.Result{"dev-to-test-2": {Outcome: reconcilers.OutcomeSucceeded, Commit: "c0ffee"}}
				in.PullRequests = map[string]PullRequestFacts{
					"dev-to-test-1": {State: "closed", HeadSHA: "head1"},
					"dev-to-test-2": {State: "open", HeadSHA: "head2", Reviewer: "alice", ReviewedAt: reviewedAt},
				}
			},
			check: func(t *testing.T, d Decision) {
				passtest.WantPromotion(t, d.State, "dev-to-test-2", v1alpha1.PromotionSucceeded, "acme:v2")
				wantActions(t, d, PullRequestAction{Kind: ClosePullRequest, Promotion: "dev-to-test-2", Number: 2,
					Comment: "vectorflow promoted acme:v2 to Stage/test/test after the approval of alice with the signed commit c0ffee on the target branch; this pull request is no longer needed."})
			},
		}},
	}, {
		name: "merge vectorflow: a review of a head someone else pushed approves nothing",
		steps: []step{{merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v1"}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v1",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-1": opened(1)}
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "open", HeadSHA: "pushed-by-mallory", Reviewer: "alice"}}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				if p.Status.PullRequest.HeadSHA != "head1" {
					t.Errorf("headSHA %q, want the pushed promotion commit head1", p.Status.PullRequest.HeadSHA)
				}
			},
		}},
	}, {
		name: "a pull request closed unmerged approves nothing and is not reopened",
		steps: []step{{devVector: "acme:v1"}, {
			devVector: "acme:v1",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-1": opened(1)}
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "closed", Reviewer: "alice"}}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				if p.Status.PullRequest.State != "closed" {
					t.Errorf("state %q, want closed", p.Status.PullRequest.State)
				}
				wantActions(t, d) // a rejected (closed) pull request is not reopened
				// ...and the promotion says why it waits.
				c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.PullRequestClosedReason ||
					!strings.Contains(c.Message, "pull request #1") || !strings.Contains(c.Message, "vectorflow promote") {
					t.Errorf("Approved condition %+v: want False, PullRequestClosed, naming #1 and what to do", c)
				}
			},
		}, {
			devVector: "acme:v1",
			in: func(in *Inputs) {
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "open", HeadSHA: "head1"}}
			},
			check: func(t *testing.T, d Decision) {
				p := passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionWaiting, "acme:v1")
				if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition); c == nil || c.Reason != v1alpha1.WaitingForApprovalReason {
					t.Errorf("after the pull request was reopened, Approved %+v: want WaitingForApproval", c)
				}
			},
		}},
	}, {
		name: "a merged pull request of a superseded promotion makes the config not Ready, steadily",
		steps: []step{{merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v1"}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-1": opened(1)}
			},
		}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2",
			in: func(in *Inputs) {
				in.OpenedPullRequests = map[string]v1alpha1.PullRequestStatus{"dev-to-test-2": opened(2)}
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-2": {State: "open", HeadSHA: "head2", Reviewer: "alice"}}
			},
		}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2", testVector: "acme:v1",
			in: func(in *Inputs) {
				in.PullRequests = map[string]PullRequestFacts{"dev-to-test-1": {State: "merged", HeadSHA: "head1", MergedBy: "mallory"}}
			},
			check: func(t *testing.T, d Decision) {
				passtest.WantPromotion(t, d.State, "dev-to-test-1", v1alpha1.PromotionSuperseded, "acme:v1")
				wantStale(t, d)
			},
		}, {
			merge: v1alpha1.PullRequestMergeVectorflow, devVector: "acme:v2", testVector: "acme:v1",
			check: func(t *testing.T, d Decision) {
				c := wantStale(t, d)
				if !c.LastTransitionTime.Time.Equal(t0.Add(3 * time.Minute)) {
					t.Errorf("lastTransitionTime %s moved; want the first report's %s", c.LastTransitionTime, t0.Add(3*time.Minute))
				}
			},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := reconcilers.NewState()
			for i, s := range tt.steps {
				spec := passtest.DefaultSnapshotSpec()
				spec.DevVector, spec.TestVector = s.devVector, s.testVector
				snap := spec.Build()
				cfg := snap.Configs["dev-to-test"]
				cfg.Spec.Approval.PullRequest = &v1alpha1.PullRequestApproval{Forge: v1alpha1.ForgeGitea,
					APIURL: "https://git.example.com/api/v1", TokenEnv: "GITEA_TOKEN", Merge: s.merge}
				in := Inputs{Snapshot: snap, State: state}
				if s.in != nil {
					s.in(&in)
				}
				d := decide(t, in, t0.Add(time.Duration(i)*time.Minute))
				if s.check != nil {
					t.Run(fmt.Sprintf("step %d", i+1), func(t *testing.T) { s.check(t, d) })
				}
				state = passtest.RoundTrip(t, d.State)
			}
		})
	}
}

func wantActions(t *testing.T, d Decision, want ...PullRequestAction) {
	t.Helper()
	if diff := cmp.Diff(want, d.PullRequestActions); diff != "" {
		t.Errorf("PullRequestActions (-want +got):\n%s", diff)
	}
}

func wantStale(t *testing.T, d Decision) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(d.State.Configs["dev-to-test"].Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.StalePromotionMergedReason ||
		!strings.Contains(c.Message, "pull request #1 (https://git.example.com/acme/pulls/1) of superseded promotion dev-to-test-1 was merged anyway") {
		t.Fatalf("Ready of dev-to-test %+v, want False/%s naming pull request #1", c, v1alpha1.StalePromotionMergedReason)
	}
	return *c
}
