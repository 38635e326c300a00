package reconcilers

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
)

func TestStageVersionName(t *testing.T) {
	a := StageVersionName("dev", "web", "app:2026.7.1-000000000Z")
	if a != StageVersionName("dev", "web", "app:2026.7.1-000000000Z") {
		t.Fatal("the name is not deterministic")
	}
	for _, other := range []string{
		StageVersionName("prod", "web", "app:2026.7.1-000000000Z"),
		StageVersionName("dev", "web", "app:2026.7.2-000000000Z"),
		StageVersionName("dev", "api", "app:2026.7.1-000000000Z"),
	} {
		if other == a {
			t.Errorf("two versions share the name %s", a)
		}
	}
	long := StageVersionName("dev", "a-stage-name-that-is-as-long-as-a-dns-label-may-be-0123456789", "app:1")
	for _, n := range []string{a, long} {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("%s is not a DNS-1123 label, so no stageVersionRef can name it: %v", n, errs)
		}
	}
}

// version is a StageVersion of stage dev/web created at offset d, ready or not.
func version(n int, d time.Duration, ready bool) *v1alpha1.StageVersion {
	status := metav1.ConditionUnknown
	if ready {
		status = metav1.ConditionTrue
	}
	return &v1alpha1.StageVersion{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", n), CreationTimestamp: mt(d)},
		Spec:       v1alpha1.StageVersionSpec{Landscape: "dev", Stage: "web", Vector: fmt.Sprintf("app:%d", n)},
		Status: v1alpha1.StageVersionStatus{Conditions: []metav1.Condition{
			{Type: v1alpha1.ReadyCondition, Status: status, Reason: "Test"}}},
	}
}

func TestCollectStageVersions(t *testing.T) {
	// versions 1..n, oldest first; ready says which are ready.
	versions := func(n int, ready ...int) []*v1alpha1.StageVersion {
		isReady := map[int]bool{}
		for _, r := range ready {
			isReady[r] = true
		}
		var out []*v1alpha1.StageVersion
		for i := 1; i <= n; i++ {
			out = append(out, version(i, time.Duration(i)*time.Minute, isReady[i]))
		}
		return out
	}
	inUse := func(ns ...int) map[string]bool {
		m := map[string]bool{}
		for _, n := range ns {
			m[fmt.Sprintf("web-%d", n)] = true
		}
		return m
	}
	tests := []struct {
		name     string
		versions []*v1alpha1.StageVersion
		inUse    map[string]bool
		max      int
		want     []string
	}{
		{name: "within maxRevisions nothing goes", versions: versions(3, 3), inUse: inUse(3), max: 3},
		{name: "oldest unused first", versions: versions(5, 5), inUse: inUse(5), max: 3,
			want: []string{"web-1", "web-2"}},
		{name: "never one in use, the next oldest goes instead", versions: versions(5, 5), inUse: inUse(1, 5), max: 3,
			want: []string{"web-2", "web-3"}},
		{name: "all in use: more than maxRevisions stay", versions: versions(4, 4), inUse: inUse(1, 2, 3, 4), max: 2},
		{name: "the newest ready stays though unused", versions: versions(4, 2), inUse: inUse(4), max: 1,
			want: []string{"web-1", "web-3"}},
		{name: "maxRevisions 1 keeps the one in use", versions: versions(3, 1, 2, 3), inUse: inUse(3), max: 1,
			want: []string{"web-1", "web-2"}},
		{name: "maxRevisions 0 counts as 1", versions: versions(2, 2), inUse: inUse(2), max: 0, want: []string{"web-1"}},
		{name: "default 10", versions: versions(12, 12), inUse: inUse(12), max: MaxRevisions(&v1alpha1.StageSpec{}),
			want: []string{"web-1", "web-2"}},
		{name: "no ready version and none in use: the newest stay", versions: versions(3), inUse: inUse(), max: 2,
			want: []string{"web-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CollectStageVersions(tt.versions, tt.inUse, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			for _, name := range got {
				if tt.inUse[name] {
					t.Errorf("deleted %s, which a usage holds", name)
				}
			}
		})
	}
}

func TestMaxRevisions(t *testing.T) {
	one, zero := int32(1), int32(0)
	for _, tt := range []struct {
		spec v1alpha1.StageSpec
		want int
	}{{v1alpha1.StageSpec{}, 10}, {v1alpha1.StageSpec{MaxRevisions: &one}, 1}, {v1alpha1.StageSpec{MaxRevisions: &zero}, 1}} {
		if got := MaxRevisions(&tt.spec); got != tt.want {
			t.Errorf("MaxRevisions(%v) = %d, want %d", tt.spec.MaxRevisions, got, tt.want)
		}
	}
}

func TestReconcileUsages(t *testing.T) {
	state := func() *State {
		s := NewState()
		for _, sv := range []*v1alpha1.StageVersion{version(1, 0, true), version(2, time.Minute, false)} {
			sv.Labels = map[string]string{v1alpha1.StageNameLabel: "web", v1alpha1.VectorLabel: sv.Spec.Vector}
			s.StageVersions[sv.Name] = sv
		}
		return s
	}
	byRef := func(name, ref string) *v1alpha1.StageVersionUsage {
		return &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageVersionUsageSpec{Reason: "migration", StageVersionRef: &v1alpha1.LocalObjectReference{Name: ref}}}
	}
	bySelector := func(name string, labels map[string]string) *v1alpha1.StageVersionUsage {
		return &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageVersionUsageSpec{Reason: "migration", StageVersionSelector: &metav1.LabelSelector{MatchLabels: labels}}}
	}
	ready := func(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.StageVersionReadyCondition, Status: status, Reason: reason, Message: msg, LastTransitionTime: mt(0)}
	}
	notFound := func(msg string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.StageVersionNotFoundCondition, Status: metav1.ConditionTrue,
			Reason: v1alpha1.StageVersionNotFoundReason, Message: msg, LastTransitionTime: mt(0)}
	}
	tests := []struct {
		name  string
		usage *v1alpha1.StageVersionUsage
		want  []metav1.Condition
	}{
		{name: "ref to a ready version", usage: byRef("hold", "web-1"),
			want: []metav1.Condition{ready(metav1.ConditionTrue, v1alpha1.StageVersionReadyReason, "StageVersion web-1 (vector app:1) is deployed and healthy")}},
		{name: "ref to a version not yet ready", usage: byRef("hold", "web-2"),
			want: []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.StageVersionNotReadyReason, "1 of 1 referenced StageVersions not yet deployed and healthy: web-2")}},
		{name: "ref to no version: NotFound is present", usage: byRef("hold", "web-9"),
			want: []metav1.Condition{
				ready(metav1.ConditionFalse, v1alpha1.StageVersionNotFoundReason, "no StageVersion named web-9"),
				notFound("no StageVersion named web-9")}},
		{name: "selector by vector", usage: bySelector("hold", map[string]string{v1alpha1.VectorLabel: "app:1"}),
			want: []metav1.Condition{ready(metav1.ConditionTrue, v1alpha1.StageVersionReadyReason, "StageVersion web-1 (vector app:1) is deployed and healthy")}},
		{name: "selector by stage: one of two not ready", usage: bySelector("hold", map[string]string{v1alpha1.StageNameLabel: "web"}),
			want: []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.StageVersionNotReadyReason, "1 of 2 referenced StageVersions not yet deployed and healthy: web-2")}},
		{name: "selector matching nothing", usage: bySelector("hold", map[string]string{v1alpha1.StageNameLabel: "api"}),
			want: []metav1.Condition{
				ready(metav1.ConditionFalse, v1alpha1.StageVersionNotFoundReason, "no StageVersion matches the selector vectorflow.dev/stage-name=api"),
				notFound("no StageVersion matches the selector vectorflow.dev/stage-name=api")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := state()
			ReconcileUsages(s, map[string]*v1alpha1.StageVersionUsage{"hold": tt.usage}, true, at(0))
			if diff := cmp.Diff(tt.want, s.Usages["hold"].Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.usage.Spec, s.Usages["hold"].Spec); diff != "" {
				t.Errorf("the stored usage's spec is not the declared one (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("the version appears: NotFound goes", func(t *testing.T) {
		s := state()
		declared := map[string]*v1alpha1.StageVersionUsage{"hold": byRef("hold", "web-3")}
		ReconcileUsages(s, declared, true, at(0))
		s.StageVersions["web-3"] = version(3, time.Hour, true)
		ReconcileUsages(s, declared, true, at(time.Hour))
		want := []metav1.Condition{{Type: v1alpha1.StageVersionReadyCondition, Status: metav1.ConditionTrue,
			Reason: v1alpha1.StageVersionReadyReason, Message: "StageVersion web-3 (vector app:3) is deployed and healthy", LastTransitionTime: mt(time.Hour)}}
		if diff := cmp.Diff(want, s.Usages["hold"].Status.Conditions); diff != "" {
			t.Errorf("conditions (-want +got):\n%s", diff)
		}
	})
	t.Run("a removed declaration goes, a stage's own usage stays", func(t *testing.T) {
		s := state()
		ReconcileUsages(s, map[string]*v1alpha1.StageVersionUsage{"hold": byRef("hold", "web-1")}, true, at(0))
		s.Usages[OwnUsageName("dev", "web", v1alpha1.ActiveUsageReason)] = byRef(OwnUsageName("dev", "web", v1alpha1.ActiveUsageReason), "web-1")
		ReconcileUsages(s, nil, false, at(time.Minute))
		if s.Usages["hold"] == nil {
			t.Fatal("an incomplete snapshot (prune false) removed a declared usage")
		}
		ReconcileUsages(s, nil, true, at(time.Minute))
		if s.Usages["hold"] != nil {
			t.Error("a usage removed from the repository stayed")
		}
		if s.Usages["dev.web.active"] == nil {
			t.Error("the stage's own usage was removed with the declared ones")
		}
	})
}

func TestCollectGarbageKeepsWhatUsagesHold(t *testing.T) {
	s := NewState()
	for i := 1; i <= 4; i++ {
		sv := version(i, time.Duration(i)*time.Minute, i == 2)
		sv.Labels = map[string]string{v1alpha1.StageNameLabel: "web", v1alpha1.VectorLabel: sv.Spec.Vector}
		s.StageVersions[sv.Name] = sv
	}
	s.Usages["dev.web.active"] = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: "dev.web.active"},
		Spec: v1alpha1.StageVersionUsageSpec{Reason: "active", StageVersionRef: &v1alpha1.LocalObjectReference{Name: "web-2"}}}
	s.Usages["migration"] = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: "migration"},
		Spec: v1alpha1.StageVersionUsageSpec{Reason: "migration",
			StageVersionSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.VectorLabel: "app:1"}}}}
	CollectGarbage(s, map[string]int{"dev/web": 1}, true)
	if diff := cmp.Diff([]string{"web-1", "web-2"}, keys.Sorted(s.StageVersions)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	// The stage is gone: its own usages go, a declared usage still holds.
	CollectGarbage(s, map[string]int{}, true)
	if diff := cmp.Diff([]string{"web-1"}, keys.Sorted(s.StageVersions)); diff != "" {
		t.Errorf("kept after the stage went (-want +got):\n%s", diff)
	}
	if s.Usages["dev.web.active"] != nil {
		t.Error("the own usage of a stage that is gone stayed")
	}
}

// TestStateKeepsStageVersionsAndUsages: what a pass learned (versions,
// their readiness, the stage's active fields, usages) survives the state
// branch, so a restart keeps it.
func TestStateKeepsStageVersionsAndUsages(t *testing.T) {
	s := stageState(devDeployment, "app:3")
	observe(s, []StageReport{healthy("r2", "app:1", 10*time.Minute), unhealthy("r3", "app:3", 20*time.Minute)})
	ReconcileUsages(s, map[string]*v1alpha1.StageVersionUsage{"hold": {ObjectMeta: metav1.ObjectMeta{Name: "hold"},
		Spec: v1alpha1.StageVersionUsageSpec{Reason: "migration", StageVersionSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{v1alpha1.VectorLabel: "app:1"}}}}}, true, at(time.Hour))
	files, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"stageversions/dev/web/" + StageVersionName("dev", "web", "app:1") + ".yaml",
		"usages/hold.yaml", "usages/dev.web.active.yaml", "usages/dev.web.target.yaml"} {
		if _, ok := files[p]; !ok {
			t.Errorf("no file %s on the state branch", p)
		}
	}
	got, errs := DecodeState(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(summarize(s), summarize(got)); diff != "" {
		t.Errorf("after a round trip (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(s.Usages["hold"].Status, got.Usages["hold"].Status); diff != "" {
		t.Errorf("usage status after a round trip (-before +after):\n%s", diff)
	}
}
