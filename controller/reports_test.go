package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

func TestReportQueueKeepsTheNewestReportPerRevision(t *testing.T) {
	dev := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps-dev", Namespace: "flux-system"}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	failed := deployments.Report{Deployment: dev, Revision: "a", Outcome: deployments.Failed, At: t0.Add(time.Minute)}
	stale := deployments.Report{Deployment: dev, Revision: "a", Outcome: deployments.Healthy, At: t0}
	other := deployments.Report{Deployment: dev, Revision: "b", Outcome: deployments.Healthy, At: t0}

	c := Controller{opts: Options{Clock: func() time.Time { return t0.Add(time.Hour) }}}
	c.ReportDeployment(failed)
	c.ReportDeployment(other)
	c.ReportDeployment(stale) // older than failed: ignored
	got := c.takeDeploymentReports()
	if diff := cmp.Diff([]deployments.Report{failed, other}, got); diff != "" {
		t.Errorf("queued reports (-want +got):\n%s", diff)
	}
	if left := c.takeDeploymentReports(); len(left) != 0 {
		t.Errorf("take left %d reports behind", len(left))
	}

	newer := deployments.Report{Deployment: dev, Revision: "a", Outcome: deployments.Healthy, At: t0.Add(2 * time.Minute)}
	c.ReportDeployment(newer)
	c.requeueReports([]deployments.Report{failed, other})
	got = c.takeDeploymentReports()
	if diff := cmp.Diff([]deployments.Report{newer, other}, got); diff != "" {
		t.Errorf("after requeue (-want +got):\n%s", diff)
	}
}

// TestReportQueueDropsAReportOlderThanOneAPassTook: the state records when
// a revision's status last changed, not each repeat of it, so a report
// older than a repeat a pass already took (Flux's retries, a webhook body
// sent again) must stop here: a failed, failed-again, late-healthy
// sequence would otherwise make the stage Active.
func TestReportQueueDropsAReportOlderThanOneAPassTook(t *testing.T) {
	dev := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps-dev", Namespace: "flux-system"}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	report := func(outcome deployments.Outcome, d time.Duration) deployments.Report {
		return deployments.Report{Deployment: dev, Revision: "a", Outcome: outcome, At: t0.Add(d)}
	}

	c := Controller{opts: Options{Clock: func() time.Time { return t0.Add(time.Hour) }}}
	c.ReportDeployment(report(deployments.Failed, 0))
	c.takeDeploymentReports()
	again := report(deployments.Failed, 2*time.Minute)
	c.ReportDeployment(again)
	c.takeDeploymentReports()
	c.ReportDeployment(report(deployments.Healthy, time.Minute)) // sent before again, arrived after
	late := report(deployments.Healthy, time.Minute)
	late.Revision = "main@sha1:a" // Flux's way of writing it
	c.ReportDeployment(late)
	if got := c.takeDeploymentReports(); len(got) != 0 {
		t.Errorf("a report older than one a pass took was queued: %+v", got)
	}

	// A pass that fails puts back what it took: still the newest.
	c.ReportDeployment(report(deployments.Healthy, 3*time.Minute))
	taken := c.takeDeploymentReports()
	c.requeueReports(taken)
	if diff := cmp.Diff(taken, c.takeDeploymentReports()); diff != "" {
		t.Errorf("requeued reports (-want +got):\n%s", diff)
	}
}

func TestReportQueueIsBounded(t *testing.T) {
	c := Controller{opts: Options{Clock: time.Now}}
	dev := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps-dev"}
	for i := range maxQueuedReports + 5 {
		c.ReportDeployment(deployments.Report{Deployment: dev, Revision: string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	if got := len(c.takeDeploymentReports()); got != maxQueuedReports {
		t.Errorf("queue held %d reports, want the bound %d", got, maxQueuedReports)
	}
	if got := len(c.reports.newest); got != maxQueuedReports {
		t.Errorf("queue remembered the time of %d reports, want the bound %d", got, maxQueuedReports)
	}
}

// TestReportQueueTakesAReportFromAClockAheadAsMadeOnArrival: a report
// dated after it arrived (its deployer's clock runs ahead) is queued as
// made when it arrived, so a true report of its revision made since is
// not dropped as older.
func TestReportQueueTakesAReportFromAClockAheadAsMadeOnArrival(t *testing.T) {
	dev := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps-dev", Namespace: "flux-system"}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := Controller{opts: Options{Clock: func() time.Time { return now }}}
	ahead := deployments.Report{Deployment: dev, Revision: "a", Outcome: deployments.Healthy, At: now.Add(24 * time.Hour)}
	c.ReportDeployment(ahead)
	arrived := ahead
	arrived.At = now
	if diff := cmp.Diff([]deployments.Report{arrived}, c.takeDeploymentReports()); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
	now = now.Add(time.Minute)
	failed := deployments.Report{Deployment: dev, Revision: "a", Outcome: deployments.Failed, At: now}
	c.ReportDeployment(failed)
	if diff := cmp.Diff([]deployments.Report{failed}, c.takeDeploymentReports()); diff != "" {
		t.Errorf("the failure made after the early report arrived (-want +got):\n%s", diff)
	}
}
