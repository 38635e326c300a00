package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestWatchesImagesAsRegistriesNameThem: a registry's push event names the
// repository its own way (Docker Hub's long form, a tag, a digest); it
// triggers the controller whose templates use that repository under any
// spelling, and no other.
func TestWatchesImagesAsRegistriesNameThem(t *testing.T) {
	tmpl := &v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: v1alpha1.VectorTemplateSpec{
		Components: []v1alpha1.ComponentSpec{{Name: "nginx"}, {Name: "api", Image: "acme/api"}, {Name: "web", Image: "registry.example.com/acme/web"}}}}
	c := &Controller{opts: Options{URL: "https://git.example/config.git"}}
	c.watched = watchedBy(&source.Snapshot{URL: "https://git.example/config.git", Templates: map[string]*v1alpha1.VectorTemplate{"acme": tmpl}})
	for image, want := range map[string]bool{
		"nginx":                           true,
		"docker.io/library/nginx":         true,
		"index.docker.io/library/nginx:1": true,
		"docker.io/acme/api@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"registry.example.com/acme/web:2":  true,
		"registry.example.com/acme/api":    false,
		"ghcr.io/library/nginx":            false,
		"registry.example.com/acme/web-v2": false,
	} {
		if got := c.Watches("", image); got != want {
			t.Errorf("Watches(image %q) = %v, want %v", image, got, want)
		}
	}
}
