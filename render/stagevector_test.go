package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

func TestReadStageVector(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]file
		want    overlays.StageVector
		wantErr string // substring; empty means success
	}{{
		name:  "fixture overlay",
		files: map[string]file{"dev/kustomization.yaml": {content: mustRead(t, fixtureRepo+"/apps/overlays/dev/kustomization.yaml")}},
		want: overlays.StageVector{Vector: "podinfo:1.4.0", Images: []v1alpha1.VectorComponent{
			{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.5.4"},
			{Name: "docker.io/library/busybox", Image: "registry.example.com/mirror/busybox", Tag: "1.20"},
		}, BuildsOn: []string{"../../base", "../../components/monitoring"}},
	}, {
		name: "unquoted tags keep their text, digest, file order",
		files: map[string]file{"dev/kustomization.yaml": {content: `
metadata:
  annotations:
    vectorflow.dev/vector: "shop:2.0.0"
    other: x
images:
- name: b
  newTag: 1.20
- name: a
  digest: sha256:abc
- {name: c, newTag: 007, newName: c}
`}},
		want: overlays.StageVector{Vector: "shop:2.0.0", Images: []v1alpha1.VectorComponent{
			{Name: "b", Tag: "1.20"}, {Name: "a", Digest: "sha256:abc"}, {Name: "c", Image: "c", Tag: "007"},
		}},
	}, {
		name:  "no annotations, no images",
		files: map[string]file{"dev/kustomization.yaml": {content: "resources:\n- ../base\n"}},
		want:  overlays.StageVector{BuildsOn: []string{"../base"}},
	}, {
		// What the overlay builds on, relative to its directory: an
		// absolute path is none of its, nor what is no string.
		name: "what it builds on",
		files: map[string]file{"dev/kustomization.yaml": {content: "resources:\n- ../test/\n- app.yaml\n- https://example.com/x.yaml\n" +
			"- /etc\n- ../../out\n- {a: b}\nbases: [../base]\ncomponents: [c]\n"}},
		want: overlays.StageVector{BuildsOn: []string{"../test", "app.yaml", "https:/example.com/x.yaml", "../../out", "../base", "c"}},
	}, {
		name:  "annotations without the vector, empty images",
		files: map[string]file{"dev/kustomization.yaml": {content: "metadata:\n  annotations: {a: b}\nimages: []\n"}},
	}, {
		name:  "empty file",
		files: map[string]file{"dev/kustomization.yaml": {content: ""}},
	}, {
		name:  "kustomization.yml",
		files: map[string]file{"dev/kustomization.yml": {content: "metadata: {annotations: {vectorflow.dev/vector: 'a:1'}}\n"}},
		want:  overlays.StageVector{Vector: "a:1"},
	}, {
		name:  "Kustomization",
		files: map[string]file{"dev/Kustomization": {content: "images: [{name: x, newTag: '1'}]\n"}},
		want:  overlays.StageVector{Images: []v1alpha1.VectorComponent{{Name: "x", Tag: "1"}}},
	}, {
		name:    "malformed YAML names the file",
		files:   map[string]file{"dev/kustomization.yaml": {content: "images: [\n"}},
		wantErr: "parse dev/kustomization.yaml",
	}, {
		name:    "images not a list",
		files:   map[string]file{"dev/kustomization.yaml": {content: "images: {name: x}\n"}},
		wantErr: "dev/kustomization.yaml: images must be a list",
	}, {
		name:    "image not a mapping",
		files:   map[string]file{"dev/kustomization.yaml": {content: "images: [x]\n"}},
		wantErr: "images[0] must be a mapping",
	}, {
		name:    "tag not a string",
		files:   map[string]file{"dev/kustomization.yaml": {content: "images: [{name: x, newTag: [1]}]\n"}},
		wantErr: "images[0].newTag: must be a string",
	}, {
		name:    "vector not a string",
		files:   map[string]file{"dev/kustomization.yaml": {content: "metadata: {annotations: {vectorflow.dev/vector: {a: b}}}\n"}},
		wantErr: `metadata.annotations["vectorflow.dev/vector"]: must be a string`,
	}, {
		name:    "document not a mapping",
		files:   map[string]file{"dev/kustomization.yaml": {content: "- a\n"}},
		wantErr: "a kustomization is a mapping",
	}, {
		name:    "two kustomization files",
		files:   map[string]file{"dev/kustomization.yaml": {content: "{}"}, "dev/Kustomization": {content: "{}"}},
		wantErr: "has both kustomization.yaml and Kustomization",
	}, {
		name:    "no kustomization file",
		files:   map[string]file{"dev/readme": {content: "x"}},
		wantErr: "no kustomization.yaml",
	}}
	for _, tt := range tests {
		_, trees := bothTrees(t, tt.files)
		for treeName, tree := range trees {
			t.Run(tt.name+"/"+treeName, func(t *testing.T) {
				got, err := overlays.ReadStageVector(tree, "dev")
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("ReadStageVector = %+v, %v; want an error containing %q", got, err, tt.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	data, err := repofs.DirTree(".").ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
