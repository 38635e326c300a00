package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

const (
	imgDigestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	imgDigestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestSplitImage(t *testing.T) {
	tests := []struct{ image, name, tag, digest string }{
		{"api", "api", "", ""},
		{"api:1.0", "api", "1.0", ""},
		{"registry.example.com/shop/api:1.0", "registry.example.com/shop/api", "1.0", ""},
		{"localhost:5000/shop/api", "localhost:5000/shop/api", "", ""},
		{"localhost:5000/shop/api:1.0", "localhost:5000/shop/api", "1.0", ""},
		{"registry.example.com/shop/api@" + imgDigestA, "registry.example.com/shop/api", "", imgDigestA},
		{"registry.example.com/shop/api:1.0@" + imgDigestA, "registry.example.com/shop/api", "1.0", imgDigestA},
	}
	for _, tt := range tests {
		name, tag, digest := overlays.SplitImage(tt.image)
		if diff := cmp.Diff([]string{tt.name, tt.tag, tt.digest}, []string{name, tag, digest}); diff != "" {
			t.Errorf("SplitImage(%q) (-want +got):\n%s", tt.image, diff)
		}
	}
}

func TestImageMatches(t *testing.T) {
	tests := []struct {
		image, name string
		want        bool
	}{
		{"registry.example.com/shop/api", "registry.example.com/shop/api", true},
		{"registry.example.com/shop/api:1.0.0", "registry.example.com/shop/api", true},
		{"registry.example.com/shop/api@" + imgDigestA, "registry.example.com/shop/api", true},
		{"registry.example.com/shop/api:1.0@" + imgDigestA, "registry.example.com/shop/api", true},
		{"registry.example.com/shop/api", "api", false},
		{"registry.example.com/shop/api-v2:1", "registry.example.com/shop/api", false},
		{"api:1", "[", false}, // kustomize matches nothing with a name that is no expression
	}
	for _, tt := range tests {
		if got := overlays.ImageMatches(tt.image, tt.name); got != tt.want {
			t.Errorf("ImageMatches(%q, %q) = %v, want %v", tt.image, tt.name, got, tt.want)
		}
	}
}

func TestImages(t *testing.T) {
	manifests := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  namespace: dev
spec:
  template:
    spec:
      initContainers:
      - name: migrate
        image: registry.example.com/shop/api:1.0.0
      containers:
      - name: api
        image: registry.example.com/shop/api:1.0.0
      - image: busybox
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: report
            image: registry.example.com/shop/report@` + imgDigestA + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
data:
  image: not-a-container
`
	got, err := overlays.Images([]byte(manifests))
	if err != nil {
		t.Fatal(err)
	}
	want := []overlays.RenderedImage{
		{Object: "Deployment dev/shop", Container: "migrate", Image: "registry.example.com/shop/api:1.0.0"},
		{Object: "Deployment dev/shop", Container: "api", Image: "registry.example.com/shop/api:1.0.0"},
		{Object: "Deployment dev/shop", Container: "spec.template.spec.containers[1]", Image: "busybox"},
		{Object: "CronJob report", Container: "report", Image: "registry.example.com/shop/report@" + imgDigestA},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := overlays.Images([]byte("kind: [unclosed\n")); err == nil {
		t.Errorf("manifests that do not parse must be an error")
	}
}

func TestCheckComponents(t *testing.T) {
	api := func(image string) overlays.RenderedImage {
		return overlays.RenderedImage{Object: "Deployment dev/shop", Container: "api", Image: image}
	}
	worker := func(image string) overlays.RenderedImage {
		return overlays.RenderedImage{Object: "Deployment dev/worker", Container: "worker", Image: image}
	}
	component := v1alpha1.VectorComponent{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"}
	tests := []struct {
		name       string
		images     []overlays.RenderedImage
		entries    []v1alpha1.VectorComponent // the overlay's images entries, as overlays.StageVector reads them
		components []v1alpha1.VectorComponent
		want       []string // the problems; nil means the overlay runs the vector
	}{{
		name:       "runs the tag",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0"), worker("busybox")},
		components: []v1alpha1.VectorComponent{component},
	}, {
		name:       "runs the digest",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api@" + imgDigestB)},
		components: []v1alpha1.VectorComponent{{Name: "api", Image: "registry.example.com/shop/api", Digest: imgDigestB}},
	}, {
		name:       "runs tag and digest",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0@" + imgDigestB)},
		components: []v1alpha1.VectorComponent{{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0", Digest: imgDigestB}},
	}, {
		name:       "still the old tag",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.0.0")},
		components: []v1alpha1.VectorComponent{component},
		want: []string{"component api (registry.example.com/shop/api) renders nowhere at registry.example.com/shop/api:1.1.0: " +
			"the overlay's containers use registry.example.com/shop/api:1.0.0 (container api of Deployment dev/shop)"},
	}, {
		name:       "the tag without the digest",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0")},
		components: []v1alpha1.VectorComponent{{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0", Digest: imgDigestB}},
		want: []string{"component api (registry.example.com/shop/api) renders nowhere at registry.example.com/shop/api:1.1.0@" + imgDigestB +
			": the overlay's containers use registry.example.com/shop/api:1.1.0 (container api of Deployment dev/shop)"},
	}, {
		name:       "matches no container",
		images:     []overlays.RenderedImage{api("api:1.1.0"), worker("busybox"), worker("busybox")},
		components: []v1alpha1.VectorComponent{component},
		want: []string{"component api (registry.example.com/shop/api) renders nowhere: no container uses registry.example.com/shop/api; " +
			"the overlay's containers use api:1.1.0, busybox"},
	}, {
		name:       "no containers at all",
		components: []v1alpha1.VectorComponent{{Name: "api", Tag: "1"}},
		want:       []string{"component api renders nowhere: no container uses api; the overlay's containers use no images (the overlay has no containers)"},
	}, {
		name:       "one container left behind",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0"), worker("registry.example.com/shop/api:1.0.0")},
		components: []v1alpha1.VectorComponent{component},
		want: []string{"component api (registry.example.com/shop/api) renders at registry.example.com/shop/api:1.1.0, " +
			"but other containers still use registry.example.com/shop/api:1.0.0 (container worker of Deployment dev/worker)"},
	}, {
		// Docker Hub's short and long names are one repository: a container
		// kustomize's entry (matching as written) left behind still runs it.
		name:       "a container left behind under Docker Hub's long name",
		images:     []overlays.RenderedImage{api("nginx:1.27"), worker("docker.io/library/nginx:1.26")},
		components: []v1alpha1.VectorComponent{{Name: "nginx", Tag: "1.27"}},
		want: []string{"component nginx renders at nginx:1.27, " +
			"but other containers still use docker.io/library/nginx:1.26 (container worker of Deployment dev/worker)"},
	}, {
		name:       "runs the tag under Docker Hub's long name",
		images:     []overlays.RenderedImage{api("index.docker.io/library/nginx:1.27")},
		components: []v1alpha1.VectorComponent{{Name: "nginx", Tag: "1.27"}},
	}, {
		name:       "placeholder entry: runs the image its newName names",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0")},
		entries:    []v1alpha1.VectorComponent{{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"}},
		components: []v1alpha1.VectorComponent{component},
	}, {
		name:       "mirror entry: runs the mirror's image at the tag",
		images:     []overlays.RenderedImage{api("mirror.example.com/shop/api:1.1.0"), worker("busybox")},
		entries:    []v1alpha1.VectorComponent{{Name: "registry.example.com/shop/api", Image: "mirror.example.com/shop/api", Tag: "1.1.0"}},
		components: []v1alpha1.VectorComponent{component},
	}, {
		name:       "mirror entry: a container left behind on the mirror",
		images:     []overlays.RenderedImage{api("mirror.example.com/shop/api:1.1.0"), worker("mirror.example.com/shop/api:1.0.0")},
		entries:    []v1alpha1.VectorComponent{{Name: "registry.example.com/shop/api", Image: "mirror.example.com/shop/api", Tag: "1.1.0"}},
		components: []v1alpha1.VectorComponent{component},
		want: []string{"component api (registry.example.com/shop/api, run as mirror.example.com/shop/api) renders at mirror.example.com/shop/api:1.1.0, " +
			"but other containers still use mirror.example.com/shop/api:1.0.0 (container worker of Deployment dev/worker)"},
	}, {
		name:       "mirror entry: the registry's image does not count",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0")},
		entries:    []v1alpha1.VectorComponent{{Name: "registry.example.com/shop/api", Image: "mirror.example.com/shop/api", Tag: "1.1.0"}},
		components: []v1alpha1.VectorComponent{component},
		want: []string{"component api (registry.example.com/shop/api, run as mirror.example.com/shop/api) renders nowhere: no container uses mirror.example.com/shop/api; " +
			"the overlay's containers use registry.example.com/shop/api:1.1.0"},
	}, {
		name:       "an entry for another image changes nothing",
		images:     []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0")},
		entries:    []v1alpha1.VectorComponent{{Name: "web", Image: "mirror.example.com/shop/web", Tag: "2"}},
		components: []v1alpha1.VectorComponent{component},
	}, {
		name:   "every component is checked",
		images: []overlays.RenderedImage{api("registry.example.com/shop/api:1.1.0")},
		components: []v1alpha1.VectorComponent{
			{Name: "web", Tag: "2"}, component, {Name: "db", Image: "postgres", Tag: "16"},
		},
		want: []string{
			"component web renders nowhere: no container uses web; the overlay's containers use registry.example.com/shop/api:1.1.0",
			"component db (postgres) renders nowhere: no container uses postgres; the overlay's containers use registry.example.com/shop/api:1.1.0",
		},
	}}
	names := NewImageNames() // shared: a name remembered from one case answers as parsed in the next
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckComponents(tt.images, overlays.StageVector{Images: tt.entries}, tt.components, overlays.PartsOf)
			for range 2 { // parsed, then remembered
				remembered := CheckComponents(tt.images, overlays.StageVector{Images: tt.entries}, tt.components, names.Parts)
				if diff := cmp.Diff(fmt.Sprint(err), fmt.Sprint(remembered)); diff != "" {
					t.Errorf("with ImageNames (-parsed +remembered):\n%s", diff)
				}
			}
			var got []string
			if err != nil {
				ne, ok := err.(*NoEffectError)
				if !ok {
					t.Fatalf("want a *NoEffectError, got %T %v", err, err)
				}
				got = ne.Problems
				if err.Error() != strings.Join(got, "; ") {
					t.Errorf("message %q does not list the problems", err.Error())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkCheckComponents checks a two-component vector against a render
// of four containers, as a pass checks each stage naming a vector: parsing
// every name (overlays.PartsOf) and with the names remembered across passes
// (ImageNames), side by side.
func BenchmarkCheckComponents(b *testing.B) {
	images := []overlays.RenderedImage{
		{Object: "Deployment dev/shop", Container: "api", Image: "registry.example.com/shop/api:1.1.0"},
		{Object: "Deployment dev/shop", Container: "sidecar", Image: "docker.io/library/envoy:1.30"},
		{Object: "Deployment dev/worker", Container: "worker", Image: "registry.example.com/shop/worker@" + imgDigestA},
		{Object: "CronJob report", Container: "report", Image: "busybox"},
	}
	components := []v1alpha1.VectorComponent{
		{Name: "api", Image: "registry.example.com/shop/api", Tag: "1.1.0"},
		{Name: "worker", Image: "registry.example.com/shop/worker", Digest: imgDigestA},
	}
	b.Run("parsed", func(b *testing.B) {
		for b.Loop() {
			if err := CheckComponents(images, overlays.StageVector{}, components, overlays.PartsOf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		names := NewImageNames()
		for b.Loop() {
			if err := CheckComponents(images, overlays.StageVector{}, components, names.Parts); err != nil {
				b.Fatal(err)
			}
		}
	})
}
