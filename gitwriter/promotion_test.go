package gitwriter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestPromotionChange runs the change's edit and message on the fixture
// overlay, then renders the result with the real kustomize CLI.
func TestPromotionChange(t *testing.T) {
	const overlay = "apps/overlays/prod/kustomization.yaml"
	old, err := os.ReadFile(filepath.Join(fixtureDir, overlay))
	if err != nil {
		t.Fatal(err)
	}
	tr := Trailers{Promotion: "shop-to-prod-2", Sequence: 2, Vector: "shop:2", Source: "Stage/dev", Target: "Stage/prod"}
	change := PromotionChange(overlay, "eu", "prod", "shop:2", []v1alpha1.VectorComponent{
		{Name: "service-a", Tag: "1.4.2"},
		{Name: "c", Image: "service-c", Tag: "2.0.0"},
	}, tr)
	if change.ID != "shop-to-prod-2" || len(change.Files) != 1 || change.Files[0].Path != overlay {
		t.Fatalf("change = %+v", change)
	}
	if _, _, err := change.Files[0].Edit(nil, false); err == nil || !strings.Contains(err.Error(), "stage eu/prod does not exist") {
		t.Errorf("a missing overlay must be an error naming the stage, got %v", err)
	}
	edited, remove, err := change.Files[0].Edit(old, true)
	if err != nil || remove {
		t.Fatalf("edit: %v (remove=%v)", err, remove)
	}
	msg := change.Message([]FileDiff{{Path: overlay, Old: old, New: edited, Existed: true}})
	want := "promote shop:2 to eu/prod\n\nservice-a 1.4.1 -> 1.4.2\nservice-c (new) 2.0.0\n\n" + FormatTrailers(tr)
	if diff := cmp.Diff(want, msg); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixtureDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, overlay), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	// The base's placeholder service-a keeps coming from the registry the
	// overlay names.
	out := string(testutil.KustomizeBuild(t, filepath.Join(dir, filepath.Dir(overlay))))
	if !strings.Contains(out, "image: registry.example.com/service-a:1.4.2\n") {
		t.Errorf("kustomize build does not run the promoted image:\n%s", out)
	}
}

// TestPromotionChangeTakesOverTheImageEntry is a component whose name is not
// its image, promoted into an overlay that already has an entry for that
// image: the edit must move the entry the containers match (kustomize
// matches an entry's name against the container's image; a placeholder
// entry's newName is the image), not add one named after the component,
// must keep where the stage pulls from, and the built overlay must run the
// new version.
func TestPromotionChangeTakesOverTheImageEntry(t *testing.T) {
	const overlay = "apps/overlays/prod/kustomization.yaml"
	tests := []struct {
		name      string
		baseImage string // what the base's container says
		entry     string // the overlay's existing entry for that image
		component v1alpha1.VectorComponent
		want      string // the image the built overlay must run
	}{
		{
			name:      "tag",
			baseImage: "registry.example.com/shop/api:0.9.0",
			entry:     "  - name: registry.example.com/shop/api\n    newTag: \"1.0.0\" # pinned by hand\n",
			component: v1alpha1.VectorComponent{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"},
			want:      "registry.example.com/shop/api:1.1.0",
		},
		{
			name:      "digest in the image name",
			baseImage: "registry.example.com/shop/api@" + digestA,
			entry:     "  - name: registry.example.com/shop/api\n    digest: " + digestA + "\n",
			component: v1alpha1.VectorComponent{Name: "api", Image: "registry.example.com/shop/api", Digest: digestB},
			want:      "registry.example.com/shop/api@" + digestB,
		},
		{
			name:      "placeholder in the base, newName in the overlay",
			baseImage: "api",
			entry:     "  - name: api\n    newName: registry.example.com/shop/api\n    newTag: \"1.0.0\"\n",
			component: v1alpha1.VectorComponent{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"},
			want:      "registry.example.com/shop/api:1.1.0",
		},
		{
			name:      "the stage pulls from a mirror",
			baseImage: "registry.example.com/shop/api:0.9.0",
			entry:     "  - name: registry.example.com/shop/api\n    newName: mirror.example.com/shop/api\n    newTag: 1.0.0\n",
			component: v1alpha1.VectorComponent{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"},
			want:      "mirror.example.com/shop/api:1.1.0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestFile(t, dir, "apps/base/kustomization.yaml", "resources:\n  - deployment.yaml\n")
			writeTestFile(t, dir, "apps/base/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n      containers:\n        - name: api\n          image: "+tc.baseImage+"\n")
			old := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\nimages:\n" + tc.entry
			writeTestFile(t, dir, overlay, old)

			change := PromotionChange(overlay, "eu", "prod", "shop:2", []v1alpha1.VectorComponent{tc.component},
				Trailers{Promotion: "shop-to-prod-2", Sequence: 2, Vector: "shop:2", Source: "VectorTemplate/shop", Target: "Stage/eu/prod"})
			edited, _, err := change.Files[0].Edit([]byte(old), true)
			if err != nil {
				t.Fatal(err)
			}
			writeTestFile(t, dir, overlay, string(edited))
			if got, want := strings.Count(string(edited), "- name: "), strings.Count(old, "- name: "); got != want {
				t.Errorf("the overlay has %d images entries, want the %d it had:\n%s", got, want, edited)
			}
			for _, line := range strings.Split(tc.entry, "\n") {
				if strings.Contains(line, "name: ") && !strings.Contains(string(edited), line+"\n") {
					t.Errorf("the entry's %q changed:\n%s", strings.TrimSpace(line), edited)
				}
			}
			out, err := render.NewRenderer(render.Options{}).Build(repofs.DirTree(dir), filepath.Dir(overlay))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), "image: "+tc.want+"\n") {
				t.Errorf("the built overlay does not run %s:\n%s\noverlay:\n%s", tc.want, out, edited)
			}
		})
	}
}

func writeTestFile(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
