package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestSetKstatus(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	c := func(typ string, s metav1.ConditionStatus, reason, msg string, ltt time.Duration) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: mt(ltt)}
	}
	ready := func(s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return c(v1alpha1.ReadyCondition, s, reason, msg, 0)
	}
	drift := c(v1alpha1.DriftCondition, T, v1alpha1.PromotionOfferedReason, "", 0)
	const now = time.Hour
	tests := []struct {
		name        string
		conds, want []metav1.Condition
		changed     bool
	}{
		{name: "no Ready: nothing", conds: nil, want: nil},
		{name: "Ready True: neither", conds: []metav1.Condition{ready(T, v1alpha1.ResolvedReason, "ok"), drift},
			want: []metav1.Condition{ready(T, v1alpha1.ResolvedReason, "ok"), drift}},
		{name: "a missing source stalls",
			conds: []metav1.Condition{ready(F, v1alpha1.SourceNotFoundReason, "source Stage dev not found")},
			want: []metav1.Condition{ready(F, v1alpha1.SourceNotFoundReason, "source Stage dev not found"),
				c(v1alpha1.StalledCondition, T, v1alpha1.SourceNotFoundReason, "source Stage dev not found", now)},
			changed: true},
		{name: "a registry outage is retried",
			conds: []metav1.Condition{ready(F, v1alpha1.RegistryUnavailableReason, "registry down")},
			want: []metav1.Condition{ready(F, v1alpha1.RegistryUnavailableReason, "registry down"),
				c(v1alpha1.ReconcilingCondition, T, v1alpha1.ProgressingWithRetryReason, "registry down", now)},
			changed: true},
		{name: "still stalled: the time stays, the message follows",
			conds:   []metav1.Condition{ready(F, v1alpha1.InvalidSpecReason, "two problems"), c(v1alpha1.StalledCondition, T, v1alpha1.InvalidSpecReason, "one problem", 0)},
			want:    []metav1.Condition{ready(F, v1alpha1.InvalidSpecReason, "two problems"), c(v1alpha1.StalledCondition, T, v1alpha1.InvalidSpecReason, "two problems", 0)},
			changed: true},
		{name: "unchanged",
			conds: []metav1.Condition{ready(F, v1alpha1.InvalidSpecReason, "x"), c(v1alpha1.StalledCondition, T, v1alpha1.InvalidSpecReason, "x", 0)},
			want:  []metav1.Condition{ready(F, v1alpha1.InvalidSpecReason, "x"), c(v1alpha1.StalledCondition, T, v1alpha1.InvalidSpecReason, "x", 0)}},
		{name: "recovered: Stalled goes",
			conds: []metav1.Condition{ready(T, v1alpha1.ResolvedReason, "ok"), c(v1alpha1.StalledCondition, T, v1alpha1.InvalidSpecReason, "x", 0)},
			want:  []metav1.Condition{ready(T, v1alpha1.ResolvedReason, "ok")}, changed: true},
		{name: "from retrying to stalled",
			conds: []metav1.Condition{ready(F, v1alpha1.ConfigConflictReason, "cycle"), c(v1alpha1.ReconcilingCondition, T, v1alpha1.ProgressingWithRetryReason, "down", 0)},
			want: []metav1.Condition{ready(F, v1alpha1.ConfigConflictReason, "cycle"),
				c(v1alpha1.StalledCondition, T, v1alpha1.ConfigConflictReason, "cycle", now)},
			changed: true},
		{name: "a reason neither stalled nor retried: Ready alone",
			conds: []metav1.Condition{ready(F, "SomethingElse", "x")},
			want:  []metav1.Condition{ready(F, "SomethingElse", "x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tt.conds...)
			changed := SetKstatus(&conds, at(now))
			if diff := cmp.Diff(tt.want, conds); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
		})
	}
}
