package reconcilers

import (
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// vec builds a vector of template acme assembled at version, with
// components as name=tag pairs.
func vec(version string, components ...string) *v1alpha1.Vector {
	v := &v1alpha1.Vector{Spec: v1alpha1.VectorSpec{Template: "acme", Version: version}}
	for _, c := range components {
		name, tag, _ := strings.Cut(c, "=")
		v.Spec.Components = append(v.Spec.Components, v1alpha1.VectorComponent{Name: name, Tag: tag})
	}
	return v
}

func TestJudgeStones(t *testing.T) {
	active := func(components ...string) []v1alpha1.VectorComponent {
		return vec("2026.1.1-000000000Z", components...).Spec.Components
	}
	stoneA := vec("2026.2.1-000000000Z", "a=1.5.0")
	stoneANewer := vec("2026.2.2-000000000Z", "a=1.5.0")
	stoneB := vec("2026.2.3-000000000Z", "a=2.0.0")
	both := vec("2026.2.4-000000000Z", "a=1.5.0", "b=2.0.0")
	onlyA := vec("2026.2.5-000000000Z", "a=1.5.0", "b=1.0.0")
	beyondB := vec("2026.2.6-000000000Z", "a=1.5.0", "b=3.0.0")
	candidate := vec("2026.3.1-000000000Z", "a=1.6.0")

	cases := []struct {
		name    string
		in      StoneInput
		outcome StoneOutcome
		stone   string // component@stone
		via     *v1alpha1.Vector
	}{
		{name: "a stage that never ran a vector skips nothing",
			in: StoneInput{Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}}, outcome: StonesClear},
		{name: "no stones",
			in: StoneInput{Active: active("a=1.0.0"), Candidate: candidate}, outcome: StonesClear},
		{name: "a skipped stone carried by an existing vector is promoted first",
			in:      StoneInput{Active: active("a=1.4.0"), Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}, Vectors: []*v1alpha1.Vector{candidate, stoneA}},
			outcome: StoneFirst, stone: "a@1.5.0", via: stoneA},
		{name: "of two vectors carrying the stone, the newest",
			in:      StoneInput{Active: active("a=1.4.0"), Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}, Vectors: []*v1alpha1.Vector{stoneANewer, stoneA}},
			outcome: StoneFirst, stone: "a@1.5.0", via: stoneANewer},
		{name: "a skipped stone no vector carries blocks",
			in:      StoneInput{Active: active("a=1.4.0"), Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}, Vectors: []*v1alpha1.Vector{candidate}},
			outcome: StoneMissing, stone: "a@1.5.0"},
		{name: "the candidate is the stone",
			in: StoneInput{Active: active("a=1.4.0"), Candidate: stoneA, Stones: map[string][]string{"a": {"1.5.0"}}}, outcome: StonesClear},
		{name: "the stage runs the stone",
			in: StoneInput{Active: active("a=1.5.0"), Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}}, outcome: StonesClear},
		{name: "several stones in one jump: the lowest first, not a vector that skips it",
			in: StoneInput{Active: active("a=1.0.0"), Candidate: vec("2026.3.1-000000000Z", "a=2.1.0"),
				Stones: map[string][]string{"a": {"2.0.0", "1.5.0"}}, Vectors: []*v1alpha1.Vector{stoneB, stoneA}},
			outcome: StoneFirst, stone: "a@1.5.0", via: stoneA},
		{name: "several stones in one jump, only the higher one carried",
			in: StoneInput{Active: active("a=1.0.0"), Candidate: vec("2026.3.1-000000000Z", "a=2.1.0"),
				Stones: map[string][]string{"a": {"2.0.0", "1.5.0"}}, Vectors: []*v1alpha1.Vector{stoneB}},
			outcome: StoneMissing, stone: "a@1.5.0"},
		{name: "several components: the vector reaching both stones wins",
			in: StoneInput{Active: active("a=1.0.0", "b=1.0.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.6.0", "b=2.1.0"),
				Stones: map[string][]string{"a": {"1.5.0"}, "b": {"2.0.0"}}, Vectors: []*v1alpha1.Vector{onlyA, both}},
			outcome: StoneFirst, stone: "a@1.5.0", via: both},
		{name: "several components: a step reaching one stone still counts",
			in: StoneInput{Active: active("a=1.0.0", "b=1.0.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.6.0", "b=2.1.0"),
				Stones: map[string][]string{"a": {"1.5.0"}, "b": {"2.0.0"}}, Vectors: []*v1alpha1.Vector{onlyA}},
			outcome: StoneFirst, stone: "a@1.5.0", via: onlyA},
		{name: "a step going further than the candidate is no step",
			in: StoneInput{Active: active("a=1.0.0", "b=1.0.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.6.0", "b=2.1.0"),
				Stones: map[string][]string{"a": {"1.5.0"}}, Vectors: []*v1alpha1.Vector{beyondB}},
			outcome: StoneMissing, stone: "a@1.5.0"},
		{name: "stones added to a template after its vectors exist count",
			in:      StoneInput{Active: active("a=1.0.0"), Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}, Vectors: []*v1alpha1.Vector{stoneA}},
			outcome: StoneFirst, stone: "a@1.5.0", via: stoneA},
		{name: "down across a stone is refused",
			in:      StoneInput{Active: active("a=2.1.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.4.0"), Stones: map[string][]string{"a": {"2.0.0"}}},
			outcome: StoneDowngrade, stone: "a@2.0.0"},
		{name: "down from the stone itself is refused",
			in:      StoneInput{Active: active("a=2.0.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.4.0"), Stones: map[string][]string{"a": {"2.0.0"}}},
			outcome: StoneDowngrade, stone: "a@2.0.0"},
		{name: "down across two stones names the highest",
			in:      StoneInput{Active: active("a=2.1.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.0.0"), Stones: map[string][]string{"a": {"1.5.0", "2.0.0"}}},
			outcome: StoneDowngrade, stone: "a@2.0.0"},
		{name: "forced down across a stone",
			in:      StoneInput{Active: active("a=2.1.0"), Candidate: vec("2026.3.1-000000000Z", "a=1.4.0"), Stones: map[string][]string{"a": {"2.0.0"}}, Forced: true},
			outcome: StonesClear},
		{name: "down above the stone is no crossing",
			in:      StoneInput{Active: active("a=2.1.0"), Candidate: vec("2026.3.1-000000000Z", "a=2.0.1"), Stones: map[string][]string{"a": {"2.0.0"}}},
			outcome: StonesClear},
		{name: "a component new to the stage skips nothing",
			in:      StoneInput{Active: active("b=1.0.0"), Candidate: candidate, Stones: map[string][]string{"a": {"1.5.0"}}},
			outcome: StonesClear},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JudgeStones(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			stone := ""
			if got.Component != "" {
				stone = got.Component + "@" + got.Stone
			}
			if got.Outcome != tc.outcome || stone != tc.stone || got.Via != tc.via {
				t.Errorf("got %s %s via %v (%s), want %s %s via %v", got.Outcome, stone, ref(got.Via), got.Message, tc.outcome, tc.stone, ref(tc.via))
			}
			if got.Outcome != StonesClear && !strings.Contains(got.Message, got.Stone) {
				t.Errorf("message %q does not name the stone %s", got.Message, got.Stone)
			}
		})
	}
}

func ref(v *v1alpha1.Vector) string {
	if v == nil {
		return "-"
	}
	return v.Ref()
}

func TestJudgeStonesRefusesWhatItCannotOrder(t *testing.T) {
	cases := map[string]StoneInput{
		"a stone that is a range": {Active: vec("x").Spec.Components, Candidate: vec("y", "a=1.0.0"), Stones: map[string][]string{"a": {"1.x"}}},
		"a tag that is not semver": {Active: vec("x", "a=1.0.0").Spec.Components, Candidate: vec("y", "a=latest"),
			Stones: map[string][]string{"a": {"1.5.0"}}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if got, err := JudgeStones(in); err == nil {
				t.Errorf("got %+v, want an error", got)
			}
		})
	}
	want := "component a: stepping stone \"1.x\""
	if _, err := JudgeStones(cases["a stone that is a range"]); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want it to start with %s", err, want)
	}
}
