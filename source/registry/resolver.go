// Package registry resolves component versions against OCI registries and
// pushes and pulls vector artifacts.
//
// The choice of a tag (SelectTag) is a pure function of the tag list; the
// Resolver is the thin shell that lists tags, caches the lists per
// repository, and turns the chosen tag into a digest.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// DefaultTagListTTL is how long a repository's tag list is reused when
// Options.TagListTTL is zero.
const DefaultTagListTTL = time.Minute

// Options configure a Resolver. The zero value talks HTTPS with the
// credentials of the docker config (~/.docker/config.json, credential
// helpers), as docker and crane do.
type Options struct {
	// Keychain supplies registry credentials; nil means authn.DefaultKeychain.
	Keychain authn.Keychain
	// TagListTTL is how long a tag list (and a tag's digest) is reused;
	// zero means DefaultTagListTTL, negative means never reuse.
	TagListTTL time.Duration
	// Clock tells the time for the TTL; nil means time.Now.
	Clock func() time.Time
	// Insecure talks plain HTTP to every registry. Loopback and private
	// addresses use HTTP anyway, as go-containerregistry decides.
	Insecure bool
	// Transport carries the requests; nil means remote.DefaultTransport.
	Transport http.RoundTripper
}

// Resolver resolves component versions to digests and pushes and pulls
// vector artifacts. It is safe for concurrent use.
type Resolver struct {
	keychain  authn.Keychain
	transport http.RoundTripper
	clock     func() time.Time
	insecure  bool
	tags      *flightCache[[]string]
	digests   *flightCache[string]
}

// NewResolver returns a Resolver with opts' defaults filled in.
func NewResolver(opts Options) *Resolver {
	r := &Resolver{keychain: opts.Keychain, transport: opts.Transport, clock: opts.Clock, insecure: opts.Insecure}
	if r.keychain == nil {
		r.keychain = authn.DefaultKeychain
	}
	if r.transport == nil {
		r.transport = remote.DefaultTransport
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	ttl := opts.TagListTTL
	if ttl == 0 {
		ttl = DefaultTagListTTL
	}
	r.tags = newFlightCache[[]string](ttl)
	r.digests = newFlightCache[string](ttl)
	return r
}

// ComponentVersion says which version of a component's image to take.
type ComponentVersion struct {
	// Version is an exact tag ("1.4.2", "1.20", "latest"), a digest
	// ("sha256:..."), or a semver range (">=1.2.0 <2.0.0", "1.4.x",
	// "^1.2"). Alphabetical and numerical policies do not use it.
	Version string
	// Policy is "" (read Version: digest, range or exact tag), "semver"
	// (Version is a range, even when it looks like a tag), "alphabetical"
	// or "numerical" (Flux ImagePolicy policies over the tag list).
	Policy string
	// TagFilter is a regular expression; only tags it matches are
	// considered (Flux's filterTags.pattern).
	TagFilter string
	// Extract is a template over TagFilter's groups ("$ts", "${1}"); its
	// expansion is the value that is compared instead of the whole tag
	// (Flux's filterTags.extract).
	Extract string
	// Order is "asc" (default: the last in ascending order, i.e. the
	// newest) or "desc" (the first) for alphabetical and numerical, the
	// same words and meaning as Flux's ImagePolicy.
	Order string
}

// Resolved is a component version pinned to a digest.
type Resolved struct {
	// Image is the repository as given.
	Image string
	// Tag is the chosen tag; empty when the version was a digest.
	Tag string
	// Digest is the manifest digest, sha256:...
	Digest string
	// SkippedTags counts the tags a semver range ignored because they are
	// not versions ("latest", "main"). Also logged at V(1).
	SkippedTags int
}

// Resolve picks the version of image that spec asks for and pins it to its
// manifest digest: an exact tag is looked up, a digest is checked to exist,
// and a range or policy picks among the repository's tags (see SelectTag).
//
// Registry failures are *RegistryError; a missing tag or digest also
// matches ErrNotFound, and no matching tag is *NoMatchError. Callers keep
// the last resolved version on a *RegistryError that is not ErrNotFound.
func (r *Resolver) Resolve(ctx context.Context, image string, spec ComponentVersion) (Resolved, error) {
	repo, err := r.repository(image)
	if err != nil {
		return Resolved{}, err
	}
	if err := spec.Validate(); err != nil {
		return Resolved{}, fmt.Errorf("image %s: %w", image, err)
	}
	kind, _ := spec.kind()
	switch kind {
	case kindDigest:
		ref, err := name.NewDigest(repo.Name()+"@"+spec.Version, r.nameOptions()...)
		if err != nil {
			return Resolved{}, fmt.Errorf("image %s: version %q is not a valid digest (sha256: and 64 hex digits): %w", image, spec.Version, err)
		}
		digest, err := r.digest(ctx, ref)
		if err != nil {
			return Resolved{}, &RegistryError{Image: image, Op: "verify digest " + spec.Version, Err: err}
		}
		return Resolved{Image: image, Digest: digest}, nil
	case kindTag:
		return r.pin(ctx, image, repo, spec.Version, 0)
	}
	tags, err := r.listTags(ctx, repo)
	if err != nil {
		return Resolved{}, &RegistryError{Image: image, Op: "list tags", Err: err}
	}
	sel, err := SelectTag(tags, spec)
	if len(sel.Skipped) > 0 {
		logr.FromContextOrDiscard(ctx).V(1).Info("skipped tags that are not semver versions",
			"image", image, "version", spec.Version, "skipped", len(sel.Skipped), "examples", first(sel.Skipped, 5))
	}
	if nm := (*NoMatchError)(nil); errors.As(err, &nm) {
		nm.Image = image
		return Resolved{}, nm
	}
	if err != nil {
		return Resolved{}, fmt.Errorf("image %s: %w", image, err)
	}
	return r.pin(ctx, image, repo, sel.Tag, len(sel.Skipped))
}

func (r *Resolver) pin(ctx context.Context, image string, repo name.Repository, tag string, skipped int) (Resolved, error) {
	ref, err := name.NewTag(repo.Name()+":"+tag, r.nameOptions()...)
	if err != nil {
		return Resolved{}, fmt.Errorf("image %s: %q is not a valid tag: %w", image, tag, err)
	}
	digest, err := r.digest(ctx, ref)
	if err != nil {
		return Resolved{}, &RegistryError{Image: image, Op: "resolve tag " + tag, Err: err}
	}
	return Resolved{Image: image, Tag: tag, Digest: digest, SkippedTags: skipped}, nil
}

// listTags is the repository's tag list, shared by concurrent callers and
// reused for the TTL.
func (r *Resolver) listTags(ctx context.Context, repo name.Repository) ([]string, error) {
	return r.tags.get(ctx, repo.Name(), r.clock, func(ctx context.Context) ([]string, error) {
		tags, err := remote.List(repo, r.remoteOptions(ctx)...)
		return tags, notFound(err)
	})
}

// digest is the manifest digest ref points at, by HEAD; a registry that
// answers HEAD with an error other than not-found gets a GET, as crane does.
func (r *Resolver) digest(ctx context.Context, ref name.Reference) (string, error) {
	return r.digests.get(ctx, ref.Name(), r.clock, func(ctx context.Context) (string, error) {
		opts := r.remoteOptions(ctx)
		desc, err := remote.Head(ref, opts...)
		if err == nil {
			return desc.Digest.String(), nil
		}
		// Only a registry that answered gets a second try; one that is down
		// or says not-found would say the same again.
		if te := (*transport.Error)(nil); !errors.As(err, &te) || te.StatusCode == http.StatusNotFound {
			return "", notFound(err)
		}
		got, err := remote.Get(ref, opts...)
		if err != nil {
			return "", notFound(err)
		}
		return got.Digest.String(), nil
	})
}

func (r *Resolver) repository(image string) (name.Repository, error) {
	repo, err := name.NewRepository(image, r.nameOptions()...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("image %q is not a repository reference (host/path, without tag or digest): %w", image, err)
	}
	return repo, nil
}

func (r *Resolver) nameOptions() []name.Option {
	if r.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

func (r *Resolver) remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(r.keychain),
		remote.WithTransport(r.transport),
	}
}

// versionKind is what a ComponentVersion asks the registry for.
type versionKind int

const (
	kindTag versionKind = iota
	kindDigest
	kindRange
	kindAlphabetical
	kindNumerical
)

// Validate refuses a spec that no registry content could satisfy: an
// unknown policy or order, an empty version, a range or tag filter that does
// not parse, an extract without a filter. Resolve checks it before any
// request; it is exported so configuration can be checked without one.
func (v ComponentVersion) Validate() error {
	kind, err := v.kind()
	if err != nil {
		return err
	}
	if kind == kindRange {
		if _, err := semver.NewConstraint(v.Version); err != nil {
			return fmt.Errorf("version %q is not a semver range (e.g. >=1.2.0 <2.0.0, 1.4.x, ^1.2): %w", v.Version, err)
		}
	}
	if v.TagFilter == "" && v.Extract != "" {
		return fmt.Errorf("tag filter extract %q needs a tag filter pattern to take its groups from", v.Extract)
	}
	if _, err := regexp.Compile(v.TagFilter); err != nil {
		return fmt.Errorf("tag filter %q is not a valid regular expression: %w", v.TagFilter, err)
	}
	return nil
}

// kind reads the policy and the version, and refuses what cannot be
// resolved.
func (v ComponentVersion) kind() (versionKind, error) {
	switch strings.ToLower(v.Order) {
	case "", OrderAsc, OrderDesc:
	default:
		return 0, fmt.Errorf("order %q is not one of %s, %s", v.Order, OrderAsc, OrderDesc)
	}
	switch v.Policy {
	case PolicyAuto:
		switch {
		case v.Version == "":
			return 0, errors.New("version is empty: give an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x, ^1.2) or a digest (sha256:...)")
		case strings.HasPrefix(v.Version, "sha256:"):
			return kindDigest, nil
		case v1alpha1.IsVersionRange(v.Version):
			return kindRange, nil
		}
		return kindTag, nil
	case PolicySemver:
		if v.Version == "" {
			return 0, errors.New("policy semver needs a version range, e.g. >=1.2.0 <2.0.0 or 1.4.x")
		}
		return kindRange, nil
	case PolicyAlphabetical:
		return kindAlphabetical, nil
	case PolicyNumerical:
		return kindNumerical, nil
	}
	return 0, fmt.Errorf("policy %q is not one of semver, alphabetical, numerical (or empty)", v.Policy)
}

// describe is the spec as a user wrote it, for errors.
func (v ComponentVersion) describe() string {
	var parts []string
	switch v.Policy {
	case PolicyAuto, PolicySemver:
		parts = append(parts, fmt.Sprintf("version %q", v.Version))
	default:
		order := v.Order
		if order == "" {
			order = OrderAsc
		}
		parts = append(parts, fmt.Sprintf("policy %s (order %s)", v.Policy, order))
	}
	if v.TagFilter != "" {
		parts = append(parts, fmt.Sprintf("tag filter %q", v.TagFilter))
	}
	if v.Extract != "" {
		parts = append(parts, fmt.Sprintf("extract %q", v.Extract))
	}
	return strings.Join(parts, ", ")
}

func first(s []string, n int) []string {
	return s[:min(n, len(s))]
}
