package deployments_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

func TestCommitStatusContext(t *testing.T) {
	tests := []struct {
		name string
		d    v1alpha1.DeploymentReference
		want string
	}{
		{"flux kustomization, lowercased as flux does", v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "Apps-Prod", Namespace: "flux-system"}, "kustomization/apps-prod/*"},
		{"argo cd application", v1alpha1.DeploymentReference{Kind: "Application", Name: "shop-prod", Namespace: "argocd"}, "continuous-delivery/shop-prod"},
		{"configured", v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps", CommitStatus: &v1alpha1.CommitStatusSource{Context: "prod-eu/kustomization/apps"}}, "prod-eu/kustomization/apps"},
		{"configured empty falls back", v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps", CommitStatus: &v1alpha1.CommitStatusSource{}}, "kustomization/apps/*"},
		{"unknown kind", v1alpha1.DeploymentReference{Kind: "HelmRelease", Name: "apps"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deployments.CommitStatusContext(tt.d); got != tt.want {
				t.Errorf("CommitStatusContext(%+v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestFromCommitStatuses(t *testing.T) {
	const rev = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	apps := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps", Namespace: "flux-system"}
	// What Flux's notification-controller posts for Kustomization apps
	// through a Provider whose uid starts with 0c9c2e41.
	flux := func(state, desc string, at time.Time) forge.CommitStatus {
		return forge.CommitStatus{Context: "kustomization/apps/0c9c2e41", State: state, Description: desc, At: at}
	}
	ci := forge.CommitStatus{Context: "continuous-integration/jenkins", State: forge.CommitStatusSuccess, Description: "build passed", At: t0.Add(time.Hour)}
	report := func(o deployments.Outcome, reason, msg string, at time.Time) deployments.Report {
		return deployments.Report{Deployment: apps, Revision: rev, Outcome: o, Reason: reason, Message: msg, At: at, Channel: deployments.ChannelCommitStatus}
	}
	tests := []struct {
		name     string
		d        v1alpha1.DeploymentReference
		statuses []forge.CommitStatus
		want     *deployments.Report
		wantErr  string
	}{
		{name: "no statuses", d: apps},
		{name: "only other contexts", d: apps, statuses: []forge.CommitStatus{ci}},
		{name: "another kustomization's status", d: apps, statuses: []forge.CommitStatus{
			{Context: "kustomization/apps-canary/0c9c2e41", State: forge.CommitStatusSuccess, At: t0}}},
		{name: "success is healthy", d: apps, statuses: []forge.CommitStatus{ci, flux(forge.CommitStatusSuccess, "reconciliation succeeded", t0)},
			want: new(report(deployments.Healthy, "CommitStatusSuccess", "kustomization/apps/0c9c2e41: reconciliation succeeded", t0))},
		{name: "failure is failed", d: apps, statuses: []forge.CommitStatus{flux(forge.CommitStatusFailure, "health check failed", t0)},
			want: new(report(deployments.Failed, "CommitStatusFailure", "kustomization/apps/0c9c2e41: health check failed", t0))},
		{name: "error is failed", d: apps, statuses: []forge.CommitStatus{flux(forge.CommitStatusError, "reconciliation failed", t0)},
			want: new(report(deployments.Failed, "CommitStatusError", "kustomization/apps/0c9c2e41: reconciliation failed", t0))},
		{name: "pending is progressing", d: apps, statuses: []forge.CommitStatus{flux(forge.CommitStatusPending, "progressing", t0)},
			want: new(report(deployments.Progressing, "CommitStatusPending", "kustomization/apps/0c9c2e41: progressing", t0))},
		{name: "the newest wins, whatever the order", d: apps, statuses: []forge.CommitStatus{
			flux(forge.CommitStatusPending, "progressing", t0),
			flux(forge.CommitStatusSuccess, "reconciliation succeeded", t0.Add(2*time.Minute)),
			flux(forge.CommitStatusFailure, "health check failed", t0.Add(time.Minute)),
		}, want: new(report(deployments.Healthy, "CommitStatusSuccess", "kustomization/apps/0c9c2e41: reconciliation succeeded", t0.Add(2*time.Minute)))},
		{name: "a later failure overrides an earlier success", d: apps, statuses: []forge.CommitStatus{
			flux(forge.CommitStatusFailure, "health check failed", t0.Add(time.Minute)),
			flux(forge.CommitStatusSuccess, "reconciliation succeeded", t0),
		}, want: new(report(deployments.Failed, "CommitStatusFailure", "kustomization/apps/0c9c2e41: health check failed", t0.Add(time.Minute)))},
		{name: "within one second the higher id wins", d: apps, statuses: []forge.CommitStatus{
			{ID: 7, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusPending, Description: "progressing", At: t0},
			{ID: 9, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusSuccess, Description: "reconciliation succeeded", At: t0},
			{ID: 8, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusFailure, Description: "health check failed", At: t0},
		}, want: new(report(deployments.Healthy, "CommitStatusSuccess", "kustomization/apps/0c9c2e41: reconciliation succeeded", t0))},
		{name: "a later time wins over a higher id", d: apps, statuses: []forge.CommitStatus{
			{ID: 9, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusSuccess, Description: "reconciliation succeeded", At: t0},
			{ID: 8, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusFailure, Description: "health check failed", At: t0.Add(time.Second)},
		}, want: new(report(deployments.Failed, "CommitStatusFailure", "kustomization/apps/0c9c2e41: health check failed", t0.Add(time.Second)))},
		{name: "on equal times the first listed wins", d: apps, statuses: []forge.CommitStatus{
			flux(forge.CommitStatusFailure, "health check failed", t0),
			flux(forge.CommitStatusSuccess, "reconciliation succeeded", t0),
		}, want: new(report(deployments.Failed, "CommitStatusFailure", "kustomization/apps/0c9c2e41: health check failed", t0))},
		{name: "target URL in the message", d: apps, statuses: []forge.CommitStatus{
			{Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusSuccess, Description: "ok", TargetURL: "https://flux.example.com/apps", At: t0}},
			want: new(report(deployments.Healthy, "CommitStatusSuccess", "kustomization/apps/0c9c2e41: ok (https://flux.example.com/apps)", t0))},
		{name: "argo cd's catalog context", d: v1alpha1.DeploymentReference{Kind: "Application", Name: "shop"}, statuses: []forge.CommitStatus{
			{Context: "continuous-delivery/shop", State: forge.CommitStatusSuccess, Description: "deployed", At: t0}},
			want: &deployments.Report{Deployment: v1alpha1.DeploymentReference{Kind: "Application", Name: "shop"}, Revision: rev, Outcome: deployments.Healthy,
				Reason: "CommitStatusSuccess", Message: "continuous-delivery/shop: deployed", At: t0, Channel: deployments.ChannelCommitStatus}},
		{name: "bad configured glob", d: v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps", CommitStatus: &v1alpha1.CommitStatusSource{Context: "[apps"}},
			statuses: []forge.CommitStatus{ci}, wantErr: `spec.deployment.commitStatus.context "[apps"`},
		{name: "kind without a default", d: v1alpha1.DeploymentReference{Kind: "HelmRelease", Name: "apps"},
			statuses: []forge.CommitStatus{ci}, wantErr: "set spec.deployment.commitStatus.context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := deployments.FromCommitStatuses(tt.d, rev, tt.statuses)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if ok {
					t.Errorf("got report %+v, want none", got)
				}
				return
			}
			if !ok {
				t.Fatalf("no report, want %+v", *tt.want)
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
