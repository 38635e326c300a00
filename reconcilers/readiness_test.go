package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestSourceReadiness(t *testing.T) {
	withDeployment := &v1alpha1.Stage{Spec: v1alpha1.StageSpec{Deployment: devDeployment}}
	for _, tt := range []struct {
		readiness string
		stage     *v1alpha1.Stage
		want      string
	}{
		{"", withDeployment, v1alpha1.ReadinessActive},
		{"", &v1alpha1.Stage{}, v1alpha1.ReadinessAssigned},
		{"", nil, v1alpha1.ReadinessAssigned},
		{v1alpha1.ReadinessAssigned, withDeployment, v1alpha1.ReadinessAssigned},
		{v1alpha1.ReadinessActive, &v1alpha1.Stage{}, v1alpha1.ReadinessActive},
	} {
		if got := SourceReadiness(v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Readiness: tt.readiness}, tt.stage); got != tt.want {
			t.Errorf("readiness %q, deployment %v: got %s, want %s", tt.readiness, tt.stage != nil && tt.stage.Spec.Deployment != nil, got, tt.want)
		}
	}
}

func TestStageSourceState(t *testing.T) {
	src := v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "web", Landscape: "dev"}
	assigned := src
	assigned.Readiness = v1alpha1.ReadinessAssigned
	tests := []struct {
		name    string
		src     v1alpha1.SourceReference
		reports [][]StageReport
		want    SourceState
	}{
		{name: "assigned offers what the overlay names", src: assigned,
			want: SourceState{Vector: "app:3", Since: at(0)}},
		{name: "active waits for a report", src: src, reports: [][]StageReport{nil},
			want: SourceState{WaitingReason: v1alpha1.AwaitingDeploymentReason,
				Waiting: "waiting for Kustomization flux-system/web to report vector app:3 applied and healthy on stage dev/web"}},
		{name: "active offers the healthy vector while the assigned one rolls out", src: src,
			reports: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute)}},
			want: SourceState{Vector: "app:1", Since: at(10 * time.Minute), Active: true, WaitingReason: v1alpha1.AwaitingDeploymentReason,
				Waiting: "stage dev/web is assigned vector app:3, which Kustomization flux-system/web has not reported applied and healthy yet; the source offers the active vector app:1"}},
		{name: "active and assigned agree", src: src, reports: [][]StageReport{{healthy("r5", "app:3", 10*time.Minute)}},
			want: SourceState{Vector: "app:3", Since: at(10 * time.Minute), Active: true}},
		{name: "a failed newest report offers nothing", src: src,
			reports: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute), unhealthy("r5", "app:3", 20*time.Minute)}},
			want: SourceState{WaitingReason: v1alpha1.DeploymentUnhealthyReason,
				Waiting: "stage dev/web is not healthy (HealthCheckFailed: revision r5 (vector app:3) failed, reported by Kustomization flux-system/web: " +
					"timeout waiting for: [Deployment/web/web status: 'InProgress']); the source offers a vector again once Kustomization flux-system/web reports a revision applied and healthy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stageState(devDeployment, "app:3")
			observe(s, tt.reports...)
			if diff := cmp.Diff(tt.want, StageSourceState(tt.src, s.Stages["dev/web"])); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestActiveReadinessSoak drives a readiness-Active config over a stage
// whose deployer reports, with an injected clock: no candidate before the
// healthy report, none during updateDelay, and the delay restarts when the
// stage stops being healthy.
func TestActiveReadinessSoak(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	src := v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "web", Landscape: "dev"}
	w := &world{in: ConfigInput{Config: config(src), TargetVector: "app:0"}}
	w.in.Config.Spec.Approval = &v1alpha1.ApprovalPolicy{Required: ptrTo(false)}
	w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: time.Hour}
	step := func(now time.Duration, reports ...StageReport) ConfigPlan {
		t.Helper()
		ObserveStage(s, StageObservation{Landscape: "dev", Name: "web", Vector: "app:3", Commit: "r5", Reports: reports, Position: position}, at(now))
		w.in.Source = StageSourceState(src, s.Stages["dev/web"])
		return w.pass(t, at(now))
	}
	conditionReason := func(typ string) string {
		if c := findCondition(w.in.Config.Status.Conditions, typ); c != nil {
			return c.Reason
		}
		return ""
	}
	check := func(when string, plan ConfigPlan, created int, waiting, delayed string) {
		t.Helper()
		if len(plan.Create) != created {
			t.Errorf("%s: created %v, want %d", when, names(plan.Create), created)
		}
		if got := conditionReason(v1alpha1.WaitingForDeploymentCondition); got != waiting {
			t.Errorf("%s: WaitingForDeployment %q, want %q", when, got, waiting)
		}
		if got := conditionReason(v1alpha1.UpdateDelayedCondition); got != delayed {
			t.Errorf("%s: UpdateDelayed %q, want %q", when, got, delayed)
		}
	}
	check("before any report", step(0), 0, v1alpha1.AwaitingDeploymentReason, "")
	check("healthy, soak starts", step(10*time.Minute, healthy("r4", "app:3", 10*time.Minute)), 0, "", v1alpha1.UpdateDelayedReason)
	if c := findCondition(w.in.Config.Status.Conditions, v1alpha1.UpdateDelayedCondition); c != nil {
		want := "vector app:3 must stay active and healthy at the source until 2026-07-27T15:40:52Z (updateDelay 1h0m0s)"
		if c.Message != want {
			t.Errorf("UpdateDelayed says %q, want %q", c.Message, want)
		}
	}
	check("a failed report interrupts it", step(40*time.Minute, unhealthy("r5", "app:3", 40*time.Minute)), 0, v1alpha1.DeploymentUnhealthyReason, "")
	check("healthy again: the soak restarts", step(50*time.Minute, healthy("r5", "app:3", 50*time.Minute)), 0, "", v1alpha1.UpdateDelayedReason)
	check("when the first soak would have ended", step(70*time.Minute), 0, "", v1alpha1.UpdateDelayedReason)
	check("after the restarted soak", step(110*time.Minute), 1, "", "")
}

// TestActiveReadinessOutOfOrderReport: a late report on an older revision
// neither offers its vector nor restarts the soak.
func TestActiveReadinessOutOfOrderReport(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	src := v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "web", Landscape: "dev"}
	observe(s, []StageReport{healthy("r5", "app:3", 10*time.Minute)}, []StageReport{unhealthy("r2", "app:1", 20*time.Minute)},
		[]StageReport{healthy("r3", "app:2", 30*time.Minute)})
	want := SourceState{Vector: "app:3", Since: at(10 * time.Minute), Active: true}
	if diff := cmp.Diff(want, StageSourceState(src, s.Stages["dev/web"])); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func ptrTo[T any](v T) *T { return &v }
