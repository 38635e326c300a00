package pass

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// TestPullRequestBodyComponents checks the component table: only changed
// components, old -> new, with renamed images and digests.
func TestPullRequestBodyComponents(t *testing.T) {
	from := []v1alpha1.VectorComponent{
		{Name: "reg/a", Tag: "1.0.0"},
		{Name: "reg/b", Tag: "2.0.0", Digest: "sha256:1111"},
		{Name: "reg/gone", Tag: "0.1"},
	}
	to := []v1alpha1.VectorComponent{
		{Name: "reg/a", Tag: "1.0.0"},
		{Name: "reg/b", Image: "mirror/b", Tag: "2.1.0", Digest: "sha256:2222"},
		{Name: "reg/new", Tag: "1.20"},
	}
	body := PullRequestBody(PullRequestDescription{Promotion: "dev-to-test-3", Vector: "acme:v3", Source: "Stage/dev/dev",
		Target: "Stage/test/test", From: from, To: to, Manifests: ManifestChanges{Changed: []string{"Deployment acme/b"}}})
	want := "| Component | Old | New |\n|---|---|---|\n" +
		"| `reg/b` | `2.0.0` (`sha256:1111`) | `mirror/b` `2.1.0` (`sha256:2222`) |\n" +
		"| `reg/gone` | `0.1` | — |\n" +
		"| `reg/new` | — | `1.20` |\n"
	if !strings.Contains(body, want) {
		t.Errorf("body lacks the table\n%s\ngot:\n%s", want, body)
	}
	for _, line := range []string{"1 changed", "- changed `Deployment acme/b`", "Merging this pull request"} {
		if !strings.Contains(body, line) {
			t.Errorf("body lacks %q:\n%s", line, body)
		}
	}
	if strings.Contains(body, "reg/a`") {
		t.Errorf("body lists the unchanged component reg/a:\n%s", body)
	}
}

// TestOverlayEntriesPairWithTheOverlay: the table's new side is keyed like
// the overlay's entries, so a placeholder's or a mirror's entry is one row
// whose version changes, not a removed and an added component.
func TestOverlayEntriesPairWithTheOverlay(t *testing.T) {
	overlay := overlays.StageVector{Images: []v1alpha1.VectorComponent{
		{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.0.0"},
		{Name: "registry.example.com/shop/web", Image: "mirror.example.com/shop/web", Tag: "2.0.0"},
	}}
	components := []v1alpha1.VectorComponent{
		{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"},
		{Name: "web", Image: "registry.example.com/shop/web", Tag: "2.1.0"},
		{Name: "worker", Image: "registry.example.com/shop/worker", Digest: "sha256:1"},
	}
	got := componentRows(overlay.Images, OverlayEntries(overlay, components))
	want := []string{
		"| `api` | `registry.example.com/shop/api` `1.0.0` | `registry.example.com/shop/api` `1.1.0` |",
		"| `registry.example.com/shop/web` | `mirror.example.com/shop/web` `2.0.0` | `mirror.example.com/shop/web` `2.1.0` |",
		"| `registry.example.com/shop/worker` | — | no tag (`sha256:1`) |",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
