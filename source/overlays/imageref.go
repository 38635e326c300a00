package overlays

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// ImageReference is a container image reference as go-containerregistry's
// name package parses it.
type ImageReference struct {
	// Name is the repository as written, what kustomize's images entries
	// match ("nginx", "ghcr.io/acme/app").
	Name string
	// Repository is Name with Docker Hub's defaults spelled out, so that
	// nginx, docker.io/library/nginx and index.docker.io/library/nginx are
	// one repository.
	Repository string
	// Tag and Digest as written; empty when absent (no "latest" is implied).
	Tag, Digest string
}

// ParseImage parses a container image reference: [registry/]path[:tag][@digest].
func ParseImage(image string) (ImageReference, error) {
	opts := []name.Option{name.WithDefaultTag(""), name.WeakValidation}
	if strings.Contains(image, "://") {
		// Weak validation would take "https:" for a registry with a port.
		return ImageReference{}, fmt.Errorf("image %q is a URL, not an image reference: write registry/path[:tag] without a scheme", image)
	}
	var ref ImageReference
	rest := image
	if d, err := name.NewDigest(image, opts...); err == nil {
		ref.Digest = d.DigestStr()
		rest = strings.TrimSuffix(image, "@"+ref.Digest)
	}
	t, err := name.NewTag(rest, opts...)
	if err != nil {
		return ImageReference{}, fmt.Errorf("image %q is not an image reference ([registry/]path[:tag][@sha256:digest]): %w", image, err)
	}
	ref.Tag = t.TagStr()
	ref.Repository = t.Context().Name()
	ref.Name = rest
	if ref.Tag != "" {
		ref.Name = strings.TrimSuffix(rest, ":"+ref.Tag)
	}
	return ref, nil
}

// RepositoryOf is the repository image names with Docker Hub's defaults
// spelled out, without tag or digest, and ok false when the name package
// refuses image (a kustomize placeholder such as app:${TAG}, upper case).
func RepositoryOf(image string) (repository string, ok bool) {
	ref, err := ParseImage(image)
	return ref.Repository, err == nil
}

// SameRepository reports whether a and b name the same repository, tags and
// digests aside: nginx:1.27 and docker.io/library/nginx are the same. When
// either is no image reference, both are compared as kustomize splits them,
// as written.
func SameRepository(a, b string) bool {
	return PartsOf(a).SameRepository(PartsOf(b))
}

// ImageParts is an image name parsed once for what SplitImage and
// SameRepository answer: a check that compares every container of a
// render with every component parses each name once, not once per pair.
type ImageParts struct {
	// Name, Tag and Digest are SplitImage's.
	Name, Tag, Digest string
	// repository is RepositoryOf's, when parsed says the name package
	// took the image; split is the name as kustomize splits it.
	repository, split string
	parsed            bool
}

// PartsOf parses image once.
func PartsOf(image string) ImageParts {
	split, tag, digest := kustomizeSplit(image)
	ref, err := ParseImage(image)
	if err != nil {
		return ImageParts{Name: split, Tag: tag, Digest: digest, split: split}
	}
	return ImageParts{Name: ref.Name, Tag: ref.Tag, Digest: ref.Digest, repository: ref.Repository, split: split, parsed: true}
}

// SameRepository is SameRepository for the images a and b are the parts
// of.
func (a ImageParts) SameRepository(b ImageParts) bool {
	if a.parsed && b.parsed {
		return a.repository == b.repository
	}
	return a.split == b.split
}
