package gitwriter

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestPromotionMessage(t *testing.T) {
	const (
		d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	tr := Trailers{Promotion: "shop-to-prod-3", Sequence: 3, Vector: "shop:1", Source: "Stage/dev", Target: "Stage/prod"}
	trailers := FormatTrailers(tr)
	tests := []struct {
		name     string
		from, to []v1alpha1.VectorComponent
		want     string
	}{{
		name: "upgrade, new, removed, unchanged",
		from: []v1alpha1.VectorComponent{
			{Name: "service-d", Tag: "0.9.0"},
			{Name: "service-a", Tag: "1.4.1"},
			{Name: "service-b", Tag: "3.0.0"},
		},
		to: []v1alpha1.VectorComponent{
			{Name: "service-a", Tag: "1.4.2"},
			{Name: "service-b", Tag: "3.0.0"},
			{Name: "service-c", Tag: "2.0.0"},
		},
		want: "promote shop:1 to eu/prod\n\nservice-a 1.4.1 -> 1.4.2\nservice-c (new) 2.0.0\nservice-d removed\n\n" + trailers,
	}, {
		name: "same tag rebuilt: digests shown, shortened",
		from: []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.1", Digest: d1}},
		to:   []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.1", Digest: d2}},
		want: "promote shop:1 to eu/prod\n\nservice-a 1.4.1@sha256:111111111111 -> 1.4.1@sha256:222222222222\n\n" + trailers,
	}, {
		name: "digest only, and an image move",
		from: []v1alpha1.VectorComponent{{Name: "service-a", Image: "old.example.com/a", Digest: d1}},
		to:   []v1alpha1.VectorComponent{{Name: "service-a", Image: "new.example.com/a", Digest: d2}},
		want: "promote shop:1 to eu/prod\n\nservice-a sha256:111111111111 -> sha256:222222222222 (image old.example.com/a -> new.example.com/a)\n\n" + trailers,
	}, {
		name: "tag changes, digest added: the tag says enough",
		from: []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.1"}},
		to:   []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.2", Digest: d2}},
		want: "promote shop:1 to eu/prod\n\nservice-a 1.4.1 -> 1.4.2\n\n" + trailers,
	}, {
		name: "nothing changed: subject and trailers",
		from: []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.1"}},
		to:   []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.1"}},
		want: "promote shop:1 to eu/prod\n\n" + trailers,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PromotionMessage(Promotion{Vector: "shop:1", Landscape: "eu", Stage: "prod", From: tt.from, To: tt.to, Trailers: tr})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PromotionMessage (-want +got):\n%s", diff)
			}
			back, ok := ParseTrailers(got)
			if !ok || !cmp.Equal(back, tr) {
				t.Errorf("trailers do not read back from the message: ok=%v %+v", ok, back)
			}
		})
	}
}
