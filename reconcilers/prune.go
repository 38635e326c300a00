package reconcilers

import (
	"slices"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// ProtectedKinds are the kinds a config protects from removal: its
// spec.protectedKinds, or the defaults when it does not say.
func ProtectedKinds(cfg *v1alpha1.VectorPromotionConfig) []string {
	if cfg.Spec.ProtectedKinds != nil {
		return *cfg.Spec.ProtectedKinds
	}
	return v1alpha1.DefaultProtectedKinds()
}

// RemovedProtected are the objects of a protected kind that the stage runs
// (from, the inventory of its active StageVersion) and the candidate's
// render (to) no longer has, sorted: what promoting it deletes in the
// cluster when the deployer prunes. An object that only moves to another
// namespace or group is removed too: the old one goes.
func RemovedProtected(from, to []v1alpha1.InventoryEntry, kinds []string) []v1alpha1.InventoryEntry {
	kept := make(map[v1alpha1.InventoryEntry]struct{}, len(to))
	for _, e := range to {
		kept[e] = struct{}{}
	}
	var out []v1alpha1.InventoryEntry
	for _, e := range from {
		if _, ok := kept[e]; ok || !slices.Contains(kinds, e.Kind) {
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, compareInventoryEntries)
	return slices.Compact(out)
}

func compareInventoryEntries(a, b v1alpha1.InventoryEntry) int {
	for _, c := range [][2]string{{a.Kind, b.Kind}, {a.Group, b.Group}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}
