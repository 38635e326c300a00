package v1alpha1

import "testing"

func TestIsVersionRange(t *testing.T) {
	tests := map[string]bool{
		"1.4.2": false, "1.20": false, "v1.2.3": false, "latest": false, "sha256:abc": false, "2026-01-05": false,
		">=1.2.0 <2.0.0": true, "1.4.x": true, "^1.2": true, "~1.3": true, "1.X": true, "*": true, ">=1.0.0, <2": true, "1.x || 2.x": true,
	}
	for v, want := range tests {
		if got := IsVersionRange(v); got != want {
			t.Errorf("IsVersionRange(%q) = %v, want %v", v, got, want)
		}
	}
}
