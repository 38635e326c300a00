package reconcilers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// SourceReadiness is a Stage source's readiness: as written, else Active
// when the source stage names a deployer (spec.deployment), else Assigned.
func SourceReadiness(src v1alpha1.SourceReference, stage *v1alpha1.Stage) string {
	switch {
	case src.Readiness != "":
		return src.Readiness
	case stage != nil && stage.Spec.Deployment != nil:
		return v1alpha1.ReadinessActive
	}
	return v1alpha1.ReadinessAssigned
}

// StageSourceState is what a source stage offers a config, by readiness:
// Assigned offers the vector its overlay names, since the overlay names it;
// Active offers the vector deployed and healthy there, since it became so
// without interruption, and nothing while the newest report failed. While
// the overlay names a vector not yet active, Waiting says so.
func StageSourceState(src v1alpha1.SourceReference, st *v1alpha1.Stage) SourceState {
	if st == nil {
		return SourceState{}
	}
	if SourceReadiness(src, st) != v1alpha1.ReadinessActive {
		return SourceState{Vector: st.Status.Vector, Since: timeOf(st.Status.VectorSince)}
	}
	status := &st.Status
	key := StageKey(st.Spec.Landscape, st.Name)
	dep := describeDeployment(st.Spec.Deployment)
	active := meta.FindStatusCondition(status.Conditions, v1alpha1.ActiveCondition)
	switch {
	case active != nil && active.Status == metav1.ConditionTrue && status.ActiveVector != "" && status.ActiveSince != nil:
		out := SourceState{Vector: status.ActiveVector, Since: status.ActiveSince.Time, Active: true}
		if status.Vector != "" && status.Vector != status.ActiveVector {
			out.WaitingReason = v1alpha1.AwaitingDeploymentReason
			out.Waiting = fmt.Sprintf("stage %s is assigned vector %s, which %s has not reported applied and healthy yet; "+
				"the source offers the active vector %s", key, status.Vector, dep, status.ActiveVector)
		}
		return out
	case active != nil && active.Status == metav1.ConditionFalse:
		return SourceState{WaitingReason: v1alpha1.DeploymentUnhealthyReason,
			Waiting: fmt.Sprintf("stage %s is not healthy (%s: %s); the source offers a vector again once %s reports a revision applied and healthy",
				key, active.Reason, active.Message, dep)}
	}
	return SourceState{WaitingReason: v1alpha1.AwaitingDeploymentReason,
		Waiting: fmt.Sprintf("waiting for %s to report vector %s applied and healthy on stage %s",
			dep, VectorOrNone(status.Vector), key)}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
