package reconcilers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestConstraintViolations(t *testing.T) {
	prodStaysOn1 := []v1alpha1.VersionConstraint{{Component: "a", Version: "<2.0.0"}}
	cases := []struct {
		name        string
		vector      *v1alpha1.Vector
		constraints []v1alpha1.VersionConstraint
		want        []ConstraintViolation
	}{
		{"kept", vec("v", "a=1.9.3"), prodStaysOn1, nil},
		{"broken", vec("v", "a=2.0.0"), prodStaysOn1, []ConstraintViolation{{Component: "a", Version: "2.0.0", Constraint: "<2.0.0"}}},
		{"a v-prefixed tag", vec("v", "a=v2.1.0"), prodStaysOn1, []ConstraintViolation{{Component: "a", Version: "v2.1.0", Constraint: "<2.0.0"}}},
		{"a prerelease of 2 is not 1.x", vec("v", "a=2.0.0-rc.1"), prodStaysOn1, []ConstraintViolation{{Component: "a", Version: "2.0.0-rc.1", Constraint: "<2.0.0"}}},
		{"a component the vector lacks", vec("v", "b=9.0.0"), prodStaysOn1, nil},
		{"a tag that is not semver cannot keep it", vec("v", "a=latest"), prodStaysOn1, []ConstraintViolation{{Component: "a", Constraint: "<2.0.0"}}},
		{"several, in the config's order", vec("v", "a=2.0.0", "b=0.9.0"),
			[]v1alpha1.VersionConstraint{{Component: "b", Version: ">=1.0.0"}, {Component: "a", Version: "1.x"}},
			[]ConstraintViolation{{Component: "b", Version: "0.9.0", Constraint: ">=1.0.0"}, {Component: "a", Version: "2.0.0", Constraint: "1.x"}}},
		{"a range", vec("v", "a=1.5.2"), []v1alpha1.VersionConstraint{{Component: "a", Version: ">=1.4 <1.6"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConstraintViolations(tc.vector, tc.constraints)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ConstraintViolations(vec("v", "a=1.0.0"), []v1alpha1.VersionConstraint{{Component: "a", Version: "<<2"}}); err == nil {
		t.Error("a constraint that does not parse was accepted")
	}
}

// TestConstraintsHoldBackCandidates: "prod stays on 1.x" is one line in
// Git. A source vector that breaks it makes no candidate, automatically or
// by `vectorflow promote`, and the Drift condition says why; one that
// keeps it is promoted as usual; a constraint that does not parse makes
// the config not Ready.
func TestConstraintsHoldBackCandidates(t *testing.T) {
	onTwo := []v1alpha1.VectorComponent{{Name: "service-a", Tag: "2.0.0"}, {Name: "service-b", Tag: "1.0.0"}}
	onOne := []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.9.0"}, {Name: "service-b", Tag: "1.0.0"}}

	w := newWorld(tmplSource, "app:v2", "app:v1")
	w.in.Config.Spec.Constraints = []v1alpha1.VersionConstraint{{Component: "service-a", Version: "<2.0.0"}}
	w.in.Source.Components = onTwo
	plan := w.pass(t, at(0))
	if len(plan.Create) != 0 {
		t.Fatalf("a vector breaking the constraint became %v", names(plan.Create))
	}
	drift := findCondition(plan.Status.Conditions, v1alpha1.DriftCondition)
	if drift == nil || drift.Reason != v1alpha1.ConstraintViolatedReason ||
		!strings.Contains(drift.Message, "service-a 2.0.0 breaks constraint <2.0.0") {
		t.Errorf("Drift condition %+v, want reason %s naming service-a 2.0.0 and <2.0.0", drift, v1alpha1.ConstraintViolatedReason)
	}
	if _, err := Promote(w.in, at(time.Minute)); err == nil || !strings.Contains(err.Error(), "service-a 2.0.0 breaks constraint <2.0.0") {
		t.Errorf("promote of a vector breaking the constraint: %v", err)
	}

	w.in.Source = SourceState{Vector: "app:v3", Components: onOne}
	if plan := w.pass(t, at(2*time.Minute)); len(plan.Create) != 1 || plan.Create[0].Spec.Vector != "app:v3" {
		t.Errorf("a vector keeping the constraint made %v, want one candidate of app:v3", names(plan.Create))
	}

	w = newWorld(tmplSource, "app:v2", "app:v1")
	w.in.Config.Spec.Constraints = []v1alpha1.VersionConstraint{{Component: "", Version: "<<2"}}
	plan = w.pass(t, at(0))
	ready := findCondition(plan.Status.Conditions, v1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "spec.constraints[0].version") ||
		!strings.Contains(ready.Message, "spec.constraints[0].component is empty") {
		t.Errorf("Ready %+v, want False naming spec.constraints[0]'s component and version", ready)
	}
}
