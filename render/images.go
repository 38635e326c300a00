package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/memo"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// NoEffectError is an overlay that builds but does not run the vector: each
// problem names a component and what the overlay's containers run instead.
type NoEffectError struct {
	Problems []string
}

func (e *NoEffectError) Error() string { return strings.Join(e.Problems, "; ") }

// CheckComponents decides whether a build's images run every component at
// its version. overlay is the overlay's images entries: a component's
// containers run under the name its entry gives them (the entry's newName,
// else its name; see StageVector.Entry), or under the component's image
// when no entry takes it. At least one container must run that name at
// exactly the component's tag and digest, as kustomize writes them, and no
// container may run it at anything else. It returns a *NoEffectError, or
// nil. parts gives each image name's parts (overlays.PartsOf): a caller
// that checks every stage on every pass remembers them (ImageNames.Parts),
// since parsing is most of a check's time.
func CheckComponents(images []overlays.RenderedImage, overlay overlays.StageVector, components []v1alpha1.VectorComponent,
	parts func(image string) overlays.ImageParts) error {
	rendered := make([]overlays.ImageParts, len(images))
	for i, r := range images {
		rendered[i] = parts(r.Image)
	}
	var problems []string
	for _, c := range components {
		image := c.ImageName()
		runsAs := image
		if entry, ok := overlay.Entry(image); ok {
			runsAs = entry.ImageName()
		}
		want := runsAs
		if c.Tag != "" {
			want += ":" + c.Tag
		}
		if c.Digest != "" {
			want += "@" + c.Digest
		}
		runs := parts(runsAs)
		var at, other []string
		for i, r := range images {
			switch p := rendered[i]; {
			// Docker Hub's short and long names are one repository: a
			// container under the other name runs the component too.
			case !p.SameRepository(runs):
			case p.Tag == c.Tag && p.Digest == c.Digest:
				at = append(at, r.Image)
			default:
				other = append(other, fmt.Sprintf("%s (container %s of %s)", r.Image, r.Container, r.Object))
			}
		}
		label := componentLabel(c, runsAs)
		switch {
		case len(at) == 0 && len(other) > 0:
			problems = append(problems, fmt.Sprintf("%s renders nowhere at %s: the overlay's containers use %s", label, want, summarize(other)))
		case len(at) == 0:
			problems = append(problems, fmt.Sprintf("%s renders nowhere: no container uses %s; the overlay's containers use %s", label, runsAs, summarize(distinctImages(images))))
		case len(other) > 0:
			problems = append(problems, fmt.Sprintf("%s renders at %s, but other containers still use %s", label, want, summarize(other)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &NoEffectError{Problems: problems}
}

// componentLabel names a component, its image when that is not its name,
// and the name its containers run under when an entry moves it.
func componentLabel(c v1alpha1.VectorComponent, runsAs string) string {
	image := c.ImageName()
	var also []string
	if c.Name != image {
		also = append(also, image)
	}
	if runsAs != image {
		also = append(also, "run as "+runsAs)
	}
	if len(also) == 0 {
		return "component " + c.Name
	}
	return fmt.Sprintf("component %s (%s)", c.Name, strings.Join(also, ", "))
}

func distinctImages(images []overlays.RenderedImage) []string {
	var out []string
	for _, r := range images {
		out = append(out, r.Image)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// summarize lists a few items: a message names what renders, not all of a
// large overlay.
func summarize(items []string) string {
	const most = 5
	switch {
	case len(items) == 0:
		return "no images (the overlay has no containers)"
	case len(items) > most:
		return strings.Join(items[:most], ", ") + fmt.Sprintf(" and %d more", len(items)-most)
	}
	return strings.Join(items, ", ")
}

// maxImageNames bounds ImageNames: far more distinct names than 10,000
// stages' containers use, a few megabytes.
const maxImageNames = 1 << 16

// ImageNames remembers the parts of the image names it parsed, for a
// caller that checks every stage on every pass: most names are the same
// from one pass to the next. Safe for concurrent use.
type ImageNames struct {
	parts memo.Bounded[string, overlays.ImageParts]
}

// NewImageNames remembers up to maxImageNames names.
func NewImageNames() *ImageNames {
	return &ImageNames{parts: memo.Bounded[string, overlays.ImageParts]{Max: maxImageNames}}
}

// Parts are image's parts (overlays.PartsOf), remembered. A nil
// ImageNames parses the name every time.
func (n *ImageNames) Parts(image string) overlays.ImageParts {
	if n == nil {
		return overlays.PartsOf(image)
	}
	if p, ok := n.parts.Get(image); ok {
		return p
	}
	p := overlays.PartsOf(image)
	n.parts.Put(image, p)
	return p
}
