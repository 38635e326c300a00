package reconcilers

import (
	"testing"

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
