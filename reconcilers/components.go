package reconcilers

import (
	"sort"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// ComponentChange is a component whose image, tag or digest differs
// between two image lists; Old is nil for a new component, New for a
// removed one.
type ComponentChange struct {
	Name     string
	Old, New *v1alpha1.VectorComponent
}

// DiffComponents lists, sorted by name, the components that differ between
// from and to: what a reviewer of a promotion cares about.
func DiffComponents(from, to []v1alpha1.VectorComponent) []ComponentChange {
	before := map[string]v1alpha1.VectorComponent{}
	for _, c := range from {
		before[c.Name] = c
	}
	after := map[string]v1alpha1.VectorComponent{}
	for _, c := range to {
		after[c.Name] = c
	}
	names := make([]string, 0, len(before)+len(after))
	for n := range before {
		names = append(names, n)
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var changes []ComponentChange
	for _, n := range names {
		old, had := before[n]
		cur, has := after[n]
		switch {
		case !had:
			changes = append(changes, ComponentChange{Name: n, New: &cur})
		case !has:
			changes = append(changes, ComponentChange{Name: n, Old: &old})
		case old != cur:
			changes = append(changes, ComponentChange{Name: n, Old: &old, New: &cur})
		}
	}
	return changes
}
