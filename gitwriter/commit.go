package gitwriter

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
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

// ComponentChange is a component whose image, tag or digest differs
// between two image lists; Old is nil for a new component, New for a
// removed one.
type ComponentChange struct {
	Name     string
	Old, New *v1alpha1.VectorComponent
}

// DiffComponents lists, sorted by name, the components that differ between
// from and to: what a reviewer of a promotion cares about.
func DiffComponents(from, to []v1alpha1.VectorComponent) []ComponentChange {
	before := map[string]v1alpha1.VectorComponent{}
	for _, c := range from {
		before[c.Name] = c
	}
	after := map[string]v1alpha1.VectorComponent{}
	for _, c := range to {
		after[c.Name] = c
	}
	names := make([]string, 0, len(before)+len(after))
	for n := range before {
		names = append(names, n)
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var changes []ComponentChange
	for _, n := range names {
		old, had := before[n]
		cur, has := after[n]
		switch {
		case !had:
			changes = append(changes, ComponentChange{Name: n, New: &cur})
		case !has:
			changes = append(changes, ComponentChange{Name: n, Old: &old})
		case old != cur:
			changes = append(changes, ComponentChange{Name: n, Old: &old, New: &cur})
		}
	}
	return changes
}

// componentChanges renders DiffComponents as the lines of a commit body.
func componentChanges(from, to []v1alpha1.VectorComponent) []string {
	var lines []string
	for _, ch := range DiffComponents(from, to) {
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
