package reconcilers

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// BenchmarkCodecDecidedPass is the codec's share of a deciding pass over a
// settled state branch of 10,000 stages (a config, a stage, a StageVersion
// and two usages each): the files read from the branch decoded, the
// decision's copy of the state (CloneSharing, most objects unchanged)
// encoded, and what to write found (StateDiff).
func BenchmarkCodecDecidedPass(b *testing.B) {
	files, err := EncodeState(settledState(10_000))
	if err != nil {
		b.Fatal(err)
	}
	c := NewSharingCodec()
	if _, errs := c.Decode(files); len(errs) > 0 {
		b.Fatal(errs[0])
	}
	encodes := c.encodes
	// whole: the state encoded whole, then compared with the branch's
	// files; changes: what to write found at once.
	for _, whole := range []bool{true, false} {
		b.Run(map[bool]string{true: "whole", false: "changes"}[whole], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				decoded, errs := c.Decode(files)
				if len(errs) > 0 {
					b.Fatal(errs[0])
				}
				next := decoded.CloneSharing()
				var diff map[string][]byte
				if whole {
					after, err := c.Encode(next)
					if err != nil {
						b.Fatal(err)
					}
					diff = StateDiff(files, after)
				} else if diff, err = c.Changes(next, files); err != nil {
					b.Fatal(err)
				}
				if len(diff) > 0 {
					b.Fatalf("an unchanged state writes %d files", len(diff))
				}
			}
		})
	}
	if c.encodes != encodes {
		b.Fatalf("encoded %d objects of an unchanged state", c.encodes-encodes)
	}
}

// settledState is a state of n stages in one landscape, each the target of
// one config, running its vector as a StageVersion with two usages.
func settledState(n int) *State {
	s := NewState()
	since := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	ready := func(reason, message string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: since}}
	}
	for i := range n {
		stage, vector := fmt.Sprintf("s%05d", i), fmt.Sprintf("app:2026.1.%d", i%7)
		cfg := &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "to-" + stage}}
		cfg.Status.Sequence = 3
		cfg.Status.Conditions = ready("Resolved", "source and target resolve")
		s.Configs[cfg.Name] = cfg
		st := &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: stage},
			Spec: v1alpha1.StageSpec{Landscape: "apps", Path: "apps/overlays/" + stage}}
		st.Status.Conditions = ready("Observed", "runs "+vector)
		s.Stages[StageKey("apps", stage)] = st
		sv := &v1alpha1.StageVersion{ObjectMeta: metav1.ObjectMeta{Name: StageVersionName("apps", stage, vector)},
			Spec: v1alpha1.StageVersionSpec{Landscape: "apps", Stage: stage, Vector: vector, Commit: fmt.Sprintf("%040d", i)}}
		sv.Status.Conditions = ready("Active", "applied and healthy")
		s.StageVersions[sv.Name] = sv
		for _, reason := range []string{"active", "rollback"} {
			u := &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: sv.Name + "-" + reason},
				Spec: v1alpha1.StageVersionUsageSpec{Reason: reason, StageVersionRef: &v1alpha1.LocalObjectReference{Name: sv.Name}}}
			u.Status.Conditions = ready("InUse", "in use")
			s.Usages[u.Name] = u
		}
	}
	return s
}
