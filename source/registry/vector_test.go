package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/vectorflow-dev/vectorflow/source/registry"
	"github.com/vectorflow-dev/vectorflow/source/registry/registrytest"
)

const vectorYAML = `apiVersion: vectorflow.dev/v1alpha1
kind: Vector
metadata:
  name: shop-20261129t101500z
spec:
  template: shop
  version: 20261129T101500Z
  components:
  - name: service-a
    tag: 1.4.10
`

func TestPushPullVectorRoundTrip(t *testing.T) {
	reg := registrytest.Start(t)
	target := "oci://" + reg.Host() + "/acme/vectors"
	r := registry.NewResolver(registry.Options{Keychain: anonymous})
	ctx := context.Background()

	digest, err := r.PushVector(ctx, target, "20261129T101500Z", []byte(vectorYAML))
	if err != nil {
		t.Fatalf("PushVector() error = %v", err)
	}
	got, err := r.PullVector(ctx, target, "20261129T101500Z")
	if err != nil {
		t.Fatalf("PullVector() error = %v", err)
	}
	if diff := cmp.Diff(vectorYAML, string(got)); diff != "" {
		t.Errorf("PullVector() mismatch (-want +got):\n%s", diff)
	}

	// The registry names the same digest for the tag, and the manifest is
	// an OCI artifact other tools (oras, crane) can read.
	resolved, err := r.Resolve(ctx, reg.Host()+"/acme/vectors", registry.ComponentVersion{Version: "20261129T101500Z"})
	if err != nil {
		t.Fatalf("Resolve() of the vector tag: %v", err)
	}
	if resolved.Digest != digest {
		t.Errorf("registry digest %s, PushVector returned %s", resolved.Digest, digest)
	}
	ref, err := name.NewDigest(reg.Host() + "/acme/vectors@" + digest)
	if err != nil {
		t.Fatalf("digest reference: %v", err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatalf("get manifest: %v", err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	shape := []string{string(m.MediaType), m.ArtifactType, string(m.Config.MediaType), string(m.Config.Data)}
	for _, l := range m.Layers {
		shape = append(shape, string(l.MediaType))
	}
	want := []string{"application/vnd.oci.image.manifest.v1+json", "application/vnd.vectorflow.vector.v1",
		"application/vnd.oci.empty.v1+json", "{}", "application/vnd.vectorflow.vector.v1+yaml"}
	if diff := cmp.Diff(want, shape); diff != "" {
		t.Errorf("manifest shape mismatch (-want +got):\n%s", diff)
	}

	again, err := r.PushVector(ctx, target, "20261129T101500Z", []byte(vectorYAML))
	if err != nil {
		t.Fatalf("PushVector() again: %v", err)
	}
	if again != digest {
		t.Errorf("pushing the same vector again gave digest %s, first push %s", again, digest)
	}
	other, err := r.PushVector(ctx, target, "20261129T101500Z", []byte(vectorYAML+"  - name: service-b\n    tag: 2.0.0\n"))
	if err != nil {
		t.Fatalf("PushVector() other content: %v", err)
	}
	if other == digest {
		t.Errorf("different vector content gave the same digest %s", digest)
	}
}

func TestPushVectorSameContentSameDigestAcrossRegistries(t *testing.T) {
	// The digest depends on the content alone: two registries, two
	// resolvers, one digest.
	var digests []string
	for range 2 {
		reg := registrytest.Start(t)
		r := registry.NewResolver(registry.Options{Keychain: anonymous})
		d, err := r.PushVector(context.Background(), "oci://"+reg.Host()+"/acme/vectors", "v1", []byte(vectorYAML))
		if err != nil {
			t.Fatalf("PushVector() error = %v", err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("digests differ: %v", digests)
	}
}

func TestVectorErrors(t *testing.T) {
	reg := registrytest.Start(t)
	reg.PushTags(t, "acme/service-a", "1.4.2")
	r := registry.NewResolver(registry.Options{Keychain: anonymous})
	ctx := context.Background()
	vectors := "oci://" + reg.Host() + "/acme/vectors"
	if _, err := r.PushVector(ctx, vectors, "present", []byte(vectorYAML)); err != nil {
		t.Fatalf("PushVector() error = %v", err)
	}

	tests := []struct {
		name         string
		op           func() error
		wantNotFound bool
		wantMsg      string
	}{
		{name: "pull a missing version", wantNotFound: true, wantMsg: "pull vector absent of " + vectors,
			op: func() error { _, err := r.PullVector(ctx, vectors, "absent"); return err }},
		{name: "pull an image that is not a vector", wantMsg: "is not a vector artifact",
			op: func() error { _, err := r.PullVector(ctx, "oci://"+reg.Host()+"/acme/service-a", "1.4.2"); return err }},
		{name: "target without oci://", wantMsg: "must start with oci://",
			op: func() error {
				_, err := r.PushVector(ctx, reg.Host()+"/acme/vectors", "v1", []byte(vectorYAML))
				return err
			}},
		{name: "version that is not a tag", wantMsg: `vector version "shop:v1" is not a valid OCI tag`,
			op: func() error { _, err := r.PushVector(ctx, vectors, "shop:v1", []byte(vectorYAML)); return err }},
		{name: "empty vector", wantMsg: "is empty: nothing to push",
			op: func() error { _, err := r.PushVector(ctx, vectors, "v1", nil); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantMsg)
			}
			if got := errors.Is(err, registry.ErrNotFound); got != tt.wantNotFound {
				t.Errorf("errors.Is(ErrNotFound) = %v, want %v", got, tt.wantNotFound)
			}
		})
	}
}

func TestPushVectorUnreachable(t *testing.T) {
	reg := registrytest.Start(t)
	target := "oci://" + reg.Host() + "/acme/vectors"
	reg.Close()
	r := registry.NewResolver(registry.Options{Keychain: anonymous})
	_, err := r.PushVector(context.Background(), target, "v1", []byte(vectorYAML))
	var re *registry.RegistryError
	if !errors.As(err, &re) || re.Image != target || re.Op != "push vector v1" {
		t.Fatalf("PushVector() error = %v, want *RegistryError for %s push vector v1", err, target)
	}
}
