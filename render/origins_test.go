package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestBuildWithOriginsNamesFiles: every resource of a composed build names
// the file that holds it, through bases and patches, in both trees.
func TestBuildWithOriginsNamesFiles(t *testing.T) {
	_, trees := bothTrees(t, map[string]file{
		"vectorflow/kustomization.yaml": {content: "resources: [stages.yaml, ../common]\npatches:\n- path: patch.yaml\n"},
		"vectorflow/stages.yaml":        {content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"},
		"vectorflow/patch.yaml":         {content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  x: y\n"},
		"common/kustomization.yaml":     {content: "resources: [c.yaml]\n"},
		"common/c.yaml":                 {content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"},
	})
	want := map[string]string{"a": "vectorflow/stages.yaml", "b": "vectorflow/stages.yaml", "c": "common/c.yaml"}
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			out, err := NewRenderer(Options{}).BuildWithOrigins(context.Background(), tree, "vectorflow")
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := kio.FromBytes(out)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, n := range nodes {
				file, ok := repofs.OriginFile("vectorflow", n.GetAnnotations()[repofs.OriginAnnotation])
				if !ok {
					t.Errorf("%s has no usable origin: %q", n.GetName(), n.GetAnnotations()[repofs.OriginAnnotation])
				}
				got[n.GetName()] = file
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("origins (-want +got):\n%s", diff)
			}
			// The plain build of the same directory is untouched.
			plain, err := NewRenderer(Options{}).Build(tree, "vectorflow")
			if err != nil {
				t.Fatal(err)
			}
			if string(plain) == string(out) {
				t.Error("Build and BuildWithOrigins gave the same output")
			}
		})
	}
}
