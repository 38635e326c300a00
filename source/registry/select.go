package registry

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Version policies of a ComponentVersion.
const (
	// PolicyAuto reads the version itself: a digest, a semver range, or else
	// an exact tag.
	PolicyAuto = ""
	// PolicySemver treats the version as a semver constraint, always.
	PolicySemver = "semver"
	// PolicyAlphabetical picks by lexical order of the (extracted) tags.
	PolicyAlphabetical = "alphabetical"
	// PolicyNumerical picks by numeric value of the (extracted) tags.
	PolicyNumerical = "numerical"
)

// Orders of the alphabetical and numerical policies, as Flux's ImagePolicy
// spells them: asc picks the last tag in ascending order (the newest), desc
// the first.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// Selection is the tag SelectTag picked from a tag list.
type Selection struct {
	// Tag is the picked tag, as the registry lists it.
	Tag string
	// Candidates is how many tags passed the TagFilter.
	Candidates int
	// Skipped are the candidates a semver range could not parse as a
	// version, in list order. They are not an error: registries hold
	// "latest", "main", "sha-1a2b" next to release tags.
	Skipped []string
}

// SelectTag picks the tag of tags that spec asks for, with Flux ImagePolicy
// semantics: TagFilter keeps only the tags it matches, Extract (a regexp
// template such as "$ts" or "$1") turns a kept tag into the value that is
// ordered, and the policy orders the values. The result is always the
// original tag. spec must ask for a choice among tags (a range, alphabetical
// or numerical); exact tags and digests need no tag list.
//
// Ties (two tags with the same version or extracted value, like "1.2.0" and
// "v1.2.0") go to the greater tag string, so the pick never depends on the
// registry's list order.
func SelectTag(tags []string, spec ComponentVersion) (Selection, error) {
	if err := spec.Validate(); err != nil {
		return Selection{}, err
	}
	kind, _ := spec.kind()
	candidates := filterTags(tags, spec)
	sel := Selection{Candidates: len(candidates)}
	var (
		best *candidate
		err  error
	)
	switch kind {
	case kindRange:
		best, sel.Skipped, err = newestInRange(candidates, spec.Version)
	case kindAlphabetical:
		best = pickOrdered(candidates, spec.Order, func(a, b candidate) int { return strings.Compare(a.value, b.value) })
	case kindNumerical:
		best, err = pickNumerical(candidates, spec.Order)
	default:
		return Selection{}, fmt.Errorf("version %q is an exact tag or a digest: there is no tag to select", spec.Version)
	}
	if err != nil {
		return sel, err
	}
	if best == nil {
		return sel, &NoMatchError{Spec: spec.describe(), Tags: len(tags), Candidates: len(candidates), Skipped: sel.Skipped}
	}
	sel.Tag = best.tag
	return sel, nil
}

// candidate is a listed tag and the value its policy orders by.
type candidate struct {
	tag, value string
}

// filterTags keeps the tags TagFilter matches, with their extracted
// values; spec is valid.
func filterTags(tags []string, spec ComponentVersion) []candidate {
	re := regexp.MustCompile(spec.TagFilter) // Validate compiled it
	out := make([]candidate, 0, len(tags))
	for _, t := range tags {
		m := re.FindStringSubmatchIndex(t)
		if m == nil {
			continue
		}
		value := t
		if spec.Extract != "" {
			value = string(re.ExpandString(nil, spec.Extract, t, m))
		}
		out = append(out, candidate{tag: t, value: value})
	}
	return out
}

// newestInRange is the highest version within the constraint. Prereleases
// match only constraints that name a prerelease themselves, as Masterminds
// semver decides (">=1.5.0-0" admits 1.5.0-rc.1, ">=1.5.0" does not).
func newestInRange(candidates []candidate, constraint string) (*candidate, []string, error) {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, nil, err // Validate parsed it
	}
	var (
		best    *candidate
		bestV   *semver.Version
		skipped []string
	)
	for i := range candidates {
		v, err := semver.NewVersion(candidates[i].value)
		if err != nil {
			skipped = append(skipped, candidates[i].tag)
			continue
		}
		if !c.Check(v) {
			continue
		}
		if best == nil || v.Compare(bestV) > 0 || (v.Equal(bestV) && candidates[i].tag > best.tag) {
			best, bestV = &candidates[i], v
		}
	}
	return best, skipped, nil
}

func pickNumerical(candidates []candidate, order string) (*candidate, error) {
	values := make(map[string]float64, len(candidates))
	for _, c := range candidates {
		f, err := strconv.ParseFloat(c.value, 64)
		if err != nil {
			// Flux refuses rather than skips: a numerical policy over a
			// list with words in it is a filter that is too wide.
			return nil, fmt.Errorf("numerical policy: tag %q has the value %q, which is not a number; narrow the tag filter to numeric tags", c.tag, c.value)
		}
		values[c.value] = f
	}
	return pickOrdered(candidates, order, func(a, b candidate) int { return cmp.Compare(values[a.value], values[b.value]) }), nil
}

// pickOrdered is the last candidate in ascending order for asc (and the
// empty order), the first for desc, ties broken by the tag string in the same
// direction.
func pickOrdered(candidates []candidate, order string, compare func(a, b candidate) int) *candidate {
	if len(candidates) == 0 {
		return nil
	}
	ordered := slices.Clone(candidates)
	slices.SortStableFunc(ordered, func(a, b candidate) int {
		return cmp.Or(compare(a, b), strings.Compare(a.tag, b.tag))
	})
	if strings.EqualFold(order, OrderDesc) {
		return &ordered[0]
	}
	return &ordered[len(ordered)-1]
}
