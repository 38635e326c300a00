package pass

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDiffManifests lists objects added, changed and removed between two
// kustomize outputs, independent of their order.
func TestDiffManifests(t *testing.T) {
	deploy := func(name, image string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\n  namespace: acme\nspec:\n  template:\n    spec:\n      containers:\n      - image: " + image + "\n"
	}
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: acme\n"
	tests := []struct {
		name          string
		before, after string
		want          ManifestChanges
		wantErr       bool
	}{
		{name: "nothing rendered", want: ManifestChanges{}},
		{name: "same objects, other order", before: ns + "---\n" + deploy("a", "a:1"), after: deploy("a", "a:1") + "---\n" + ns},
		{name: "an image changes", before: ns + "---\n" + deploy("a", "a:1") + "---\n" + deploy("b", "b:1"),
			after: ns + "---\n" + deploy("a", "a:2") + "---\n" + deploy("b", "b:1"),
			want:  ManifestChanges{Changed: []string{"Deployment acme/a"}}},
		{name: "added, changed and removed", before: deploy("a", "a:1") + "---\n" + deploy("old", "o:1"),
			after: ns + "---\n" + deploy("a", "a:2") + "---\n" + deploy("new", "n:1"),
			want: ManifestChanges{Added: []string{"Deployment acme/new", "Namespace acme"}, Changed: []string{"Deployment acme/a"},
				Removed: []string{"Deployment acme/old"}}},
		{name: "output that is not YAML", before: ns, after: "kind: [\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DiffManifests([]byte(tt.before), []byte(tt.after))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" && !tt.wantErr {
				t.Errorf("DiffManifests (-want +got):\n%s", diff)
			}
		})
	}
}
