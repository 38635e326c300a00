package reconcilers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func config(source v1alpha1.SourceReference) v1alpha1.VectorPromotionConfig {
	return v1alpha1.VectorPromotionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test", Namespace: "project", Generation: 1},
		Spec:       v1alpha1.VectorPromotionConfigSpec{Source: source, Target: testTarget},
	}
}

// world is the executor's view, evolved by applying plans as the executor would.
type world struct {
	in ConfigInput
}

func newWorld(source v1alpha1.SourceReference, sourceVector, targetVector string) *world {
	return &world{in: ConfigInput{Config: config(source), Source: SourceState{Vector: sourceVector}, TargetVector: targetVector}}
}

// pass reconciles at now and applies the plan.
func (w *world) pass(t *testing.T, now time.Time) ConfigPlan {
	t.Helper()
	plan := ReconcileConfig(w.in, now)
	w.apply(plan)
	return plan
}

func (w *world) apply(plan ConfigPlan) {
	w.in.Config.Status = plan.Status
	w.in.Promotions = applyPlan(w.in.Promotions, plan)
}

func applyPlan(ps []v1alpha1.VectorPromotion, plan ConfigPlan) []v1alpha1.VectorPromotion {
	byName := map[string]v1alpha1.VectorPromotion{}
	var order []string
	for _, p := range ps {
		byName[p.Name] = p
		order = append(order, p.Name)
	}
	for _, p := range plan.Create {
		if _, ok := byName[p.Name]; ok {
			panic("plan creates existing promotion " + p.Name)
		}
		byName[p.Name] = p
		order = append(order, p.Name)
	}
	for _, p := range plan.Update {
		if _, ok := byName[p.Name]; !ok {
			panic("plan updates missing promotion " + p.Name)
		}
		byName[p.Name] = p
	}
	for _, n := range plan.Delete {
		delete(byName, n)
	}
	var out []v1alpha1.VectorPromotion
	for _, n := range order {
		if p, ok := byName[n]; ok {
			out = append(out, p)
		}
	}
	return out
}

func (w *world) find(name string) *v1alpha1.VectorPromotion {
	for i := range w.in.Promotions {
		if w.in.Promotions[i].Name == name {
			return &w.in.Promotions[i]
		}
	}
	return nil
}

func transitionStrings(trs []Transition) []string {
	var out []string
	for _, tr := range trs {
		out = append(out, tr.String())
	}
	return out
}

func TestReadyCondition(t *testing.T) {
	tests := []struct {
		name    string
		source  v1alpha1.SourceReference
		missing []MissingReference
		edit    func(*v1alpha1.VectorPromotionConfigSpec)
		want    metav1.Condition
	}{
		{"everything resolves", tmplSource, nil, nil,
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ResolvedReason, Message: "source VectorTemplate dev-vector and target Stage test-stage in Landscape test resolve"}},
		{"source template missing", tmplSource, []MissingReference{{Role: RoleSource, Kind: v1alpha1.VectorTemplateKind, Name: "dev-vector"}}, nil,
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.SourceNotFoundReason, Message: "source VectorTemplate dev-vector not found"}},
		{"source stage missing", devSource, []MissingReference{{Role: RoleSource, Kind: v1alpha1.StageKind, Name: "dev-stage", Landscape: "dev"}}, nil,
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.SourceNotFoundReason, Message: "source Stage dev-stage in Landscape dev not found"}},
		{"target stage missing", tmplSource, []MissingReference{{Role: RoleTarget, Kind: v1alpha1.StageKind, Name: "test-stage", Landscape: "test"}}, nil,
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.TargetNotFoundReason, Message: "target Stage test-stage in Landscape test not found"}},
		{"target landscape missing", tmplSource, []MissingReference{{Role: RoleTarget, Kind: v1alpha1.LandscapeKind, Name: "test"}}, nil,
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.LandscapeNotFoundReason, Message: "Landscape test of the target not found"}},
		{"several missing: the first names the reason, the message names all", devSource, []MissingReference{
			{Role: RoleTarget, Kind: v1alpha1.StageKind, Name: "test-stage", Landscape: "test"},
			{Role: RoleSource, Kind: v1alpha1.LandscapeKind, Name: "dev"},
		}, nil,
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.LandscapeNotFoundReason, Message: "Landscape dev of the source not found; target Stage test-stage in Landscape test not found"}},
		{"source is the target", devSource, nil, func(s *v1alpha1.VectorPromotionConfigSpec) {
			s.Target = v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: "dev-stage", Landscape: "dev"}
		},
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.InvalidSpecReason,
				Message: "spec.source and spec.target are the same Stage dev-stage in Landscape dev; a stage cannot promote to itself"}},
		{"invalid spec", devSource, nil, func(s *v1alpha1.VectorPromotionConfigSpec) {
			s.Source.Landscape = ""
			s.Target.Kind = "VectorTemplate"
			s.KeepLastPromotions = ptr(int32(-1))
		},
			metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.InvalidSpecReason,
				Message: "spec.source.landscape is required for a Stage source; spec.target.kind is \"VectorTemplate\", only Stage can be a target; spec.keepLastPromotions is -1, it cannot be negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(tt.source, "app:v2", "app:v1")
			if tt.edit != nil {
				tt.edit(&w.in.Config.Spec)
			}
			w.in.Missing = tt.missing
			plan := w.pass(t, at(0))
			tt.want.ObservedGeneration = 1
			tt.want.LastTransitionTime = mt(0)
			got := findCondition(plan.Status.Conditions, v1alpha1.ReadyCondition)
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if tt.want.Status == metav1.ConditionFalse && len(plan.Create) != 0 {
				t.Errorf("created %d promotions while not ready", len(plan.Create))
			}
			if tt.edit != nil {
				return
			}
			// It recovers by itself once everything resolves.
			w.in.Missing = nil
			plan = w.pass(t, at(time.Minute))
			got = findCondition(plan.Status.Conditions, v1alpha1.ReadyCondition)
			if got.Status != metav1.ConditionTrue || got.Reason != v1alpha1.ResolvedReason {
				t.Errorf("after recovery: %+v", got)
			}
			wantLTT := mt(0)
			if tt.want.Status == metav1.ConditionFalse {
				wantLTT = mt(time.Minute)
			}
			if !got.LastTransitionTime.Equal(&wantLTT) {
				t.Errorf("lastTransitionTime %s, want %s", got.LastTransitionTime, wantLTT)
			}
			if len(w.in.Promotions) != 1 {
				t.Errorf("after recovery: %d promotions, want the drift's one", len(w.in.Promotions))
			}
		})
	}
}

func TestDrift(t *testing.T) {
	tests := []struct {
		source, target string
		want           bool
	}{
		{"app:v1", "app:v1", false},
		{"app:v2", "app:v1", true},
		{"app:v1", "", true},
		{"", "app:v1", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := Drift(tt.source, tt.target); got != tt.want {
			t.Errorf("Drift(%q, %q) = %v, want %v", tt.source, tt.target, got, tt.want)
		}
	}
}

func TestReconcileConfigCreatesOnDrift(t *testing.T) {
	t.Run("template source: created and started in one pass", func(t *testing.T) {
		w := newWorld(tmplSource, "dev-vector:v2", "dev-vector:v1")
		plan := w.pass(t, at(0))
		if diff := cmp.Diff(int64(1), plan.Status.Sequence); diff != "" {
			t.Errorf("sequence (-want +got):\n%s", diff)
		}
		if len(plan.Create) != 1 || plan.Create[0].Name != "dev-to-test-1" || plan.Create[0].Spec.Vector != "dev-vector:v2" {
			t.Fatalf("create: %+v", plan.Create)
		}
		if plan.Start == nil || plan.Start.Name != "dev-to-test-1" || plan.Create[0].Status.State != inProgress || len(plan.Update) != 0 {
			t.Errorf("start=%v state=%s update=%d", plan.Start, plan.Create[0].Status.State, len(plan.Update))
		}
		want := []string{"dev-to-test-1: (new) -> Ready", "dev-to-test-1: Ready -> InProgress (PromotionRunning)"}
		if diff := cmp.Diff(want, transitionStrings(plan.Transitions)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		if !plan.StatusChanged {
			t.Error("status with a new sequence not marked changed")
		}
	})
	t.Run("stage source: created waiting", func(t *testing.T) {
		w := newWorld(devSource, "app:v2", "app:v1")
		plan := w.pass(t, at(0))
		if len(plan.Create) != 1 || plan.Create[0].Status.State != waiting || plan.Start != nil {
			t.Fatalf("create=%+v start=%v", plan.Create, plan.Start)
		}
		if diff := cmp.Diff([]string{"dev-to-test-1: (new) -> Waiting"}, transitionStrings(plan.Transitions)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
	})
	t.Run("no drift, no promotion", func(t *testing.T) {
		w := newWorld(devSource, "app:v1", "app:v1")
		plan := w.pass(t, at(0))
		if len(plan.Create) != 0 || plan.Status.Sequence != 0 {
			t.Errorf("created %d, sequence %d", len(plan.Create), plan.Status.Sequence)
		}
	})
	t.Run("source without a vector yet", func(t *testing.T) {
		w := newWorld(tmplSource, "", "app:v1")
		if plan := w.pass(t, at(0)); len(plan.Create) != 0 {
			t.Errorf("created %d", len(plan.Create))
		}
	})
	t.Run("sequence is allocated above every existing promotion", func(t *testing.T) {
		w := newWorld(devSource, "app:v9", "app:v1")
		w.in.Config.Status.Sequence = 3 // a lost status write must not reuse a name
		w.in.Promotions = []v1alpha1.VectorPromotion{promo(5, true, waitingCond())}
		plan := w.pass(t, at(0))
		if len(plan.Create) != 1 || plan.Create[0].Name != "dev-to-test-6" || plan.Status.Sequence != 6 {
			t.Errorf("create=%v sequence=%d", names(plan.Create), plan.Status.Sequence)
		}
	})
	t.Run("sequence continues after the target's history when the state was reset", func(t *testing.T) {
		w := newWorld(tmplSource, "app:v2", "app:v1")
		w.in.TargetSequence = 4 // dev-to-test-4 ran there; the state branch was deleted since
		plan := w.pass(t, at(0))
		if len(plan.Create) != 1 || plan.Create[0].Name != "dev-to-test-5" || plan.Status.Sequence != 5 {
			t.Errorf("create=%v sequence=%d", names(plan.Create), plan.Status.Sequence)
		}
	})
	t.Run("manual promote continues after the target's history too", func(t *testing.T) {
		w := newWorld(devSource, "app:v1", "app:v1")
		w.in.TargetSequence = 7
		plan, err := Promote(w.in, at(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Create) != 1 || plan.Create[0].Name != "dev-to-test-8" {
			t.Errorf("create=%v", names(plan.Create))
		}
	})
}

func TestNextSequence(t *testing.T) {
	tests := []struct {
		name       string
		status     int64
		promotions []int64
		target     int64
		want       int64
	}{
		{name: "first promotion", want: 1},
		{name: "after the status", status: 3, want: 4},
		{name: "after a promotion whose status write was lost", status: 3, promotions: []int64{2, 5}, want: 6},
		{name: "after the target's history, the state branch deleted", target: 4, want: 5},
		{name: "after the target's history, the state branch rewound", status: 2, promotions: []int64{1, 2}, target: 3, want: 4},
		{name: "the state is ahead of the target (promotions that wrote nothing)", status: 9, target: 3, want: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps []v1alpha1.VectorPromotion
			for _, seq := range tt.promotions {
				ps = append(ps, promo(seq, false, approvedCond()))
			}
			if got := NextSequence(tt.status, ps, tt.target); got != tt.want {
				t.Errorf("NextSequence = %d, want %d", got, tt.want)
			}
		})
	}
}

// A new source vector makes a new candidate even while an older one waits.
func TestNewSourceVectorWhileOlderWaits(t *testing.T) {
	w := newWorld(devSource, "app:v1", "app:v0")
	w.pass(t, at(0))
	w.in.Source.Vector = "app:v2"
	plan := w.pass(t, at(time.Minute))
	if diff := cmp.Diff([]string{"dev-to-test-2"}, names(plan.Create)); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int64]v1alpha1.PromotionState{1: waiting, 2: waiting}, states(w.in.Promotions)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	// Approving the newer one runs it and supersedes the older one.
	r, err := Approve(*w.find("dev-to-test-2"), "alice", at(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	*w.find("dev-to-test-2") = r.Promotion
	plan = w.pass(t, at(2*time.Minute))
	if plan.Start == nil || plan.Start.Name != "dev-to-test-2" {
		t.Fatalf("start %v", plan.Start)
	}
	if diff := cmp.Diff(map[int64]v1alpha1.PromotionState{1: superseded, 2: inProgress}, states(w.in.Promotions)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

func TestFailedIsNotRecreatedButManualPromoteIs(t *testing.T) {
	w := newWorld(tmplSource, "dev-vector:v2", "dev-vector:v1")
	plan := w.pass(t, at(0))
	done, _, err := Complete(*plan.Start, Result{Outcome: OutcomeFailed, Message: "push rejected"}, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	*w.find("dev-to-test-1") = done
	for i := 2; i < 5; i++ {
		if plan := w.pass(t, at(time.Duration(i)*time.Minute)); len(plan.Create) != 0 || plan.Start != nil {
			t.Fatalf("pass %d: created %v, started %v", i, names(plan.Create), plan.Start)
		}
	}
	plan, err = Promote(w.in, at(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	w.apply(plan)
	if diff := cmp.Diff([]string{"dev-to-test-2"}, names(plan.Create)); diff != "" {
		t.Errorf("manual promote created (-want +got):\n%s", diff)
	}
	if plan.Create[0].Spec.Vector != "dev-vector:v2" || plan.Status.Sequence != 2 || plan.Start == nil {
		t.Errorf("manual promotion: vector %s sequence %d start %v", plan.Create[0].Spec.Vector, plan.Status.Sequence, plan.Start)
	}
	// A manual promote makes a fresh one even while one for the vector exists.
	plan, err = Promote(w.in, at(11*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"dev-to-test-3"}, names(plan.Create)); diff != "" {
		t.Errorf("second manual promote (-want +got):\n%s", diff)
	}
	if plan.Start != nil {
		t.Errorf("started %s while dev-to-test-2 is in progress", plan.Start.Name)
	}
}

func TestPromoteErrors(t *testing.T) {
	w := newWorld(tmplSource, "", "app:v1")
	if _, err := Promote(w.in, at(0)); err == nil || !strings.Contains(err.Error(), "offers no vector") {
		t.Errorf("no source vector: %v", err)
	}
	w.in.Source.Vector = "app:v2"
	w.in.Missing = []MissingReference{{Role: RoleSource, Kind: v1alpha1.VectorTemplateKind, Name: "dev-vector"}}
	if _, err := Promote(w.in, at(0)); err == nil || !strings.Contains(err.Error(), "source VectorTemplate dev-vector not found") {
		t.Errorf("missing source: %v", err)
	}
	w.in.Missing = nil
	w.in.Config.Spec.Source.Kind = "Bucket"
	if _, err := Promote(w.in, at(0)); err == nil || !strings.Contains(err.Error(), `spec.source.kind is "Bucket"`) {
		t.Errorf("invalid spec: %v", err)
	}
}

func TestUpdateDelay(t *testing.T) {
	delay := 10 * time.Minute
	delayed := func(w *world) *metav1.Condition {
		return findCondition(w.in.Config.Status.Conditions, v1alpha1.UpdateDelayedCondition)
	}
	t.Run("waiting, then exactly at the boundary", func(t *testing.T) {
		w := newWorld(tmplSource, "dev-vector:v2", "dev-vector:v1")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		plan := w.pass(t, at(0))
		if len(plan.Create) != 0 || plan.RequeueAfter != delay {
			t.Fatalf("created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
		plan = w.pass(t, at(4*time.Minute))
		want := metav1.Condition{Type: v1alpha1.UpdateDelayedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.UpdateDelayedReason, ObservedGeneration: 1,
			LastTransitionTime: mt(0),
			Message:            "vector dev-vector:v2 must stay current at the source until 2026-07-27T14:40:52Z (updateDelay 10m0s)"}
		if diff := cmp.Diff(&want, delayed(w)); diff != "" {
			t.Errorf("UpdateDelayed (-want +got):\n%s", diff)
		}
		if len(plan.Create) != 0 || plan.RequeueAfter != 6*time.Minute {
			t.Errorf("at 4m: created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
		plan = w.pass(t, at(delay-time.Second-time.Millisecond))
		if len(plan.Create) != 0 || plan.RequeueAfter != time.Second+time.Millisecond {
			t.Errorf("just over a second before: created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
		if got := *delayed(w); got.Message != want.Message || !got.LastTransitionTime.Equal(&want.LastTransitionTime) {
			t.Errorf("UpdateDelayed changed while the delay ran (it would make a state commit every pass): %+v", got)
		}
		plan = w.pass(t, at(delay))
		if len(plan.Create) != 1 || delayed(w) != nil {
			t.Errorf("at the boundary: created %v, UpdateDelayed %+v", names(plan.Create), delayed(w))
		}
	})
	t.Run("an interruption restarts the clock (observed by the config)", func(t *testing.T) {
		w := newWorld(devSource, "app:a", "app:0")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		w.pass(t, at(0))
		w.in.Source.Vector = "app:b" // interrupted at 4m
		w.pass(t, at(4*time.Minute))
		w.in.Source.Vector = "app:a" // back at 6m: the clock restarts for a
		w.pass(t, at(6*time.Minute))
		plan := w.pass(t, at(10*time.Minute))
		if len(plan.Create) != 0 || plan.RequeueAfter != 6*time.Minute {
			t.Errorf("at 10m after an interruption: created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
		if got := w.in.Config.Status.SourceVectorSince; got == nil || !got.Equal(ptr(mt(6*time.Minute))) {
			t.Errorf("sourceVectorSince %v, want 6m", got)
		}
		plan = w.pass(t, at(16*time.Minute))
		if diff := cmp.Diff([]string{"dev-to-test-1"}, names(plan.Create)); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		if plan.Create[0].Spec.Vector != "app:a" {
			t.Errorf("vector %s", plan.Create[0].Spec.Vector)
		}
	})
	t.Run("a target outage does not restart the clock", func(t *testing.T) {
		w := newWorld(devSource, "app:a", "app:0")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		w.pass(t, at(0))
		w.in.Missing = []MissingReference{{Role: RoleTarget, Kind: v1alpha1.StageKind, Name: "test-stage", Landscape: "test"}}
		w.pass(t, at(3*time.Minute))
		w.in.Missing = nil
		w.pass(t, at(5*time.Minute))
		if plan := w.pass(t, at(delay)); len(plan.Create) != 1 {
			t.Errorf("created %v at the end of the delay", names(plan.Create))
		}
	})
	t.Run("a source outage does", func(t *testing.T) {
		w := newWorld(devSource, "app:a", "app:0")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		w.pass(t, at(0))
		w.in.Missing = []MissingReference{{Role: RoleSource, Kind: v1alpha1.LandscapeKind, Name: "dev"}}
		w.pass(t, at(3*time.Minute))
		w.in.Missing = nil
		w.pass(t, at(5*time.Minute))
		if plan := w.pass(t, at(delay)); len(plan.Create) != 0 || plan.RequeueAfter != 5*time.Minute {
			t.Errorf("created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
	})
	t.Run("manual promote skips the delay", func(t *testing.T) {
		w := newWorld(devSource, "app:a", "app:0")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		w.pass(t, at(0))
		plan, err := Promote(w.in, at(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		w.apply(plan)
		if len(plan.Create) != 1 || delayed(w) != nil {
			t.Errorf("created %v, UpdateDelayed %+v", names(plan.Create), delayed(w))
		}
	})
	t.Run("the source's own since wins", func(t *testing.T) {
		w := newWorld(devSource, "app:a", "app:0")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		w.in.Source.Since = at(-9 * time.Minute)
		plan := w.pass(t, at(0))
		if len(plan.Create) != 0 || plan.RequeueAfter != time.Minute {
			t.Errorf("created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
		w.in.Source = SourceState{Vector: "app:b", Since: at(30 * time.Second)}
		plan = w.pass(t, at(time.Minute))
		if len(plan.Create) != 0 || plan.RequeueAfter != 9*time.Minute+30*time.Second {
			t.Errorf("after a change at the source: created %v, requeue %s", names(plan.Create), plan.RequeueAfter)
		}
	})
	t.Run("no delay while the vector already has a promotion", func(t *testing.T) {
		w := newWorld(devSource, "app:v1", "app:0")
		w.in.Config.Spec.UpdateDelay = &metav1.Duration{Duration: delay}
		w.in.Promotions = []v1alpha1.VectorPromotion{promo(1, true, waitingCond())}
		w.in.Promotions[0].Spec.Vector = "app:v1"
		plan := w.pass(t, at(0))
		if delayed(w) != nil || plan.RequeueAfter != 0 {
			t.Errorf("UpdateDelayed %+v, requeue %s", delayed(w), plan.RequeueAfter)
		}
	})
}

// A pass over the plan's result is a no-op: the executor can stop.
func TestReconcileConfigIsIdempotent(t *testing.T) {
	w := newWorld(tmplSource, "dev-vector:v2", "dev-vector:v1")
	w.in.Promotions = []v1alpha1.VectorPromotion{
		promo(1, false, approvedCond(), succeededCond(-time.Hour)),
		promo(2, false, approvedCond(), failedCond(-time.Hour)),
	}
	w.in.Config.Status.Sequence = 2
	w.pass(t, at(0))
	plan := ReconcileConfig(w.in, at(time.Second))
	if plan.Changed() {
		t.Errorf("second pass changed: status=%v create=%v update=%v delete=%v start=%v",
			plan.StatusChanged, names(plan.Create), names(plan.Update), plan.Delete, plan.Start)
	}
}

// The plan does not depend on the order the executor listed the promotions in.
func TestReconcileConfigIgnoresInputOrder(t *testing.T) {
	set := []v1alpha1.VectorPromotion{
		promo(1, true, approvedCond(), succeededCond(-48*time.Hour)),
		promo(2, true, approvedCond(), failedCond(-time.Hour)),
		promo(3, true, waitingCond()),
		promo(4, true, approvedCond()),
		promo(5, true, waitingCond()),
	}
	var first ConfigPlan
	permute(len(set), func(order []int) {
		in := newWorld(devSource, "app:2026.7.9-000000000Z", "app:v0").in
		in.Config.Spec.KeepLastPromotions = ptr(int32(1))
		in.Config.Status.Sequence = 5
		for _, i := range order {
			in.Promotions = append(in.Promotions, set[i])
		}
		plan := ReconcileConfig(in, at(0))
		if first.Status.Sequence == 0 {
			first = plan
			return
		}
		if diff := cmp.Diff(first, plan); diff != "" {
			t.Fatalf("order %v changed the plan (-first +got):\n%s", order, diff)
		}
	})
	if diff := cmp.Diff([]string{"dev-to-test-6"}, names(first.Create)); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"dev-to-test-1"}, first.Delete); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
}

func names(ps []v1alpha1.VectorPromotion) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// permute calls f with every permutation of 0..n-1 (Heap's algorithm).
func permute(n int, f func([]int)) {
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	var gen func(k int)
	gen = func(k int) {
		if k == 1 {
			f(append([]int(nil), a...))
			return
		}
		for i := 0; i < k; i++ {
			gen(k - 1)
			if k%2 == 0 {
				a[i], a[k-1] = a[k-1], a[i]
			} else {
				a[0], a[k-1] = a[k-1], a[0]
			}
		}
	}
	gen(n)
}
