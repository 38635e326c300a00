package gitwriter

import (
	"bytes"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// overlayFuzzSeeds are small overlays with the shapes the golden cases
// cover. They are small on purpose: the fuzzer minimizes every input that
// finds new coverage for up to -fuzzminimizetime (60s) before it fuzzes on,
// and its minimizer tries removing every range of bytes, which is quadratic
// in the input's length. Seeded with the golden files (300 to 700 bytes),
// each minimization ran 20 to 60 s at ~3,500 execs/s while the fuzzer
// reported 0 execs/s. The golden files get the same checks in
// TestEditOverlayFuzzPropertyOnGoldens.
var overlayFuzzSeeds = []string{
	"images:\n- name: api # pinned\n  newTag: 1.4.0\n",
	"metadata:\n  annotations:\n    vectorflow.dev/components: api,gone\nimages:\n- name: gone\n  newTag: \"1\"\n",
	"images: [{name: api, newTag: 1.4.0}]\n",
	"images:\r\n- name: api\r\n  newTag: '1.19'\r\n",
	"metadata:\n    annotations: {a: b}\nimages:\n    -   name: api\n        digest: sha256:1\n",
	"images:\n- name: api\n  newName: r.io/s/api\n  newTag: \"1.0\"\n",
	"images:\n- name: r.io/s/api\n  newName: m.io/s/api\n  newTag: 1.0.0\n",
	"images:\n- newTag: v1\n  name: api\n",
	"images:\nmetadata:\n",
	"kind: Kustomization\n",
}

// FuzzEditOverlay: EditOverlay never panics or stalls; what it returns
// parses as one YAML mapping, carries the component's version, and is a
// fixed point (applying the same vector again returns it byte for byte).
func FuzzEditOverlay(f *testing.F) {
	for _, in := range overlayFuzzSeeds {
		f.Add([]byte(in), "shop:1", "api", "", "1.20", "")
		f.Add([]byte(in), "shop:2", "api", "r.io/s/api", "", digestA)
	}
	f.Add([]byte("images: [{name: api}]\n"), "shop:3", "api", "api", "0777", "")
	f.Fuzz(checkEditOverlay)
}

// TestEditOverlayFuzzPropertyOnGoldens holds the golden inputs to the
// fuzz target's property, for components matching and not matching their
// entries.
func TestEditOverlayFuzzPropertyOnGoldens(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "overlay", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		in := readOverlayFile(t, filepath.Join(dir, "in.yaml"))
		t.Run(filepath.Base(dir), func(t *testing.T) {
			checkEditOverlay(t, in, "shop:1", "api", "", "1.20", "")
			checkEditOverlay(t, in, "shop:2", "web", "ghcr.io/shop/web", "", digestA)
			checkEditOverlay(t, in, "shop:3", "api", "registry.example.com/shop/api", "1.1.0", "")
		})
	}
}

func checkEditOverlay(t *testing.T, in []byte, vector, name, image, tag, digest string) {
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
	if got := k.Metadata.Annotations[v1alpha1.VectorAnnotation]; got != vector {
		t.Fatalf("vector annotation %#v, want %q\n%s", got, vector, out)
	}
	// The component's entry is named after the image the containers use,
	// or says it with newName; it carries the component's version.
	entry := v1alpha1.VectorComponent{Name: name, Image: image}.ImageName()
	want := map[string]any{}
	for key, v := range map[string]string{"newTag": tag, "digest": digest} {
		if v != "" {
			want[key] = v
		}
	}
	// An entry the input had for the image keeps its name and newName:
	// which containers it rewrites and where they pull from.
	var before struct {
		Images []map[string]any `yaml:"images"`
	}
	if yaml.Unmarshal(bytes.ReplaceAll(in, []byte("\r\n"), []byte("\n")), &before) == nil {
		for _, im := range before.Images {
			if im["name"] == entry || im["newName"] == entry {
				want["name"], want["newName"] = im["name"], im["newName"]
			}
		}
	}
	for _, im := range k.Images {
		if im["name"] != entry && im["newName"] != entry {
			continue
		}
		keys := []string{"newTag", "digest"}
		if _, ok := want["name"]; ok {
			keys = append(keys, "name", "newName")
		}
		for _, key := range keys {
			if im[key] != want[key] {
				t.Fatalf("images entry %q: %s = %#v, want %#v\ninput:\n%s\noutput:\n%s", entry, key, im[key], want[key], in, out)
			}
		}
		return
	}
	t.Fatalf("no images entry %q\ninput:\n%s\noutput:\n%s", entry, in, out)
}
