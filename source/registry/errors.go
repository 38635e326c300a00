package registry

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// ErrNotFound matches (errors.Is) a RegistryError whose tag, digest or
// repository does not exist: the spec is wrong, the registry is fine.
var ErrNotFound = errors.New("not found")

// RegistryError is a failed registry operation. Unless it is ErrNotFound
// the registry is unreachable, refuses the credentials or fails, and the
// caller keeps the version it resolved last.
type RegistryError struct {
	// Image is the repository (or oci:// vector target) the operation was on.
	Image string
	// Op is what was attempted: "list tags", "resolve tag 1.4.2", "push vector 20260101".
	Op string
	// Err is the cause.
	Err error
}

func (e *RegistryError) Error() string {
	hint := "check the registry is reachable and the credentials in the docker config"
	if errors.Is(e.Err, ErrNotFound) {
		hint = "check the image name and version"
	}
	return fmt.Sprintf("registry: %s of %s: %v; %s", e.Op, e.Image, e.Err, hint)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// NoMatchError says no tag of an image satisfies the spec.
type NoMatchError struct {
	// Image is the repository.
	Image string
	// Spec is the version, policy and filter as given.
	Spec string
	// Tags is how many tags the repository lists; Candidates how many
	// passed the tag filter.
	Tags, Candidates int
	// Skipped are the candidate tags that are not semver versions.
	Skipped []string
}

func (e *NoMatchError) Error() string {
	msg := fmt.Sprintf("no tag of %s matches %s (%d tags", e.Image, e.Spec, e.Tags)
	if e.Candidates != e.Tags {
		msg += fmt.Sprintf(", %d pass the tag filter", e.Candidates)
	}
	if len(e.Skipped) > 0 {
		msg += fmt.Sprintf(", %d not semver: %s", len(e.Skipped), strings.Join(first(e.Skipped, 5), ", "))
		if len(e.Skipped) > 5 {
			msg += ", ..."
		}
	}
	return msg + "); widen the range or push a matching tag"
}

// notFound marks err with ErrNotFound when the registry answered 404.
func notFound(err error) error {
	var te *transport.Error
	if err != nil && errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
