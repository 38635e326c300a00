package reconcilers

import (
	"fmt"

	"github.com/Masterminds/semver/v3"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// ConstraintViolation is a component of a source vector that breaks one of
// a config's spec.constraints.
type ConstraintViolation struct {
	Component  string
	Version    string // the vector's version of it
	Constraint string
}

func (v ConstraintViolation) String() string {
	if v.Version == "" {
		return fmt.Sprintf("%s has no semver version (constraint %s)", v.Component, v.Constraint)
	}
	return fmt.Sprintf("%s %s breaks constraint %s", v.Component, v.Version, v.Constraint)
}

// ConstraintViolations are the constraints the vector breaks, in the
// config's order. A constrained component the vector lacks breaks nothing;
// one whose version is not semver breaks its constraint, since it cannot be
// shown to keep it. A constraint that does not parse is an error (validate
// refuses it first).
func ConstraintViolations(vector *v1alpha1.Vector, constraints []v1alpha1.VersionConstraint) ([]ConstraintViolation, error) {
	var out []ConstraintViolation
	for i, c := range constraints {
		want, err := semver.NewConstraint(c.Version)
		if err != nil {
			return nil, fmt.Errorf("spec.constraints[%d].version %q: %w", i, c.Version, err)
		}
		for _, vc := range vector.Spec.Components {
			if vc.Name != c.Component {
				continue
			}
			v, err := semver.NewVersion(vc.Tag)
			if err != nil {
				out = append(out, ConstraintViolation{Component: c.Component, Constraint: c.Version})
				continue
			}
			if !want.Check(v) {
				out = append(out, ConstraintViolation{Component: c.Component, Version: vc.Tag, Constraint: c.Version})
			}
		}
	}
	return out, nil
}
