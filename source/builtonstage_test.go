package source

import (
	"context"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
)

// TestAStageBuiltOnAnotherStagesOverlayIsNotIndexed: a running controller
// loads no build of every overlay, so the load itself refuses a stage
// whose kustomization names another stage's overlay to build on: such a
// stage runs what promotions into the other write, and would report a
// vector it does not run. It stays refused when the next load reuses what
// the last one resolved, and is indexed again once it builds on a base.
func TestAStageBuiltOnAnotherStagesOverlayIsNotIndexed(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"vectorflow/objects.yaml":          landscapeWithStages("test", "prod"),
		"base/kustomization.yaml":          "resources: []\n",
		"overlays/test/kustomization.yaml": "resources: [../../base]\nimages: [{name: ghcr.io/acme/app, newTag: 2.0.0}]\n",
		"overlays/prod/kustomization.yaml": "resources:\n  - ../test/\nimages: [{name: ghcr.io/acme/app, newTag: 1.0.0}]\n",
	})
	commitDir(t, dir)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	for _, load := range []string{"first load", "second load"} {
		snap, err := loader.Load(context.Background(), dir, "main")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := snap.StageIndex["l/prod"]; ok {
			t.Errorf("%s: stage l/prod, built on l/test's overlay, is indexed", load)
		}
		if _, ok := snap.StageIndex["l/test"]; !ok {
			t.Errorf("%s: stage l/test is not indexed", load)
		}
		if len(snap.Problems) != 1 || snap.Problems[0].Name != "prod" || snap.Problems[0].Field != "spec.path" ||
			!strings.Contains(snap.Problems[0].Reason, "overlays/test, the overlay of Stage l/test") {
			t.Errorf("%s: problems %v, want one on Stage prod's spec.path naming l/test's overlay", load, snap.Problems)
		}
	}

	testutil.WriteFiles(t, dir, map[string]string{"overlays/prod/kustomization.yaml": "resources: [../../base]\nimages: [{name: ghcr.io/acme/app, newTag: 1.0.0}]\n"})
	commitDir(t, dir)
	snap, err := loader.Load(context.Background(), dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.StageIndex["l/prod"]; !ok || len(snap.Problems) != 0 {
		t.Errorf("prod built on the base: indexed %v, problems %v; want it indexed without problems", ok, snap.Problems)
	}
}

// TestOverlaysOfOneContentBuildOnWhatTheirOwnPlaceNames: prod and qa have
// the same kustomization, "resources: [../test]", so one vector read serves
// both (the cache is keyed by content); from prod it names stage test's
// overlay, from qa a plain directory. A restarted process, reading the
// vectors from the cache directory, refuses prod and keeps qa, as the
// first did.
func TestOverlaysOfOneContentBuildOnWhatTheirOwnPlaceNames(t *testing.T) {
	dir := t.TempDir()
	stage := func(name, path string) string {
		return "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name + "\nspec:\n  landscape: l\n  path: " + path + "\n"
	}
	testutil.WriteFiles(t, dir, map[string]string{
		"vectorflow/objects.yaml": "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: l\nspec: {}\n" +
			stage("test", "overlays/test") + stage("prod", "overlays/prod") + stage("qa", "qa/x"),
		"overlays/test/kustomization.yaml": "resources: []\n",
		"overlays/prod/kustomization.yaml": "resources: [../test]\n",
		"qa/x/kustomization.yaml":          "resources: [../test]\n",
		"qa/test/kustomization.yaml":       "resources: []\n",
	})
	commitDir(t, dir)
	cache := t.TempDir()
	for _, process := range []string{"first process", "restarted process"} {
		snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), CacheDir: cache}).Load(context.Background(), dir, "main")
		if err != nil {
			t.Fatal(err)
		}
		_, prod := snap.StageIndex["l/prod"]
		_, qa := snap.StageIndex["l/qa"]
		if prod || !qa {
			t.Errorf("%s: indexed prod %v, qa %v; want qa only (problems %v)", process, prod, qa, snap.Problems)
		}
	}
}

// TestAStageBuiltOnAnotherStagesOverlayThroughADirectoryInBetweenIsNotIndexed:
// prod builds on apps/shared, a plain directory, which a person then makes
// build on test's overlay: prod's own file did not change, yet it now runs
// what promotions into test write. The load follows directories in between
// (a cycle among them ends), and indexes prod again once shared builds on
// the base.
func TestAStageBuiltOnAnotherStagesOverlayThroughADirectoryInBetweenIsNotIndexed(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"vectorflow/objects.yaml":          landscapeWithStages("test", "prod"),
		"base/kustomization.yaml":          "resources: [deployment.yaml]\n",
		"base/deployment.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n",
		"shared/kustomization.yaml":        "resources: [../base]\n",
		"overlays/test/kustomization.yaml": "resources: [../../base]\nimages: [{name: ghcr.io/acme/app, newTag: 2.0.0}]\n",
		"overlays/prod/kustomization.yaml": "resources: [../../shared, namespace.yaml]\nimages: [{name: ghcr.io/acme/app, newTag: 1.0.0}]\n",
		"overlays/prod/namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n",
	})
	commitDir(t, dir)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	load := func(what string) *Snapshot {
		t.Helper()
		snap, err := loader.Load(context.Background(), dir, "main")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return snap
	}
	if snap := load("on the base"); len(snap.StageIndex) != 2 || len(snap.Problems) != 0 {
		t.Fatalf("prod through shared on the base: stages %v, problems %v; want both indexed, no problem", keys.Sorted(snap.StageIndex), snap.Problems)
	}
	// A change that reaches no overlay nor directory in between leaves the
	// answer as it was; one to a directory in between has it found again.
	for _, tt := range []struct {
		file  string
		taken int
	}{{"README.md", 1}, {"base/README.md", 0}} {
		testutil.WriteFiles(t, dir, map[string]string{tt.file: "changed\n"})
		commitDir(t, dir)
		before := loader.builtOnReused
		if snap := load(tt.file + " changed"); len(snap.StageIndex) != 2 || loader.builtOnReused-before != tt.taken {
			t.Errorf("%s changed: stages %v, the answer taken from the load before %d times, want both indexed, %d",
				tt.file, keys.Sorted(snap.StageIndex), loader.builtOnReused-before, tt.taken)
		}
	}

	for _, tt := range []struct{ name, shared, other, through string }{
		{"shared on test", "resources: [../overlays/test]\n", "", ""},
		{"through a cycle to test", "resources: [../more]\n", "resources: [../shared, ../overlays/test]\n", "more, which builds on "},
	} {
		files := map[string]string{"shared/kustomization.yaml": tt.shared}
		if tt.other != "" {
			files["more/kustomization.yaml"] = tt.other
		}
		testutil.WriteFiles(t, dir, files)
		commitDir(t, dir)
		snap := load(tt.name)
		if _, ok := snap.StageIndex["l/prod"]; ok {
			t.Errorf("%s: stage l/prod, built on l/test's overlay through shared, is indexed", tt.name)
		}
		if _, ok := snap.StageIndex["l/test"]; !ok {
			t.Errorf("%s: stage l/test is not indexed", tt.name)
		}
		if len(snap.Problems) != 1 || snap.Problems[0].Name != "prod" || snap.Problems[0].Field != "spec.path" ||
			!strings.Contains(snap.Problems[0].Reason, `"overlays/prod" builds on shared, which builds on `+tt.through+`overlays/test, the overlay of Stage l/test`) {
			t.Errorf("%s: problems %v, want one on Stage prod's spec.path naming shared and l/test's overlay", tt.name, snap.Problems)
		}
	}

	testutil.WriteFiles(t, dir, map[string]string{"shared/kustomization.yaml": "resources: [../base]\n"})
	commitDir(t, dir)
	if snap := load("back on the base"); len(snap.StageIndex) != 2 || len(snap.Problems) != 0 {
		t.Errorf("shared on the base again: stages %v, problems %v; want both indexed, no problem", keys.Sorted(snap.StageIndex), snap.Problems)
	}
}

// landscapeWithStages is a config file holding landscape l and a stage of
// each name, whose overlay is overlays/<name>.
func landscapeWithStages(names ...string) string {
	out := "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: l\nspec: {}\n"
	for _, name := range names {
		out += "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name + "\nspec:\n  landscape: l\n  path: overlays/" + name + "\n"
	}
	return out
}
