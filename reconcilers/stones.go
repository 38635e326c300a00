package reconcilers

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Stepping stones (seed 003: add in 0.a, enable in 0.b, require in 0.c): a
// release of a component that every stage must run before it moves past
// it, so that each release finds the state its predecessor prepared, and a
// rollback never lands on a release that cannot read what a newer one
// wrote.

// StoneOutcome is what the stepping stones say about a candidate.
type StoneOutcome string

const (
	// StonesClear: no stone is skipped or crossed downwards; promote it.
	StonesClear StoneOutcome = "Clear"
	// StoneFirst: the candidate skips a stone and StoneVerdict.Via carries
	// it; promote Via first, the candidate waits.
	StoneFirst StoneOutcome = "StoneFirst"
	// StoneMissing: the candidate skips a stone and no vector carries it.
	StoneMissing StoneOutcome = "StoneMissing"
	// StoneDowngrade: the candidate goes down across a stone.
	StoneDowngrade StoneOutcome = "StoneDowngrade"
)

// StoneInput is what the rules judge: the stage's active vector, the
// candidate, each component's stones and the vectors that could serve as a
// step.
type StoneInput struct {
	// Active are the components of the vector active in the target stage;
	// nil when the stage never ran one (nothing is skipped then).
	Active []v1alpha1.VectorComponent
	// Candidate is the vector to promote.
	Candidate *v1alpha1.Vector
	// Stones are each component's stepping stones, as its template names
	// them (exact versions, any order).
	Stones map[string][]string
	// Vectors are the vectors that exist (assembled, or run by the source
	// stage), any order; the candidate may be among them.
	Vectors []*v1alpha1.Vector
	// Forced lets the candidate go down across a stone (promote --force).
	Forced bool
}

// StoneVerdict is the outcome and the stone that decided it.
type StoneVerdict struct {
	Outcome StoneOutcome
	// Component and Stone name the deciding stone (empty when Clear).
	Component, Stone string
	// Via is the vector to promote first (StoneFirst).
	Via *v1alpha1.Vector
	// Message says it for people, naming versions and what to do.
	Message string
}

// JudgeStones applies the stepping-stone rules to one candidate. An error
// means a stone or a version cannot be ordered (not semver); the caller
// blocks the candidate with it rather than guess.
func JudgeStones(in StoneInput) (StoneVerdict, error) {
	stones, err := parseStones(in.Stones)
	if err != nil {
		return StoneVerdict{}, err
	}
	if in.Active == nil || in.Candidate == nil || len(stones) == 0 {
		return StoneVerdict{Outcome: StonesClear}, nil
	}
	active, err := versionsOf(in.Active, stones)
	if err != nil {
		return StoneVerdict{}, fmt.Errorf("the active vector: %w", err)
	}
	candidate, err := versionsOf(in.Candidate.Spec.Components, stones)
	if err != nil {
		return StoneVerdict{}, fmt.Errorf("vector %s: %w", in.Candidate.Ref(), err)
	}
	if v, down := downgrade(active, candidate, stones); down && !in.Forced {
		return v, nil
	}
	skips := skipped(active, candidate, stones)
	if len(skips) == 0 {
		return StoneVerdict{Outcome: StonesClear}, nil
	}
	if via, reached := stepTowards(active, candidate, stones, skips, in.Vectors, in.Candidate); via != nil {
		return StoneVerdict{Outcome: StoneFirst, Component: reached.component, Stone: reached.stone.Original(), Via: via,
			Message: fmt.Sprintf("%s %s skips stepping stone %s (the stage runs %s); vector %s carries it and is promoted first",
				reached.component, candidate[reached.component].Original(), reached.stone.Original(),
				active[reached.component].Original(), via.Ref())}, nil
	}
	first := skips[0]
	return StoneVerdict{Outcome: StoneMissing, Component: first.component, Stone: first.stone.Original(),
		Message: fmt.Sprintf("%s %s skips stepping stone %s (the stage runs %s), and no vector has %s at %s: "+
			"pin %s to %s in the template until a vector is assembled with it, or promote one that has it (vectorflow promote --vector)",
			first.component, candidate[first.component].Original(), first.stone.Original(), active[first.component].Original(),
			first.component, first.stone.Original(), first.component, first.stone.Original())}, nil
}

type componentStone struct {
	component string
	stone     *semver.Version
}

// parseStones sorts each component's stones ascending.
func parseStones(in map[string][]string) (map[string][]*semver.Version, error) {
	out := make(map[string][]*semver.Version, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		for _, s := range in[name] {
			v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
			if err != nil {
				return nil, fmt.Errorf("component %s: stepping stone %q is not an exact semver version: %w", name, s, err)
			}
			out[name] = append(out[name], v)
		}
		slices.SortFunc(out[name], func(a, b *semver.Version) int { return a.Compare(b) })
	}
	return out, nil
}

// versionsOf is the version of every component that has stones; a
// component the vector lacks is left out (a new or removed component skips
// nothing).
func versionsOf(components []v1alpha1.VectorComponent, stones map[string][]*semver.Version) (map[string]*semver.Version, error) {
	out := map[string]*semver.Version{}
	for _, c := range components {
		if len(stones[c.Name]) == 0 {
			continue
		}
		v, err := semver.NewVersion(c.Tag)
		if err != nil {
			return nil, fmt.Errorf("component %s has stepping stones, but its version %q is not semver, so they cannot be judged", c.Name, c.Tag)
		}
		out[c.Name] = v
	}
	return out, nil
}

// downgrade finds a component going down across a stone: the stage runs
// a >= stone and the candidate brings v < stone. The highest such stone of
// the first component (by name) decides.
func downgrade(active, candidate map[string]*semver.Version, stones map[string][]*semver.Version) (StoneVerdict, bool) {
	for _, name := range slices.Sorted(maps.Keys(candidate)) {
		a, v := active[name], candidate[name]
		if a == nil || !v.LessThan(a) {
			continue
		}
		for i := len(stones[name]) - 1; i >= 0; i-- {
			s := stones[name][i]
			if v.LessThan(s) && !a.LessThan(s) {
				return StoneVerdict{Outcome: StoneDowngrade, Component: name, Stone: s.Original(),
					Message: fmt.Sprintf("%s would go down from %s to %s across stepping stone %s, whose predecessors cannot run what it prepared; "+
						"only a promotion created with --force may do that", name, a.Original(), v.Original(), s.Original())}, true
			}
		}
	}
	return StoneVerdict{}, false
}

// skipped are the stones the candidate jumps over, upwards: a < stone < v,
// the lowest stone of each component, by component name.
func skipped(active, candidate map[string]*semver.Version, stones map[string][]*semver.Version) []componentStone {
	var out []componentStone
	for _, name := range slices.Sorted(maps.Keys(candidate)) {
		a, v := active[name], candidate[name]
		if a == nil {
			continue
		}
		for _, s := range stones[name] {
			if a.LessThan(s) && s.LessThan(v) {
				out = append(out, componentStone{name, s})
				break
			}
		}
	}
	return out
}

// stepTowards picks the vector to promote first: one that brings at least
// one skipped component exactly to its stone, skips and crosses no stone
// itself, and goes no further than the candidate. Of several, the one that
// reaches the most stones wins, then the newest.
func stepTowards(active, candidate map[string]*semver.Version, stones map[string][]*semver.Version,
	skips []componentStone, vectors []*v1alpha1.Vector, candidateVector *v1alpha1.Vector) (*v1alpha1.Vector, componentStone) {
	candidateRef := candidateVector.Ref()
	type step struct {
		v       *v1alpha1.Vector
		reached []componentStone
	}
	var steps []step
	for _, x := range vectors {
		if x == nil || x.Ref() == candidateRef {
			continue
		}
		xs, err := versionsOf(x.Spec.Components, stones)
		if err != nil {
			continue
		}
		if _, down := downgrade(active, xs, stones); down || len(skipped(active, xs, stones)) > 0 || beyond(x, candidateVector) {
			continue
		}
		var reached []componentStone
		for _, s := range skips {
			if xv := xs[s.component]; xv != nil && xv.Equal(s.stone) {
				reached = append(reached, s)
			}
		}
		if len(reached) > 0 {
			steps = append(steps, step{x, reached})
		}
	}
	if len(steps) == 0 {
		return nil, componentStone{}
	}
	best := slices.MaxFunc(steps, func(a, b step) int {
		return cmp.Or(cmp.Compare(len(a.reached), len(b.reached)), compareVectorVersions(a.v, b.v))
	})
	return best.v, best.reached[0]
}

// beyond reports whether x brings any component further than the
// candidate does, stones or not: the candidate would then take it back
// down. Versions that are not semver are not compared.
func beyond(x, candidate *v1alpha1.Vector) bool {
	want := map[string]*semver.Version{}
	for _, c := range candidate.Spec.Components {
		if v, err := semver.NewVersion(c.Tag); err == nil {
			want[c.Name] = v
		}
	}
	for _, c := range x.Spec.Components {
		xv, err := semver.NewVersion(c.Tag)
		if v := want[c.Name]; err == nil && v != nil && v.LessThan(xv) {
			return true
		}
	}
	return false
}

// compareVectorVersions orders vectors by assembly time; an unparsable
// version sorts first, and equal times by reference, so the choice is
// stable.
func compareVectorVersions(a, b *v1alpha1.Vector) int {
	ta, errA := ParseVectorVersion(a.Spec.Version)
	tb, errB := ParseVectorVersion(b.Spec.Version)
	switch {
	case errA != nil && errB != nil:
		return strings.Compare(a.Ref(), b.Ref())
	case errA != nil:
		return -1
	case errB != nil:
		return 1
	}
	return cmp.Or(ta.Compare(tb), strings.Compare(a.Ref(), b.Ref()))
}
