package gitwriter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
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
		{Name: "service-a", Image: "registry.example.com/service-a", Tag: "1.4.2"},
		{Name: "service-c", Image: "registry.example.com/service-c", Tag: "2.0.0"},
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
	out := string(testutil.KustomizeBuild(t, filepath.Join(dir, filepath.Dir(overlay))))
	if !strings.Contains(out, "image: registry.example.com/service-a:1.4.2") {
		t.Errorf("kustomize build does not run the promoted image:\n%s", out)
	}
}
