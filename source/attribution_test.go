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

// TestLoadKustomizedConfigNamesFiles: when vectorflow/kustomization.yaml
// composes the files, a problem names the file that holds the object (not
// the kustomization), and every fault of it is reported.
func TestLoadKustomizedConfigNamesFiles(t *testing.T) {
	dir := testutil.CopyDir(t, "testdata/good")
	writeFile(t, dir, "vectorflow/kustomization.yaml",
		"resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml, faulty.yaml]\n")
	writeFile(t, dir, "vectorflow/faulty.yaml", `apiVersion: vectorflow.dev/v1alpha1
kind: Stage
metadata:
  name: qa
spec:
  landscape: dev
  path: [apps/overlays/qa]
  overlay: typo
`)
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{File: "vectorflow/faulty.yaml", Kind: "Stage", Name: "qa", Field: "spec.overlay", Reason: "unknown field"},
		{File: "vectorflow/faulty.yaml", Kind: "Stage", Name: "qa", Field: "spec.path", Reason: "wrong type: got array, want string"},
	}
	if diff := cmp.Diff(want, snap.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(goodObjects, objectList(snap)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestLoadReportsSymlinkOut: a config file that is a symbolic link out of
// the repository is reported at the link, with its target, whether the
// directory is read file by file or through a kustomization.
func TestLoadReportsSymlinkOut(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata: {name: stolen}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kustomized := range []bool{false, true} {
		dir := testutil.CopyDir(t, "testdata/good")
		if kustomized {
			writeFile(t, dir, "vectorflow/kustomization.yaml",
				"resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml, extra.yaml]\n")
		}
		if err := os.Symlink(outside, filepath.Join(dir, "vectorflow", "extra.yaml")); err != nil {
			t.Fatal(err)
		}
		snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Problems) != 1 {
			t.Fatalf("kustomized=%v: problems = %v, want one for the link", kustomized, snap.Problems)
		}
		p := snap.Problems[0]
		if p.File != "vectorflow/extra.yaml" || !strings.Contains(p.Reason, outside) || !strings.Contains(p.Reason, "points outside the repository") {
			t.Errorf("kustomized=%v: problem = %q, want it at vectorflow/extra.yaml naming the target %s", kustomized, p.Error(), outside)
		}
		if _, ok := snap.Landscapes["stolen"]; ok {
			t.Errorf("kustomized=%v: the landscape outside the repository was loaded", kustomized)
		}
	}
}

// TestBuildStagesReportsSymlinkOut: an overlay resource that links out of
// the repository is reported on the Stage and at the link, with its target.
func TestBuildStagesReportsSymlinkOut(t *testing.T) {
	dir := testutil.CopyDir(t, "testdata/good")
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "apps", "overlays", "dev", "extra.yaml")); err != nil {
		t.Fatal(err)
	}
	kustomization := filepath.Join(dir, "apps", "overlays", "dev", "kustomization.yaml")
	data, err := os.ReadFile(kustomization)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kustomization, []byte(strings.Replace(string(data), "  - ../../base\n", "  - ../../base\n  - extra.yaml\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	problems := mustBuildStages(t, snap, render.NewRenderer(render.Options{}))
	var atLink bool
	for _, p := range problems {
		if p.File == "apps/overlays/dev/extra.yaml" && strings.Contains(p.Reason, outside) && strings.Contains(p.Reason, "points outside the repository") {
			atLink = true
		}
	}
	if !atLink {
		t.Errorf("no problem at the link naming its target; got %v", problems)
	}
}

// TestPlainKustomizationIsReadFileByFile: a kustomization that only lists
// files of the config directory transforms nothing, so its files are
// decoded one by one (kustomize is not run: its cost grows with the square
// of the objects), with exactly what kustomize's build gives: the same
// objects and problems, and a file it does not list is not read.
func TestPlainKustomizationIsReadFileByFile(t *testing.T) {
	load := func(t *testing.T, kustomization string) (*Snapshot, render.Stats) {
		t.Helper()
		dir := testutil.CopyDir(t, "testdata/good")
		writeFile(t, dir, "vectorflow/kustomization.yaml", kustomization)
		writeFile(t, dir, "vectorflow/faulty.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: qa\nspec:\n  landscape: dev\n  path: [apps/overlays/qa]\n")
		writeFile(t, dir, "vectorflow/unlisted.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: unlisted\n")
		r := render.NewRenderer(render.Options{})
		snap, err := NewLoader(Options{Renderer: r}).Load(context.Background(), dir, "")
		if err != nil {
			t.Fatal(err)
		}
		return snap, r.Stats()
	}
	const files = "resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml, faulty.yaml]\n"
	plain, plainStats := load(t, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+files)
	// An empty commonAnnotations transforms nothing either, but it is not
	// plain: kustomize builds it.
	built, builtStats := load(t, files+"commonAnnotations: {}\n")
	if plainStats.Misses != 0 || builtStats.Misses == 0 {
		t.Errorf("kustomize builds: %d for the plain kustomization (want 0), %d for the other (want some)", plainStats.Misses, builtStats.Misses)
	}
	if diff := cmp.Diff(built.Problems, plain.Problems); diff != "" {
		t.Errorf("problems, built (-) and read file by file (+):\n%s", diff)
	}
	if diff := cmp.Diff(objectList(built), objectList(plain)); diff != "" {
		t.Errorf("objects, built (-) and read file by file (+):\n%s", diff)
	}
	if diff := cmp.Diff(built.Stages, plain.Stages); diff != "" {
		t.Errorf("stages, built (-) and read file by file (+):\n%s", diff)
	}
	if plain.Templates["unlisted"] != nil {
		t.Error("a file the kustomization does not list was loaded")
	}

	// What kustomize would refuse is left to kustomize, with its message.
	broken, _ := load(t, "resources: [landscapes.yaml, missing.yaml]\n")
	if len(broken.Problems) != 1 || !strings.Contains(broken.Problems[0].Reason, "kustomize build of the config directory failed") ||
		!strings.Contains(broken.Problems[0].Reason, "missing.yaml") {
		t.Errorf("a kustomization listing a missing file: problems %+v, want kustomize's failure naming missing.yaml", broken.Problems)
	}
}

// TestKustomizedConfigCannotAddStatus: a status a kustomize patch adds to
// a config is refused like one written in its file, at the file the object
// comes from: statuses come from the state branch only.
func TestKustomizedConfigCannotAddStatus(t *testing.T) {
	dir := testutil.CopyDir(t, "testdata/good")
	writeFile(t, dir, "vectorflow/kustomization.yaml", `resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml]
patches:
  - target: {kind: VectorPromotionConfig, name: dev-to-test}
    patch: |
      - op: add
        path: /status
        value: {sequence: 7, promotionHistory: [{vector: "app:forged", promotion: dev-to-test-7, sequence: 7, state: Succeeded}]}
`)
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{{File: "vectorflow/configs.yaml", Kind: "VectorPromotionConfig", Name: "dev-to-test", Field: "status",
		Reason: "is written by vectorflow on its state branch, never in the config repository: remove it"}}
	if diff := cmp.Diff(want, snap.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if _, ok := snap.Configs["dev-to-test"]; ok {
		t.Error("dev-to-test was loaded with the status a patch gave it")
	}
}
