package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
)

// TestBuildStagesChecksComponentImages: validate reports a template
// component that no container of a stage its vectors reach would match
// (through the Stage-sourced configs too), and an image that is no valid
// image reference, each at the template's file, object and field.
func TestBuildStagesChecksComponentImages(t *testing.T) {
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	file := filepath.Join(dir, "vectorflow", "template.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	const serviceB = "    - name: registry.example.com/acme/service-b\n      version: \"1.0.0\"\n"
	if !strings.Contains(string(data), serviceB) {
		t.Fatal("the quickstart's template.yaml changed; update this test")
	}
	added := serviceB +
		// matches no container in any stage
		"    - name: api\n      image: registry.example.com/acme/api\n      version: \"1.0.0\"\n" +
		// a tag in the image, and capitals: no valid repository reference
		"    - name: worker\n      image: Registry.example.com/acme/Worker:1.0\n      version: \"1.0.0\"\n"
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), serviceB, added, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Problems) != 0 {
		t.Fatalf("the edited quickstart must decode cleanly: %v", snap.Problems)
	}
	problems, err := BuildStages(context.Background(), snap, render.NewRenderer(render.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	// The file is the one the snapshot records for the template.
	o, _ := snap.Object("VectorTemplate", "acme")
	unmatched := func(stage, config string) string {
		return o.File + ": VectorTemplate/acme: spec.components[3].image: image registry.example.com/acme/api matches no container of Stage " + stage +
			" (overlay apps/overlays/" + strings.SplitN(stage, "/", 2)[0] + ", promoted to by VectorPromotionConfig " + config + "): its containers use " +
			"registry.example.com/acme/frontend, registry.example.com/acme/service-a, registry.example.com/acme/service-b; " +
			"set image to the image the containers use"
	}
	want := []string{
		o.File + `: VectorTemplate/acme: spec.components[4].image: "Registry.example.com/acme/Worker:1.0" is not a valid image reference`,
		unmatched("test/test", "dev-to-test"),
		unmatched("dev/dev", "latest-to-dev"),
		unmatched("prod/prod", "test-to-prod"),
	}
	t.Log(strings.Join(got, "\n"))
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n%s", i, cmp.Diff(want[i], got[i]))
		}
	}
}

// TestBuildStagesAcceptsEntriesThatNameTheImage: a component matches a
// stage whose containers run its image through the overlay's entry for it,
// whether the base has a placeholder the entry's newName replaces with the
// component's image, or the entry moves the image to a mirror. A component
// that matches nothing is still reported, and so is an image two entries
// match, which a promotion's edit refuses.
func TestBuildStagesAcceptsEntriesThatNameTheImage(t *testing.T) {
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	const entry = "  - name: registry.example.com/acme/service-a\n"
	edits := [][3]string{
		{"vectorflow/template.yaml", "    - name: registry.example.com/acme/service-a\n",
			"    - name: api\n      image: registry.example.com/acme/api\n      version: \"1.0.0\"\n" +
				"    - name: service-a\n      image: registry.example.com/acme/service-a\n"},
		{"apps/base/service-a.yaml", "image: registry.example.com/acme/service-a:1.0.0\n", "image: service-a\n"},
		{"apps/overlays/dev/kustomization.yaml", entry, "  - name: service-a\n    newName: registry.example.com/acme/service-a\n"},
		// test also pins the registry's image: two entries for service-a
		{"apps/overlays/test/kustomization.yaml", entry, "  - name: service-a\n    newName: registry.example.com/acme/service-a\n" +
			"    newTag: \"1.0.1\"\n  - name: registry.example.com/acme/service-a\n"},
		{"apps/overlays/prod/kustomization.yaml", entry, "  - name: service-a\n    newName: registry.example.com/acme/service-a\n"},
		// prod pulls service-b from a mirror
		{"apps/overlays/prod/kustomization.yaml", "  - name: registry.example.com/acme/service-b\n",
			"  - name: registry.example.com/acme/service-b\n    newName: mirror.example.com/acme/service-b\n"},
	}
	for _, e := range edits {
		p := filepath.Join(dir, filepath.FromSlash(e[0]))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), e[1]) {
			t.Fatalf("the quickstart's %s changed; update this test: no %q", e[0], e[1])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(data), e[1], e[2], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Problems) != 0 {
		t.Fatalf("the edited quickstart must decode cleanly: %v", snap.Problems)
	}
	problems, err := BuildStages(context.Background(), snap, render.NewRenderer(render.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	t.Log(strings.Join(got, "\n"))
	o, _ := snap.Object("VectorTemplate", "acme")
	want := []string{
		o.File + ": VectorTemplate/acme: spec.components[1].image: image registry.example.com/acme/api matches no container of Stage test/test",
		o.File + ": VectorTemplate/acme: spec.components[2].image: image registry.example.com/acme/service-a has 2 images entries in the overlay apps/overlays/test of Stage test/test " +
			"(name service-a newName registry.example.com/acme/service-a; name registry.example.com/acme/service-a): kustomize applies each",
		o.File + ": VectorTemplate/acme: spec.components[1].image: image registry.example.com/acme/api matches no container of Stage dev/dev",
		o.File + ": VectorTemplate/acme: spec.components[1].image: image registry.example.com/acme/api matches no container of Stage prod/prod",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n%s", i, cmp.Diff(want[i], got[i]))
		}
	}
}
