package render

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/openapi"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// openapiFixture holds one base Deployment with two containers and two
// overlays that patch one container: "custom" brings its own OpenAPI
// schema (which knows nothing of Deployments, so its patch replaces the
// container list), "plain" does not (the built-in schema merges the
// containers by name).
func openapiFixture() map[string]file {
	patch := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:2\n"
	return map[string]file{
		"base/kustomization.yaml": {content: "resources:\n- deployment.yaml\n"},
		"base/deployment.yaml": {content: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:1
      - name: sidecar
        image: sidecar:1
`},
		"custom/kustomization.yaml": {content: "resources:\n- ../base\nopenapi:\n  path: schema.json\npatches:\n- path: patch.yaml\n"},
		"custom/schema.json":        {content: `{"definitions": {"io.example.v1.Widget": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "example.io", "kind": "Widget", "version": "v1"}]}}}`},
		"custom/patch.yaml":         {content: patch},
		"plain/kustomization.yaml":  {content: "resources:\n- ../base\npatches:\n- path: patch.yaml\n"},
		"plain/patch.yaml":          {content: patch},
	}
}

// TestBuildCustomOpenAPIDoesNotLeak builds an overlay with its own OpenAPI
// schema, then one without: kyaml keeps the schema in a process-global, and
// the second build must not be made with the first one's schema.
func TestBuildCustomOpenAPIDoesNotLeak(t *testing.T) {
	dir, trees := bothTrees(t, openapiFixture())
	wantCustom := testutil.KustomizeBuild(t, filepath.Join(dir, "custom"))
	wantPlain := testutil.KustomizeBuild(t, filepath.Join(dir, "plain"))
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			r := NewRenderer(Options{})
			for i, step := range []struct {
				dir  string
				want []byte
			}{{"custom", wantCustom}, {"plain", wantPlain}, {"custom", wantCustom}, {"plain", wantPlain}} {
				// A fresh Renderer each time: its cache must not hide a leak.
				if i > 1 {
					r = NewRenderer(Options{})
				}
				got, err := r.Build(tree, step.dir)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(step.want), string(got)); diff != "" {
					t.Errorf("build %d of %s differs from kustomize build (-cli +render):\n%s", i, step.dir, diff)
				}
			}
		})
	}
}

// TestBuildManyOverlaysConcurrently renders many overlays from several goroutines at once,
// some with a custom OpenAPI schema, through one Renderer and through
// several; run with -race. Every output must equal the one-at-a-time build.
func TestBuildManyOverlaysConcurrently(t *testing.T) {
	files := openapiFixture()
	var dirs []string
	for i := range 24 {
		d := fmt.Sprintf("overlays/o%02d", i)
		k := fmt.Sprintf("namePrefix: p%d-\nresources:\n- ../../base\nimages:\n- name: app\n  newTag: \"%d\"\npatches:\n- path: patch.yaml\n", i, i)
		if i%6 == 5 {
			k += "openapi:\n  path: schema.json\n"
			files[d+"/schema.json"] = files["custom/schema.json"]
		}
		files[d+"/kustomization.yaml"] = file{content: k}
		files[d+"/patch.yaml"] = files["plain/patch.yaml"]
		dirs = append(dirs, d)
	}
	dirs = append(dirs, "custom", "plain")
	dir, trees := bothTrees(t, files)
	want := map[string]string{}
	for _, d := range dirs {
		want[d] = string(testutil.KustomizeBuild(t, filepath.Join(dir, d)))
	}
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			shared := NewRenderer(Options{})
			var wg sync.WaitGroup
			errs := make(chan error, 8*len(dirs))
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := shared
					if g%2 == 1 {
						r = NewRenderer(Options{})
					}
					for i := range dirs {
						d := dirs[(i+g*5)%len(dirs)]
						got, err := r.Build(tree, d)
						if err != nil {
							errs <- fmt.Errorf("%s: %w", d, err)
							continue
						}
						if diff := cmp.Diff(want[d], string(got)); diff != "" {
							errs <- fmt.Errorf("concurrent build of %s differs from kustomize build (-cli +render):\n%s", d, diff)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestBuildAll: BuildAll gives each overlay what Build gives it, at its
// index, errors included; with ctx done it builds nothing.
func TestBuildAll(t *testing.T) {
	tree := commitDir(t, fixtureRepo)
	dirs := append(slices.Clone(fixtureDirs), "apps/missing", "apps/overlays/dev")
	var overlays []Overlay
	for _, d := range dirs {
		overlays = append(overlays, Overlay{Tree: tree, Dir: d})
	}
	outs, errs := NewRenderer(Options{}).BuildAll(context.Background(), overlays)
	for i, d := range dirs {
		want, wantErr := NewRenderer(Options{}).Build(tree, d)
		if (errs[i] == nil) != (wantErr == nil) || string(outs[i]) != string(want) {
			t.Errorf("BuildAll[%d] (%s) = %d bytes, %v; Build gives %d bytes, %v", i, d, len(outs[i]), errs[i], len(want), wantErr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := NewRenderer(Options{})
	_, errs = r.BuildAll(ctx, overlays)
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("BuildAll with ctx done: [%d] = %v, want context.Canceled", i, err)
		}
	}
	if s := r.Stats(); s.Misses != 0 {
		t.Errorf("BuildAll with ctx done ran %d builds", s.Misses)
	}
}

// TestABuildAloneLeavesTheSchemaToKyaml: the first builds of a process,
// together or not, do not parse kyaml's schema first (kyaml parses it when
// a build needs it, as for the "plain" overlay's merge of containers by
// name), so the few builds of a promotion do not pay for the parse; many
// builds find it parsed. Each output is kustomize's either way.
func TestABuildAloneLeavesTheSchemaToKyaml(t *testing.T) {
	files := openapiFixture()
	files["images/kustomization.yaml"] = file{content: "resources:\n- ../base\nimages:\n- name: app\n  newTag: \"2\"\n"}
	dir, trees := bothTrees(t, files)
	tree := trees["repofs.GitTree"]
	unparsed := func() {
		schemaMu.Lock()
		openapi.ResetOpenAPI()
		schemaReady, soloBuilds = false, 0
		schemaMu.Unlock()
	}
	for _, overlay := range []string{"images", "plain", "custom"} {
		want := testutil.KustomizeBuild(t, filepath.Join(dir, overlay))
		unparsed()
		got, err := NewRenderer(Options{}).Build(tree, overlay)
		if err != nil {
			t.Fatal(err)
		}
		if overlay == "images" && schemaReady {
			t.Errorf("a build alone of %s parsed the schema first", overlay)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s built alone from an unparsed schema differs from kustomize build (-cli +render):\n%s", overlay, diff)
		}
		// Then together with others, first with the schema unparsed, then
		// with it parsed, as a batch finds it.
		if overlay == "images" {
			unparsed()
			overlays := make([]Overlay, maxSoloBuilds/2)
			for i := range overlays {
				overlays[i] = Overlay{Tree: trees["repofs.DirTree"], Dir: overlay}
			}
			outs, errs := NewRenderer(Options{}).BuildAll(context.Background(), overlays)
			if schemaReady {
				t.Errorf("%d builds together parsed the schema first", maxSoloBuilds/2)
			}
			for i := range outs {
				if errs[i] != nil || string(outs[i]) != string(want) {
					t.Errorf("build %d together: %v\n%s", i, errs[i], outs[i])
				}
			}
			for i := 0; i < 2*maxSoloBuilds; i++ {
				if _, err := NewRenderer(Options{}).Build(tree, overlay); err != nil {
					t.Fatal(err)
				}
			}
			if !schemaReady {
				t.Errorf("%d builds left the schema unparsed: builds cannot share it", 2*maxSoloBuilds+maxSoloBuilds/2)
			}
		}
		got, err = NewRenderer(Options{}).Build(tree, overlay)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s built again differs from kustomize build (-cli +render):\n%s", overlay, diff)
		}
	}
}
