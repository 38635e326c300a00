package overlays

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseImage(t *testing.T) {
	const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image string
		want  ImageReference
	}{
		{"nginx", ImageReference{Name: "nginx", Repository: "index.docker.io/library/nginx"}},
		{"nginx:1.27", ImageReference{Name: "nginx", Repository: "index.docker.io/library/nginx", Tag: "1.27"}},
		{"docker.io/library/nginx:1.27", ImageReference{Name: "docker.io/library/nginx", Repository: "index.docker.io/library/nginx", Tag: "1.27"}},
		{"acme/app@" + dig, ImageReference{Name: "acme/app", Repository: "index.docker.io/acme/app", Digest: dig}},
		{"ghcr.io/acme/app:1.2.3@" + dig, ImageReference{Name: "ghcr.io/acme/app", Repository: "ghcr.io/acme/app", Tag: "1.2.3", Digest: dig}},
		{"localhost:5000/app:v1", ImageReference{Name: "localhost:5000/app", Repository: "localhost:5000/app", Tag: "v1"}},
		{"localhost/app", ImageReference{Name: "localhost/app", Repository: "localhost/app"}},
		{"127.0.0.1:40123/acme/service-a:latest", ImageReference{Name: "127.0.0.1:40123/acme/service-a", Repository: "127.0.0.1:40123/acme/service-a", Tag: "latest"}},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, err := ParseImage(tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseImage(%q) (-want +got):\n%s", tt.image, diff)
			}
		})
	}
	for _, bad := range []string{"", "app:", "App/Upper", "app@sha256:short", "http://registry.example.com/app"} {
		if got, err := ParseImage(bad); err == nil {
			t.Errorf("ParseImage(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestSameRepository(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"nginx", "docker.io/library/nginx:1.27", true},
		{"nginx:1.26", "index.docker.io/library/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true},
		{"acme/app", "docker.io/acme/app", true},
		{"acme/app", "ghcr.io/acme/app", false},
		{"registry.example.com/acme/app", "registry.example.com/acme/app:2", true},
		{"registry.example.com/acme/app", "registry.example.com:443/acme/app", false},
		// Not an image reference: compared as kustomize writes it.
		{"app:${TAG}", "app", true},
		{"App", "app", false},
	}
	for _, tt := range tests {
		if got := SameRepository(tt.a, tt.b); got != tt.want {
			t.Errorf("SameRepository(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
