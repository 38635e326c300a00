package reconcilers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// stagesWithUsages is a state of n stages of landscape dev, each running
// one of versions StageVersions (the oldest first, all Ready) and holding
// its own active and target usages of the newest, beside the usages
// declared names (each of the newest version of stage s0).
func stagesWithUsages(n, versions int, declared ...string) (*State, map[string]int) {
	s := NewState()
	stages := map[string]int{}
	for i := range n {
		stage := fmt.Sprintf("s%d", i)
		stages[StageKey("dev", stage)] = 2
		var newest string
		for v := range versions {
			vector := fmt.Sprintf("app:%d", v)
			sv := newStageVersion("dev", stage, vector, StageRender{}, metav1.Condition{Type: v1alpha1.ReadyCondition,
				Status: metav1.ConditionTrue, Reason: "Test"}, time.Unix(int64(1000+v), 0))
			s.StageVersions[sv.Name] = sv
			newest = sv.Name
		}
		for _, reason := range []string{v1alpha1.ActiveUsageReason, v1alpha1.TargetUsageReason} {
			name := OwnUsageName("dev", stage, reason)
			s.Usages[name] = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: v1alpha1.StageVersionUsageSpec{Reason: reason, StageVersionRef: &v1alpha1.LocalObjectReference{Name: newest}}}
		}
	}
	for _, name := range declared {
		s.Usages[name] = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageVersionUsageSpec{Reason: "migration", StageVersionRef: &v1alpha1.LocalObjectReference{Name: "none"}}}
	}
	return s, stages
}

// TestUsageNotesAreInNameOrder: what ReconcileUsages and CollectGarbage
// note goes into the state commit's message, in the order of the names
// they are about, whatever order the maps are walked in.
func TestUsageNotesAreInNameOrder(t *testing.T) {
	var gone []string
	for i := range 12 {
		gone = append(gone, fmt.Sprintf("gone-%02d", (i*7)%12))
	}
	declared := map[string]*v1alpha1.StageVersionUsage{}
	for i := range 12 {
		name := fmt.Sprintf("kept-%02d", (i*5)%12)
		declared[name] = &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageVersionUsageSpec{Reason: "migration", StageVersionRef: &v1alpha1.LocalObjectReference{Name: "none"}}}
	}
	var first []string
	for round := range 20 {
		s, stages := stagesWithUsages(12, 5, gone...)
		notes := ReconcileUsages(s, declared, true, time.Unix(5000, 0))
		notes = append(notes, CollectGarbage(s, stages, true)...)
		if round == 0 {
			first = notes
			continue
		}
		if !slices.Equal(first, notes) {
			t.Fatalf("round %d noted another order:\n%s\nthe first round:\n%s", round, strings.Join(notes, "\n"), strings.Join(first, "\n"))
		}
	}
	// Each kind of note in the order of the names it is about: the usage's,
	// or for deleted versions the stage's (a stage's oldest first).
	var declaredNotes, conditions, removed, deleted []string
	for _, n := range first {
		switch {
		case strings.Contains(n, ": declared ("):
			declaredNotes = append(declaredNotes, n)
		case strings.HasSuffix(n, "removed from the repository"):
			removed = append(removed, n)
		case strings.Contains(n, v1alpha1.StageVersionReadyCondition):
			conditions = append(conditions, n)
		case strings.Contains(n, "deleted StageVersion"):
			deleted = append(deleted, strings.SplitN(n, ":", 2)[0])
		}
	}
	for what, group := range map[string][]string{"declared": declaredNotes, "condition": conditions, "removed": removed, "deleted": deleted} {
		if len(group) < 12 || !slices.IsSorted(group) {
			t.Errorf("the %s notes are %d, not in name order:\n%s", what, len(group), strings.Join(group, "\n"))
		}
	}
}

// BenchmarkUsagesAndGarbage is what each decision spends on usages at
// 10,000 stages (20,000 own usages, three StageVersions a stage): their
// conditions, and the garbage collection of versions.
func BenchmarkUsagesAndGarbage(b *testing.B) {
	s, stages := stagesWithUsages(10000, 3)
	now := time.Unix(5000, 0)
	ReconcileUsages(s, nil, true, now)
	CollectGarbage(s, stages, true)
	for b.Loop() {
		ReconcileUsages(s, nil, true, now)
		CollectGarbage(s, stages, true)
	}
}

func TestOwnUsageStage(t *testing.T) {
	for name, want := range map[string]string{
		OwnUsageName("dev", "web", v1alpha1.ActiveUsageReason): StageKey("dev", "web"),
		"dev.web.":  StageKey("dev", "web"),
		"dev..x":    StageKey("dev", ""),
		"migration": "",
		"dev.web":   "",
		"a.b.c.d":   "",
	} {
		got, own := ownUsageStage(name)
		if got != want || own != (want != "") {
			t.Errorf("ownUsageStage(%q) = %q, %v; want %q", name, got, own, want)
		}
	}
}
