package render

import (
	"github.com/vectorflow-dev/vectorflow/source/repofs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

func TestReadStageVector(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]file
		want    StageVector
		wantErr string // substring; empty means success
	}{{
		name:  "fixture overlay",
		files: map[string]file{"dev/kustomization.yaml": {content: mustRead(t, fixtureRepo+"/apps/overlays/dev/kustomization.yaml")}},
		want: StageVector{Vector: "podinfo:1.4.0", Images: []v1alpha1.VectorComponent{
			{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.5.4"},
			{Name: "docker.io/library/busybox", Image: "registry.example.com/mirror/busybox", Tag: "1.20"},
		}},
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
		want: StageVector{Vector: "shop:2.0.0", Images: []v1alpha1.VectorComponent{
			{Name: "b", Tag: "1.20"}, {Name: "a", Digest: "sha256:abc"}, {Name: "c", Image: "c", Tag: "007"},
		}},
	}, {
		name:  "no annotations, no images",
		files: map[string]file{"dev/kustomization.yaml": {content: "resources:\n- ../base\n"}},
	}, {
		name:  "annotations without the vector, empty images",
		files: map[string]file{"dev/kustomization.yaml": {content: "metadata:\n  annotations: {a: b}\nimages: []\n"}},
	}, {
		name:  "empty file",
		files: map[string]file{"dev/kustomization.yaml": {content: ""}},
	}, {
		name:  "kustomization.yml",
		files: map[string]file{"dev/kustomization.yml": {content: "metadata: {annotations: {vectorflow.dev/vector: 'a:1'}}\n"}},
		want:  StageVector{Vector: "a:1"},
	}, {
		name:  "Kustomization",
		files: map[string]file{"dev/Kustomization": {content: "images: [{name: x, newTag: '1'}]\n"}},
		want:  StageVector{Images: []v1alpha1.VectorComponent{{Name: "x", Tag: "1"}}},
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
				got, err := ReadStageVector(tree, "dev")
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

// FuzzReadStageVector: any input either fails with an error naming the file
// or yields a StageVector that, written back as a kustomization, reads the same.
func FuzzReadStageVector(f *testing.F) {
	for _, seed := range []string{
		"",
		"images: [{name: a, newTag: 1.20, newName: b, digest: 'sha256:0'}]\n",
		"metadata: {annotations: {vectorflow.dev/vector: 'x:1'}}\n",
		"metadata: null\nimages: null\n",
		"images: [&a {name: x}, *a]\n",
		"metadata: &m {annotations: *m}\n",
		"- a\n",
		"images: [\n",
		"a: !!binary AAAA\n",
		"? [a]\n: b\n",
		"metadata:\n  annotations:\n    vectorflow.dev/vector: \"\\t\\u0000\"\n",
	} {
		f.Add([]byte(seed))
	}
	for _, bomb := range testutil.HostileYAML() {
		f.Add(bomb)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "dev/kustomization.yaml"
		sv, err := parseStageVector(file, data)
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("error %q does not name %s", err, file)
			}
			return
		}
		again, err := parseStageVector(file, writeStageVector(t, sv))
		if err != nil {
			t.Fatalf("re-reading %+v: %v", sv, err)
		}
		if diff := cmp.Diff(sv, again); diff != "" {
			t.Fatalf("re-read differs (-first +again):\n%s", diff)
		}
	})
}

// writeStageVector renders sv as the kustomization fields it was read from.
func writeStageVector(t *testing.T, sv StageVector) []byte {
	t.Helper()
	k := yaml.NewMapRNode(nil)
	if sv.Vector != "" {
		if err := k.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata", "annotations"),
			yaml.SetField(v1alpha1.VectorAnnotation, yaml.NewStringRNode(sv.Vector))); err != nil {
			t.Fatal(err)
		}
	}
	if len(sv.Images) > 0 {
		images := yaml.NewListRNode()
		for _, c := range sv.Images {
			image := yaml.NewMapRNode(nil)
			for _, f := range []struct{ key, value string }{{"name", c.Name}, {"newName", c.Image}, {"newTag", c.Tag}, {"digest", c.Digest}} {
				if f.value != "" {
					if err := image.PipeE(yaml.SetField(f.key, yaml.NewStringRNode(f.value))); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := images.PipeE(yaml.Append(image.YNode())); err != nil {
				t.Fatal(err)
			}
		}
		if err := k.PipeE(yaml.SetField("images", images)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := k.String()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(out)
}

// TestStageVectorEntry reads a component's version back from the overlays a
// promotion writes, in every layout the edit takes over: the entry named
// after the component's image, the placeholder entry whose newName is it,
// and the entry that moves the image to a mirror.
func TestStageVectorEntry(t *testing.T) {
	const image = "registry.example.com/shop/api"
	tests := []struct {
		name    string
		overlay string
		want    v1alpha1.VectorComponent // zero: no entry
	}{
		{"named after the image", "images:\n- name: busybox\n  newTag: '1'\n- name: registry.example.com/shop/api\n  newTag: 1.1.0\n",
			v1alpha1.VectorComponent{Name: image, Tag: "1.1.0"}},
		{"placeholder", "images:\n- name: api\n  newName: registry.example.com/shop/api\n  newTag: 1.1.0\n",
			v1alpha1.VectorComponent{Name: "api", Image: image, Tag: "1.1.0"}},
		{"mirror", "images:\n- name: registry.example.com/shop/api\n  newName: mirror.example.com/shop/api\n  digest: sha256:b\n",
			v1alpha1.VectorComponent{Name: image, Image: "mirror.example.com/shop/api", Digest: "sha256:b"}},
		{"none", "images:\n- name: api\n  newTag: 1.1.0\n", v1alpha1.VectorComponent{}},
		{"two: the edit refuses, so none", "images:\n- name: api\n  newName: registry.example.com/shop/api\n- name: registry.example.com/shop/api\n", v1alpha1.VectorComponent{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv, err := parseStageVector("dev/kustomization.yaml", []byte(tt.overlay))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := sv.Entry(image)
			if ok != (tt.want != v1alpha1.VectorComponent{}) {
				t.Errorf("found = %v", ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entry (-want +got):\n%s", diff)
			}
		})
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
