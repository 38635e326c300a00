package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of a vector artifact: an OCI 1.1 artifact manifest with the
// empty config, its artifactType, and one layer holding the vector YAML.
const (
	VectorArtifactType  = "application/vnd.vectorflow.vector.v1"
	VectorLayerType     = "application/vnd.vectorflow.vector.v1+yaml"
	emptyConfigContents = "{}"
)

// maxVectorSize bounds what PullVector reads: a vector is a list of
// component versions, a few kilobytes; anything bigger is not one.
const maxVectorSize = 4 << 20

// PushVector pushes vectorYAML to target (oci://host/repository) as a vector
// artifact tagged version and returns the manifest digest. The manifest is
// built byte for byte from the content alone (no timestamps), so pushing the
// same vector again yields the same digest and changes nothing.
func (r *Resolver) PushVector(ctx context.Context, target, version string, vectorYAML []byte) (string, error) {
	tag, err := r.vectorTag(target, version)
	if err != nil {
		return "", err
	}
	if len(vectorYAML) == 0 {
		return "", fmt.Errorf("vector %s for %s is empty: nothing to push", version, target)
	}
	fail := func(err error) (string, error) {
		return "", &RegistryError{Image: target, Op: "push vector " + version, Err: err}
	}
	config := static.NewLayer([]byte(emptyConfigContents), types.OCIEmptyJSON)
	layer := static.NewLayer(vectorYAML, VectorLayerType)
	manifest, err := vectorManifest(config, layer)
	if err != nil {
		return fail(err)
	}
	opts := r.remoteOptions(ctx)
	for _, blob := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(tag.Repository, blob, opts...); err != nil {
			return fail(err)
		}
	}
	if err := remote.Put(tag, manifest, opts...); err != nil {
		return fail(err)
	}
	digest, _, err := v1.SHA256(bytes.NewReader(manifest.raw))
	if err != nil {
		return fail(err)
	}
	return digest.String(), nil
}

// PullVector reads the vector YAML that target holds under version, so an
// environment can apply exactly the vector another one promoted.
func (r *Resolver) PullVector(ctx context.Context, target, version string) ([]byte, error) {
	tag, err := r.vectorTag(target, version)
	if err != nil {
		return nil, err
	}
	fail := func(err error) ([]byte, error) {
		return nil, &RegistryError{Image: target, Op: "pull vector " + version, Err: err}
	}
	opts := r.remoteOptions(ctx)
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		return fail(notFound(err))
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return fail(fmt.Errorf("manifest %s: %w", desc.Digest, err))
	}
	if m.ArtifactType != VectorArtifactType || len(m.Layers) != 1 || m.Layers[0].MediaType != VectorLayerType {
		return fail(fmt.Errorf("%s:%s (%s) is not a vector artifact: want artifactType %s with one %s layer; pick the vector upload target",
			target, version, desc.Digest, VectorArtifactType, VectorLayerType))
	}
	if m.Layers[0].Size > maxVectorSize {
		return fail(fmt.Errorf("vector layer is %d bytes, more than the %d a vector can be", m.Layers[0].Size, maxVectorSize))
	}
	blob, err := remote.Layer(tag.Repository.Digest(m.Layers[0].Digest.String()), opts...)
	if err != nil {
		return fail(err)
	}
	rc, err := blob.Compressed()
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	// The reader checks the digest at EOF, so read to the end.
	b, err := io.ReadAll(io.LimitReader(rc, maxVectorSize+1))
	if err != nil {
		return fail(err)
	}
	if int64(len(b)) != m.Layers[0].Size {
		return fail(fmt.Errorf("vector layer %s has %d bytes, the manifest says %d", m.Layers[0].Digest, len(b), m.Layers[0].Size))
	}
	return b, nil
}

// vectorTag parses oci://host/repository and the version into a tag.
func (r *Resolver) vectorTag(target, version string) (name.Tag, error) {
	repo, ok := strings.CutPrefix(target, "oci://")
	if !ok {
		return name.Tag{}, fmt.Errorf("vector upload target %q must start with oci://, e.g. oci://registry.example.com/acme/vectors", target)
	}
	if _, err := r.repository(repo); err != nil {
		return name.Tag{}, fmt.Errorf("vector upload target %q: %w", target, err)
	}
	tag, err := name.NewTag(repo+":"+version, append(r.nameOptions(), name.StrictValidation)...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("vector version %q is not a valid OCI tag for %s: %w", version, target, err)
	}
	return tag, nil
}

// rawManifest is a manifest pushed as the exact bytes built here.
type rawManifest struct {
	raw []byte
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func vectorManifest(config, layer v1.Layer) (rawManifest, error) {
	configDesc, err := describe(config)
	if err != nil {
		return rawManifest{}, err
	}
	// The OCI image spec asks for the empty config's content inline.
	configDesc.Data = []byte(emptyConfigContents)
	layerDesc, err := describe(layer)
	if err != nil {
		return rawManifest{}, err
	}
	raw, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  VectorArtifactType,
		Config:        configDesc,
		Layers:        []v1.Descriptor{layerDesc},
	})
	if err != nil {
		return rawManifest{}, fmt.Errorf("encode vector manifest: %w", err)
	}
	return rawManifest{raw: raw}, nil
}

func describe(l v1.Layer) (v1.Descriptor, error) {
	digest, err := l.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := l.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := l.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Size: size, Digest: digest}, nil
}
