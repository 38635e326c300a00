package reconcilers

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

const digestD = "sha256:4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d"

func template(name, base string, comps ...v1alpha1.ComponentSpec) v1alpha1.VectorTemplate {
	t := v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "project", Generation: 2}}
	if base != "" {
		t.Spec.Base = &v1alpha1.TemplateReference{Name: base}
	}
	t.Spec.Components = comps
	return t
}

func comp(name, version string) v1alpha1.ComponentSpec {
	return v1alpha1.ComponentSpec{Name: name, Version: version}
}

func templates(ts ...v1alpha1.VectorTemplate) map[string]v1alpha1.VectorTemplate {
	m := map[string]v1alpha1.VectorTemplate{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

// base-vector <- mid <- dev: each overrides its base by component name.
var chain = templates(
	template("base-vector", "", comp("a", "1.0.0"), comp("b", "1.0.0")),
	template("mid", "base-vector", comp("b", "2.0.0"), comp("c", "1.0.0")),
	template("dev", "mid", comp("c", "2.0.0"), comp("d", digestD),
		v1alpha1.ComponentSpec{Name: "e", Image: "ghcr.io/acme/e", Version: ">=1.2.0 <2.0.0"}),
)

func TestResolveComponents(t *testing.T) {
	tests := []struct {
		name    string
		tmpl    string
		ts      map[string]v1alpha1.VectorTemplate
		want    []v1alpha1.ComponentSpec
		wantErr string
	}{
		{"no base", "base-vector", chain, []v1alpha1.ComponentSpec{comp("a", "1.0.0"), comp("b", "1.0.0")}, ""},
		{"base chain with overrides", "dev", chain, []v1alpha1.ComponentSpec{
			comp("a", "1.0.0"), comp("b", "2.0.0"), comp("c", "2.0.0"), comp("d", digestD),
			{Name: "e", Image: "ghcr.io/acme/e", Version: ">=1.2.0 <2.0.0"},
		}, ""},
		{"cycle", "x", templates(template("x", "y"), template("y", "z"), template("z", "x")), nil,
			`VectorTemplate x: spec.base forms a cycle x -> y -> z -> x; break the chain`},
		{"self cycle", "x", templates(template("x", "x")), nil,
			`VectorTemplate x: spec.base forms a cycle x -> x; break the chain`},
		{"missing base", "x", templates(template("x", "nope")), nil,
			`VectorTemplate x: spec.base names VectorTemplate nope, which does not exist`},
		{"missing template", "nope", chain, nil, `VectorTemplate nope does not exist`},
		{"duplicate component", "x", templates(template("x", "", comp("a", "1"), comp("a", "2"))), nil,
			`VectorTemplate x: spec.components lists "a" twice; keep one`},
		{"empty component name", "x", templates(template("x", "", comp("", "1"))), nil,
			`VectorTemplate x: spec.components[0].name is empty`},
		{"empty version", "x", templates(template("x", "", comp("a", ""))), nil,
			`VectorTemplate x: spec.components[0] "a" has no version`},
		{"a tag policy needs no version", "x", templates(template("x", "",
			v1alpha1.ComponentSpec{Name: "a", Policy: v1alpha1.PolicyNumerical},
			v1alpha1.ComponentSpec{Name: "b", Policy: v1alpha1.PolicyAlphabetical, FilterTags: &v1alpha1.TagFilter{Pattern: "^main-"}})),
			[]v1alpha1.ComponentSpec{{Name: "a", Policy: v1alpha1.PolicyNumerical},
				{Name: "b", Policy: v1alpha1.PolicyAlphabetical, FilterTags: &v1alpha1.TagFilter{Pattern: "^main-"}}}, ""},
		{"semver policy needs a version", "x", templates(template("x", "", v1alpha1.ComponentSpec{Name: "a", Policy: v1alpha1.PolicySemver})), nil,
			`VectorTemplate x: spec.components[0] "a" has no version`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveComponents(tt.tmpl, tt.ts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error: want %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("components (-want +got):\n%s", diff)
			}
		})
	}
	// A base of another kind is refused, not followed.
	ts := templates(template("x", "dev-stage"))
	b := ts["x"]
	b.Spec.Base.Kind = v1alpha1.StageKind
	ts["x"] = b
	if _, err := ResolveComponents("x", ts); err == nil || !strings.Contains(err.Error(), "only a VectorTemplate can be a base") {
		t.Errorf("Stage base: got %v", err)
	}
}

func TestAssembleVector(t *testing.T) {
	now := time.Date(2026, time.July, 27, 14, 30, 52, 0, time.UTC)
	resolved := map[string]string{"e": "1.4.2@" + digestD}
	plan, err := AssembleVector(AssembleInput{Template: "dev", Templates: chain, Resolved: resolved}, now)
	if err != nil {
		t.Fatal(err)
	}
	wantComponents := []v1alpha1.VectorComponent{
		{Name: "a", Tag: "1.0.0"}, {Name: "b", Tag: "2.0.0"}, {Name: "c", Tag: "2.0.0"},
		{Name: "d", Digest: digestD}, {Name: "e", Image: "ghcr.io/acme/e", Tag: "1.4.2", Digest: digestD},
	}
	want := &v1alpha1.Vector{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorKind},
		ObjectMeta: metav1.ObjectMeta{Name: "dev-2026.7.27-143052000z", Namespace: "project"},
		Spec: v1alpha1.VectorSpec{Template: "dev", Version: "2026.7.27-143052000Z",
			Components: wantComponents, Digest: ComponentsDigest(wantComponents)},
	}
	if diff := cmp.Diff(want, plan.Vector); diff != "" {
		t.Errorf("vector (-want +got):\n%s", diff)
	}
	wantStatus := v1alpha1.VectorTemplateStatus{LatestVector: "dev:2026.7.27-143052000Z", LatestVectorSince: ptr(metav1.NewTime(now)), ObservedGeneration: 2}
	if diff := cmp.Diff(wantStatus, plan.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// The same components never make a second vector.
	tmpl := chain["dev"]
	tmpl.Status = plan.Status
	ts := templates(chain["base-vector"], chain["mid"], tmpl)
	again, err := AssembleVector(AssembleInput{Template: "dev", Templates: ts, Resolved: resolved, Latest: plan.Vector}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if again.Vector != nil {
		t.Errorf("same components made a second vector %s", again.Vector.Spec.Version)
	}
	if diff := cmp.Diff(plan.Status, again.Status); diff != "" {
		t.Errorf("status after no change (-want +got):\n%s", diff)
	}

	// A changed resolution makes a new one.
	next, err := AssembleVector(AssembleInput{Template: "dev", Templates: ts, Resolved: map[string]string{"e": "1.5.0"}, Latest: plan.Vector}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if next.Vector == nil || next.Status.LatestVector != "dev:2026.7.27-153052000Z" {
		t.Errorf("changed component: vector=%v status=%+v", next.Vector, next.Status)
	}
}

func TestAssembleVectorErrors(t *testing.T) {
	_, err := AssembleVector(AssembleInput{Template: "dev", Templates: chain}, t0)
	want := `VectorTemplate dev: component "e" version ">=1.2.0 <2.0.0" is a range and was not resolved; resolve it against the registry first`
	if err == nil || err.Error() != want {
		t.Errorf("unresolved range: want %q, got %v", want, err)
	}
	for _, v := range []string{"1.4.x", "^1.2", "~1.2.3", "1.*", ">1", "1.2 || 1.3"} {
		if !v1alpha1.IsVersionRange(v) {
			t.Errorf("isVersionRange(%q) = false", v)
		}
	}
	for _, v := range []string{"1.20", "v1.2.3", "latest", "1.4.2", digestD, "2026.7.27-143052000Z", "main-abc"} {
		if v1alpha1.IsVersionRange(v) {
			t.Errorf("isVersionRange(%q) = true", v)
		}
	}
}

func TestComponentsDigestIsStableUnderOrder(t *testing.T) {
	orders := [][]v1alpha1.ComponentSpec{
		{comp("a", "1"), comp("b", "2"), comp("c", digestD)},
		{comp("c", digestD), comp("a", "1"), comp("b", "2")},
		{comp("b", "2"), comp("c", digestD), comp("a", "1")},
	}
	var digests []string
	for _, cs := range orders {
		plan, err := AssembleVector(AssembleInput{Template: "x", Templates: templates(template("x", "", cs...))}, t0)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, plan.Vector.Spec.Digest)
	}
	if diff := cmp.Diff([]string{digests[0], digests[0], digests[0]}, digests); diff != "" {
		t.Errorf("digests differ by order (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(digests[0], "sha256:") || len(digests[0]) != len("sha256:")+64 {
		t.Errorf("digest %q is not sha256:<64 hex>", digests[0])
	}
	other := ComponentsDigest([]v1alpha1.VectorComponent{{Name: "a", Tag: "1"}, {Name: "b", Tag: "3"}, {Name: "c", Digest: digestD}})
	if other == digests[0] {
		t.Error("different components share a digest")
	}
	// Field boundaries are part of the digest: moving text between fields changes it.
	if ComponentsDigest([]v1alpha1.VectorComponent{{Name: "ab", Tag: "c"}}) == ComponentsDigest([]v1alpha1.VectorComponent{{Name: "a", Tag: "bc"}}) {
		t.Error("digest ignores field boundaries")
	}
}

func TestVectorVersion(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 7, 27, 14, 30, 52, 0, time.UTC), "2026.7.27-143052000Z"},
		{time.Date(2026, 1, 5, 3, 4, 5, 6_000_000, time.UTC), "2026.1.5-030405006Z"},
		{time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC), "2026.12.31-235959999Z"},
		{time.Date(2026, 7, 27, 16, 30, 52, 0, time.FixedZone("CEST", 2*3600)), "2026.7.27-143052000Z"},
	}
	for _, tt := range tests {
		got := VectorVersion(tt.t)
		if got != tt.want {
			t.Errorf("VectorVersion(%s) = %q, want %q", tt.t, got, tt.want)
		}
		back, err := ParseVectorVersion(got)
		if err != nil || !back.Equal(tt.t.Truncate(time.Millisecond)) {
			t.Errorf("ParseVectorVersion(%q) = %s, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "latest", "2026.07.27-143052000Z", "2026.7.27-143052Z", "2026.7.27-143052000", "2026.13.1-000000000Z"} {
		if _, err := ParseVectorVersion(bad); err == nil {
			t.Errorf("ParseVectorVersion(%q): want an error", bad)
		}
	}
}

// Two vectors in the same millisecond (or a clock behind the latest vector)
// still get distinct, increasing versions.
func TestAssembleVectorSameMillisecond(t *testing.T) {
	now := time.Date(2026, 7, 27, 14, 30, 52, 123_456_789, time.UTC)
	tests := []struct {
		name   string
		latest string
		want   string
	}{
		{"same millisecond", "2026.7.27-143052123Z", "2026.7.27-143052124Z"},
		{"clock behind the latest", "2026.7.27-143053000Z", "2026.7.27-143053001Z"},
		{"earlier latest", "2026.7.27-143052122Z", "2026.7.27-143052123Z"},
		{"unparseable latest", "legacy", "2026.7.27-143052123Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			latest := &v1alpha1.Vector{Spec: v1alpha1.VectorSpec{Template: "x", Version: tt.latest,
				Components: []v1alpha1.VectorComponent{{Name: "a", Tag: "0"}}}}
			plan, err := AssembleVector(AssembleInput{Template: "x", Templates: templates(template("x", "", comp("a", "1"))), Latest: latest}, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, plan.Vector.Spec.Version); diff != "" {
				t.Errorf("version (-want +got):\n%s", diff)
			}
		})
	}
}
