package gitwriter

import (
	"bytes"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// FuzzEditOverlay: EditOverlay never panics; what it returns parses as one
// YAML mapping, carries the component as string fields, and is a fixed
// point (applying the same vector again returns it byte for byte).
func FuzzEditOverlay(f *testing.F) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "overlay", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, dir := range dirs {
		in := readOverlayFile(f, filepath.Join(dir, "in.yaml"))
		f.Add(in, "shop:1", "api", "", "1.20", "")
		f.Add(in, "shop:2", "web", "ghcr.io/shop/web", "", digestA)
	}
	f.Add([]byte("images: [{name: api}]\n"), "shop:3", "api", "api", "0777", "")
	f.Add([]byte("metadata: {annotations: {vectorflow.dev/components: \"api,gone\"}}\nimages:\n- name: gone\n"), "s:1", "api", "", "true", "")

	f.Fuzz(func(t *testing.T, in []byte, vector, name, image, tag, digest string) {
		components := []v1alpha1.VectorComponent{{Name: name, Image: image, Tag: tag, Digest: digest}}
		out, err := EditOverlay("kustomization.yaml", in, vector, components)
		if err != nil {
			return
		}
		if _, err := parseOverlay(bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))); err != nil {
			t.Fatalf("output does not parse: %v\ninput:\n%s\noutput:\n%s", err, in, out)
		}
		again, err := EditOverlay("kustomization.yaml", out, vector, components)
		if err != nil {
			t.Fatalf("re-applying: %v\noutput:\n%s", err, out)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("re-applying is not a no-op\ninput:\n%q\nfirst:\n%q\nsecond:\n%q", in, out, again)
		}
		var k struct {
			Metadata struct {
				Annotations map[string]any `yaml:"annotations"`
			} `yaml:"metadata"`
			Images []map[string]any `yaml:"images"`
		}
		if err := yaml.Unmarshal(out, &k); err != nil {
			t.Fatalf("output does not decode: %v\n%s", err, out)
		}
		if got := k.Metadata.Annotations[overlayVectorAnnotation]; got != vector {
			t.Fatalf("vector annotation %#v, want %q\n%s", got, vector, out)
		}
		// The component's entry is named after the image the containers
		// use, or says it with newName; it carries the component's version.
		entry := v1alpha1.VectorComponent{Name: name, Image: image}.ImageName()
		want := map[string]any{}
		for key, v := range map[string]string{"newTag": tag, "digest": digest} {
			if v != "" {
				want[key] = v
			}
		}
		for _, im := range k.Images {
			if im["name"] != entry && im["newName"] != entry {
				continue
			}
			for _, key := range []string{"newTag", "digest"} {
				if im[key] != want[key] {
					t.Fatalf("images entry %q: %s = %#v, want %#v\ninput:\n%s\noutput:\n%s", entry, key, im[key], want[key], in, out)
				}
			}
			return
		}
		t.Fatalf("no images entry %q\ninput:\n%s\noutput:\n%s", entry, in, out)
	})
}
