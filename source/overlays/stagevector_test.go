package overlays

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

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
		sv, err := ParseStageVector(file, data)
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("error %q does not name %s", err, file)
			}
			return
		}
		again, err := ParseStageVector(file, writeStageVector(t, sv))
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
			sv, err := ParseStageVector("dev/kustomization.yaml", []byte(tt.overlay))
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
