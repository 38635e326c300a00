package gitwriter

import (
	"fmt"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// Identity is the author and committer of the commits vectorflow makes, from
// configuration.
type Identity struct {
	Name  string
	Email string
}

// Promotion is what a promotion commit message describes: a vector going to
// a stage, the overlay's images before and after, and the trailers.
type Promotion struct {
	Vector    string
	Landscape string
	Stage     string
	From      []v1alpha1.VectorComponent
	To        []v1alpha1.VectorComponent
	Trailers  Trailers
}

// PromotionMessage is the commit message of a promotion: a subject naming
// the vector and the stage, one line per component that changed, and the
// trailers as the last paragraph so git interpret-trailers finds them.
func PromotionMessage(p Promotion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "promote %s to %s/%s\n", oneLine(p.Vector), oneLine(p.Landscape), oneLine(p.Stage))
	if lines := componentChanges(p.From, p.To); len(lines) > 0 {
		b.WriteString("\n")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n")
	b.WriteString(FormatTrailers(p.Trailers))
	return b.String()
}

// componentChanges renders reconcilers.DiffComponents as the lines of a commit body.
func componentChanges(from, to []v1alpha1.VectorComponent) []string {
	var lines []string
	for _, ch := range reconcilers.DiffComponents(from, to) {
		switch {
		case ch.Old == nil:
			lines = append(lines, fmt.Sprintf("%s (new) %s", ch.Name, componentVersion(*ch.New, *ch.New)))
		case ch.New == nil:
			lines = append(lines, ch.Name+" removed")
		default:
			old, cur := *ch.Old, *ch.New
			line := fmt.Sprintf("%s %s -> %s", ch.Name, componentVersion(old, cur), componentVersion(cur, old))
			if old.Image != cur.Image {
				line += fmt.Sprintf(" (image %s -> %s)", orNone(old.Image), orNone(cur.Image))
			}
			lines = append(lines, line)
		}
	}
	return lines
}

// componentVersion renders c's version for a change line. The digest is
// shown (shortened) only when the tag alone would not show the change, or
// when there is no tag.
func componentVersion(c, other v1alpha1.VectorComponent) string {
	digest := v1alpha1.ShortDigest(c.Digest)
	switch {
	case c.Tag == "" && digest == "":
		return "(none)"
	case c.Tag == "":
		return digest
	case digest != "" && c.Tag == other.Tag && c.Digest != other.Digest:
		return c.Tag + "@" + digest
	default:
		return c.Tag
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
