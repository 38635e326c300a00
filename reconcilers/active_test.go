package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

var devDeployment = &v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization, Name: "web", Namespace: "flux-system"}

// revisions r1..r5 of the stage's branch, oldest first.
var revisionPositions = map[string]int{"r1": 1, "r2": 2, "r3": 3, "r4": 4, "r5": 5}

func position(rev string) (int, bool) {
	p, ok := revisionPositions[rev]
	return p, ok
}

// stageState is a state holding stage dev/web, as observeStages leaves it:
// its overlay names vector since t0.
func stageState(deployment *v1alpha1.DeploymentReference, vector string) *State {
	s := NewState()
	since := mt(0)
	s.Stages["dev/web"] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:   v1alpha1.StageSpec{Landscape: "dev", Path: "web", Deployment: deployment},
		Status: v1alpha1.StageStatus{Vector: vector, VectorSince: &since, Commit: "r5"}}
	return s
}

func healthy(rev, vector string, d time.Duration) StageReport {
	return StageReport{Revision: rev, Outcome: deployments.Healthy, Reason: "ReconciliationSucceeded", Vector: vector, At: at(d)}
}

func unhealthy(rev, vector string, d time.Duration) StageReport {
	return StageReport{Revision: rev, Outcome: deployments.Failed, Reason: "HealthCheckFailed",
		Message: "timeout waiting for: [Deployment/web/web status: 'InProgress']", Vector: vector, At: at(d)}
}

// observe runs one pass per batch of reports over s, the overlay naming
// vector app:3, at t0+1h+i minutes.
func observe(s *State, batches ...[]StageReport) []string {
	var notes []string
	for i, reports := range batches {
		obs := StageObservation{Landscape: "dev", Name: "web", Vector: s.Stages["dev/web"].Status.Vector, Commit: "r5",
			Reports: reports, Position: position}
		notes = append(notes, ObserveStage(s, obs, at(time.Hour+time.Duration(i)*time.Minute))...)
	}
	return notes
}

// activeOf summarizes what a stage reports as running.
type activeOf struct {
	Vector, Revision string
	Since            *metav1.Time
	Active           metav1.ConditionStatus
	ActiveReason     string
	// Ready is each version's Ready status and reason, by vector.
	Ready map[string]string
	// Usages are the stage's own usages: reason -> vector.
	Usages map[string]string
}

func summarize(s *State) activeOf {
	st := s.Stages["dev/web"].Status
	out := activeOf{Vector: st.ActiveVector, Revision: st.ActiveRevision, Since: st.ActiveSince,
		Ready: map[string]string{}, Usages: map[string]string{}}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ActiveCondition); c != nil {
		out.Active, out.ActiveReason = c.Status, c.Reason
	}
	for _, sv := range s.StageVersions {
		c := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ReadyCondition)
		out.Ready[sv.Spec.Vector] = string(c.Status) + "/" + c.Reason + "@" + sv.Status.Revision
	}
	for _, u := range s.Usages {
		if !IsOwnUsage(u.Name) {
			continue
		}
		out.Usages[u.Spec.Reason] = s.StageVersions[u.Spec.StageVersionRef.Name].Spec.Vector
	}
	return out
}

func since(d time.Duration) *metav1.Time { t := mt(d); return &t }

func TestObserveStageActiveFromReports(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]StageReport
		want    activeOf
	}{
		{
			name:    "no report yet: nothing is active, the target is recorded",
			batches: [][]StageReport{nil},
			want: activeOf{Active: metav1.ConditionUnknown, ActiveReason: v1alpha1.AwaitingDeploymentReason,
				Ready:  map[string]string{"app:3": "Unknown/AwaitingDeployment@"},
				Usages: map[string]string{"target": "app:3"}},
		},
		{
			name:    "a healthy report makes the vector at its revision active",
			batches: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute)}},
			want: activeOf{Vector: "app:1", Revision: "r2", Since: since(10 * time.Minute), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready:        map[string]string{"app:1": "True/DeployedHealthy@r2", "app:3": "Unknown/AwaitingDeployment@"},
				Usages:       map[string]string{"target": "app:3", "active": "app:1"}},
		},
		{
			name:    "an older revision's report arriving later never overrides a newer one",
			batches: [][]StageReport{{healthy("r3", "app:2", 20*time.Minute)}, {healthy("r2", "app:1", 30*time.Minute)}},
			want: activeOf{Vector: "app:2", Revision: "r3", Since: since(20 * time.Minute), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready: map[string]string{"app:1": "True/DeployedHealthy@r2", "app:2": "True/DeployedHealthy@r3",
					"app:3": "Unknown/AwaitingDeployment@"},
				Usages: map[string]string{"target": "app:3", "active": "app:2"}},
		},
		{
			name:    "an older failure arriving later does not make the stage unhealthy",
			batches: [][]StageReport{{healthy("r3", "app:2", 20*time.Minute)}, {unhealthy("r2", "app:2", 30*time.Minute)}},
			want: activeOf{Vector: "app:2", Revision: "r3", Since: since(20 * time.Minute), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready:        map[string]string{"app:2": "True/DeployedHealthy@r3", "app:3": "Unknown/AwaitingDeployment@"},
				Usages:       map[string]string{"target": "app:3", "active": "app:2"}},
		},
		{
			// Flux's notification-controller posts each event on its own,
			// with retries, and a recorded webhook body can be sent again.
			name: "a healthy report older than a failure of its revision, arriving later, changes nothing",
			batches: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute)}, {unhealthy("r3", "app:3", 30*time.Minute)},
				{healthy("r3", "app:3", 20*time.Minute)}},
			want: activeOf{Vector: "app:1", Revision: "r2", Active: metav1.ConditionFalse, ActiveReason: "HealthCheckFailed",
				Ready:  map[string]string{"app:1": "True/DeployedHealthy@r2", "app:3": "False/HealthCheckFailed@r3"},
				Usages: map[string]string{"target": "app:3", "active": "app:1"}},
		},
		{
			name:    "a failure older than a healthy report of its revision, arriving later, changes nothing",
			batches: [][]StageReport{{healthy("r3", "app:3", 30*time.Minute)}, {unhealthy("r3", "app:3", 20*time.Minute)}},
			want: activeOf{Vector: "app:3", Revision: "r3", Since: since(30 * time.Minute), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready:        map[string]string{"app:3": "True/DeployedHealthy@r3"},
				Usages:       map[string]string{"target": "app:3", "active": "app:3"}},
		},
		{
			name:    "a newer failure of a revision reported healthy counts",
			batches: [][]StageReport{{healthy("r3", "app:3", 20*time.Minute)}, {unhealthy("r3", "app:3", 30*time.Minute)}},
			want: activeOf{Vector: "app:3", Revision: "r3", Active: metav1.ConditionFalse, ActiveReason: "HealthCheckFailed",
				Ready:  map[string]string{"app:3": "False/HealthCheckFailed@r3"},
				Usages: map[string]string{"target": "app:3", "active": "app:3"}},
		},
		{
			name:    "a failed rollout keeps the active vector to fall back to, not its soak",
			batches: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute)}, {unhealthy("r3", "app:3", 20*time.Minute)}},
			want: activeOf{Vector: "app:1", Revision: "r2", Active: metav1.ConditionFalse, ActiveReason: "HealthCheckFailed",
				Ready:  map[string]string{"app:1": "True/DeployedHealthy@r2", "app:3": "False/HealthCheckFailed@r3"},
				Usages: map[string]string{"target": "app:3", "active": "app:1"}},
		},
		{
			name: "healthy again after a failure: the soak restarts",
			batches: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute)}, {unhealthy("r3", "app:1", 20*time.Minute)},
				{healthy("r4", "app:1", 40*time.Minute)}},
			want: activeOf{Vector: "app:1", Revision: "r4", Since: since(40 * time.Minute), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready:        map[string]string{"app:1": "True/DeployedHealthy@r4", "app:3": "Unknown/AwaitingDeployment@"},
				Usages:       map[string]string{"target": "app:3", "active": "app:1"}},
		},
		{
			name:    "a newer healthy revision of the same vector keeps its soak",
			batches: [][]StageReport{{healthy("r2", "app:1", 10*time.Minute)}, {healthy("r4", "app:1", 40*time.Minute)}},
			want: activeOf{Vector: "app:1", Revision: "r4", Since: since(10 * time.Minute), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready:        map[string]string{"app:1": "True/DeployedHealthy@r4", "app:3": "Unknown/AwaitingDeployment@"},
				Usages:       map[string]string{"target": "app:3", "active": "app:1"}},
		},
		{
			name: "a revision not on the branch, a progressing report and one naming no vector change nothing",
			batches: [][]StageReport{{healthy("elsewhere", "app:1", 10*time.Minute),
				{Revision: "r4", Outcome: deployments.Progressing, Vector: "app:1"}, healthy("r4", "", 0)}},
			want: activeOf{Active: metav1.ConditionUnknown, ActiveReason: v1alpha1.AwaitingDeploymentReason,
				Ready:  map[string]string{"app:3": "Unknown/AwaitingDeployment@"},
				Usages: map[string]string{"target": "app:3"}},
		},
		{
			name:    "a report from a clock ahead does not outrank a later failure of its revision",
			batches: [][]StageReport{{healthy("r3", "app:3", 5*time.Hour)}, {unhealthy("r3", "app:3", 61*time.Minute)}},
			want: activeOf{Vector: "app:3", Revision: "r3", Active: metav1.ConditionFalse, ActiveReason: "HealthCheckFailed",
				Ready:  map[string]string{"app:3": "False/HealthCheckFailed@r3"},
				Usages: map[string]string{"target": "app:3", "active": "app:3"}},
		},
		{
			name:    "a report in the future counts from now",
			batches: [][]StageReport{{healthy("r2", "app:1", 5*time.Hour)}},
			want: activeOf{Vector: "app:1", Revision: "r2", Since: since(time.Hour), Active: metav1.ConditionTrue,
				ActiveReason: v1alpha1.DeployedHealthyReason,
				Ready:        map[string]string{"app:1": "True/DeployedHealthy@r2", "app:3": "Unknown/AwaitingDeployment@"},
				Usages:       map[string]string{"target": "app:3", "active": "app:1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stageState(devDeployment, "app:3")
			observe(s, tt.batches...)
			if diff := cmp.Diff(tt.want, summarize(s)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestObserveStageOrderIndependent applies the same reports in one batch in
// every order, and one by one in every order: what is active, and since
// when, never depends on the order they arrived in.
func TestObserveStageOrderIndependent(t *testing.T) {
	reports := []StageReport{healthy("r1", "app:1", 5*time.Minute), healthy("r2", "app:1", 10*time.Minute),
		unhealthy("r3", "app:2", 20*time.Minute), healthy("r4", "app:2", 30*time.Minute)}
	want := activeOf{Vector: "app:2", Revision: "r4", Since: since(30 * time.Minute), Active: metav1.ConditionTrue,
		ActiveReason: v1alpha1.DeployedHealthyReason,
		Ready: map[string]string{"app:1": "True/DeployedHealthy@r2", "app:2": "True/DeployedHealthy@r4",
			"app:3": "Unknown/AwaitingDeployment@"},
		Usages: map[string]string{"target": "app:3", "active": "app:2"}}
	permute(len(reports), func(order []int) {
		batch := make([]StageReport, len(reports))
		for i, j := range order {
			batch[i] = reports[j]
		}
		s := stageState(devDeployment, "app:3")
		observe(s, batch)
		if diff := cmp.Diff(want, summarize(s)); diff != "" {
			t.Errorf("one batch in order %v (-want +got):\n%s", order, diff)
		}
	})
	// One by one: an older report arriving after a newer one is ignored by
	// the stage, so only orders in which r4 comes after r3 leave r4's time
	// as the start of the soak... and the others too: r3 is older than r4.
	permute(len(reports), func(order []int) {
		s := stageState(devDeployment, "app:3")
		for _, j := range order {
			observe(s, []StageReport{reports[j]})
		}
		if diff := cmp.Diff(want, summarize(s)); diff != "" {
			t.Errorf("one by one in order %v (-want +got):\n%s", order, diff)
		}
	})
}

func TestObserveStageIdempotent(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	observe(s, []StageReport{healthy("r2", "app:1", 10*time.Minute), unhealthy("r3", "app:3", 20*time.Minute)})
	before := s.Clone()
	if notes := observe(s, []StageReport{healthy("r2", "app:1", 10*time.Minute), unhealthy("r3", "app:3", 20*time.Minute)}); len(notes) != 0 {
		t.Errorf("the same reports again noted %q", notes)
	}
	if diff := cmp.Diff(before, s); diff != "" {
		t.Errorf("the same reports again changed the state (-before +after):\n%s", diff)
	}
}

func TestObserveStageWithoutDeployment(t *testing.T) {
	s := stageState(nil, "app:3")
	observe(s, []StageReport{healthy("r2", "app:1", 10*time.Minute)})
	want := activeOf{Vector: "app:3", Revision: "r5", Since: since(0), Active: metav1.ConditionTrue, ActiveReason: v1alpha1.NoDeploymentReason,
		Ready:  map[string]string{"app:3": "True/NoDeployment@r5"},
		Usages: map[string]string{"target": "app:3", "active": "app:3"}}
	if diff := cmp.Diff(want, summarize(s)); diff != "" {
		t.Errorf("the overlay's vector is not what counts as active (-want +got):\n%s", diff)
	}
	// A deployment named later: nothing is known to run until it reports,
	// and the version the overlay names keeps its usages.
	s.Stages["dev/web"].Spec.Deployment = devDeployment
	observe(s, nil)
	got := summarize(s)
	if got.Vector != "" || got.Active != metav1.ConditionUnknown {
		t.Errorf("with a new spec.deployment the stage still claims %q active (%s)", got.Vector, got.Active)
	}
}

func TestObserveStageRecordsRenderAndLandedCommit(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	render := StageRender{Commit: "r5", Digest: "sha256:abc", Inventory: []v1alpha1.InventoryEntry{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}}}
	ObserveStage(s, StageObservation{Landscape: "dev", Name: "web", Vector: "app:3", Commit: "r5", LandedCommit: "r4", Render: &render}, at(0))
	sv := s.StageVersions[StageVersionName("dev", "web", "app:3")]
	want := v1alpha1.StageVersionSpec{Stage: "web", Landscape: "dev", Vector: "app:3", Commit: "r4", RenderDigest: "sha256:abc", Inventory: render.Inventory}
	if diff := cmp.Diff(want, sv.Spec); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{v1alpha1.StageNameLabel: "web", v1alpha1.VectorLabel: "app:3"}, sv.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// TestObserveStageAReportTimeAheadOnTheStateBranchHoldsNothing: a state
// branch written when a deployer's clock ran ahead holds a version's
// report time after now; a failure made since still counts.
func TestObserveStageAReportTimeAheadOnTheStateBranchHoldsNothing(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	obs := func(r StageReport) StageObservation {
		return StageObservation{Landscape: "dev", Name: "web", Vector: "app:3", Commit: "r5", Reports: []StageReport{r}, Position: position}
	}
	ObserveStage(s, obs(healthy("r3", "app:3", 5*time.Hour)), at(5*time.Hour))
	if got := summarize(s); got.Active != metav1.ConditionTrue {
		t.Fatalf("the healthy report made the stage %s, want True", got.Active)
	}
	ObserveStage(s, obs(unhealthy("r3", "app:3", 61*time.Minute)), at(62*time.Minute))
	want := activeOf{Vector: "app:3", Revision: "r3", Active: metav1.ConditionFalse, ActiveReason: "HealthCheckFailed",
		Ready:  map[string]string{"app:3": "False/HealthCheckFailed@r3"},
		Usages: map[string]string{"target": "app:3", "active": "app:3"}}
	if diff := cmp.Diff(want, summarize(s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestObserveStageRecordsNoReportTimeAfterNow: a report dated after the
// pass that applies it is recorded as made then, so the state branch
// never holds a report time from the future.
func TestObserveStageRecordsNoReportTimeAfterNow(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	ObserveStage(s, StageObservation{Landscape: "dev", Name: "web", Vector: "app:3", Commit: "r5",
		Reports: []StageReport{healthy("r3", "app:3", 5*time.Hour)}, Position: position}, at(time.Hour))
	sv := s.StageVersions[StageVersionName("dev", "web", "app:3")]
	if sv == nil || sv.Status.ReportedAt == nil || !sv.Status.ReportedAt.Time.Equal(at(time.Hour)) {
		t.Errorf("StageVersion %+v, want its report recorded at %s, when the pass applied it", sv, at(time.Hour))
	}
}
