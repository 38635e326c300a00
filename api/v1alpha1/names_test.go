package v1alpha1

import "testing"

// TestResourceNames: every kind has its names, and no name means two kinds.
func TestResourceNames(t *testing.T) {
	kinds := []string{LandscapeKind, StageKind, VectorTemplateKind, VectorKind, VectorPromotionConfigKind,
		VectorPromotionKind, StageVersionKind, StageVersionUsageKind}
	for _, k := range kinds {
		found := false
		for _, r := range Resources {
			found = found || r.Kind == k
		}
		if !found {
			t.Errorf("kind %s has no resource names", k)
		}
	}
	owner := map[string]string{}
	for _, r := range Resources {
		for _, n := range r.Names() {
			if o, ok := owner[n]; ok && o != r.Kind {
				t.Errorf("name %q means both %s and %s", n, o, r.Kind)
			}
			owner[n] = r.Kind
		}
	}
	for name, want := range map[string]string{"vp": VectorPromotionKind, "VPC": VectorPromotionConfigKind, "sv": StageVersionKind,
		"svu": StageVersionUsageKind, "vt": VectorTemplateKind, "st": StageKind, "ls": LandscapeKind, "vec": VectorKind,
		"stages": StageKind, "vectorpromotion": VectorPromotionKind} {
		if r, ok := ResourceFor(name); !ok || r.Kind != want {
			t.Errorf("ResourceFor(%q) = %v, %v; want %s", name, r.Kind, ok, want)
		}
	}
	if _, ok := ResourceFor("pods"); ok {
		t.Error("ResourceFor(pods) found a kind")
	}
}
