package reconcilers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// AssembleInput is what AssembleVector decides from.
type AssembleInput struct {
	// Template is the VectorTemplate to assemble.
	Template string
	// Templates are all VectorTemplates of the repository, by name (bases
	// are looked up here).
	Templates map[string]v1alpha1.VectorTemplate
	// Resolved maps a component name to the tag or digest the registry
	// resolved its version to ("1.4.2", "sha256:...", or "1.4.2@sha256:...").
	// Components without an entry must name an exact tag or a digest.
	Resolved map[string]string
	// Latest is the vector status.latestVector names, nil if none.
	Latest *v1alpha1.Vector
}

// VectorPlan is AssembleVector's decision.
type VectorPlan struct {
	// Vector is the new immutable vector to write, nil when the components
	// are those of the latest vector.
	Vector *v1alpha1.Vector
	// Status is the template's new status.
	Status v1alpha1.VectorTemplateStatus
}

// AssembleVector resolves the template's components (base chain, overrides,
// registry resolutions) and makes a new vector only when their digest differs
// from the latest vector's, so assembling the same components twice is a
// no-op. A vector whose components equal an older, non-latest vector is new:
// it must be promotable again, so identity is compared with the latest only.
func AssembleVector(in AssembleInput, now time.Time) (VectorPlan, error) {
	tmpl, ok := in.Templates[in.Template]
	if !ok {
		return VectorPlan{}, fmt.Errorf("VectorTemplate %s does not exist", in.Template)
	}
	specs, err := ResolveComponents(in.Template, in.Templates)
	if err != nil {
		return VectorPlan{}, err
	}
	components, err := resolvedComponents(in.Template, specs, in.Resolved)
	if err != nil {
		return VectorPlan{}, err
	}
	plan := VectorPlan{Status: *tmpl.Status.DeepCopy()}
	plan.Status.ObservedGeneration = tmpl.Generation
	digest := ComponentsDigest(components)
	if in.Latest != nil && latestDigest(in.Latest) == digest {
		plan.Status.LatestVector = in.Latest.Ref()
		return plan, nil
	}
	version := nextVersion(now, in.Latest)
	plan.Vector = &v1alpha1.Vector{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorKind},
		ObjectMeta: metav1.ObjectMeta{
			// Object names are lowercase DNS subdomains; the version keeps its Z.
			Name:      strings.ToLower(in.Template + "-" + version),
			Namespace: tmpl.Namespace,
		},
		Spec: v1alpha1.VectorSpec{Template: in.Template, Version: version, Components: components, Digest: digest},
	}
	since := Stamp(now)
	plan.Status.LatestVector = plan.Vector.Ref()
	plan.Status.LatestVectorSince = &since
	return plan, nil
}

// ResolveComponents is the template's components over its base chain: the
// base's components, replaced by name by the template's own, recursively.
// The result is sorted by name. A cycle or a missing base is an error.
func ResolveComponents(template string, templates map[string]v1alpha1.VectorTemplate) ([]v1alpha1.ComponentSpec, error) {
	chain, err := baseChain(template, templates)
	if err != nil {
		return nil, err
	}
	merged := map[string]v1alpha1.ComponentSpec{}
	for i := len(chain) - 1; i >= 0; i-- { // root base first, the template last
		t := templates[chain[i]]
		seen := map[string]bool{}
		for j, c := range t.Spec.Components {
			switch {
			case c.Name == "":
				return nil, fmt.Errorf("VectorTemplate %s: spec.components[%d].name is empty", t.Name, j)
			case c.Version == "" && !picksByPolicy(c):
				return nil, fmt.Errorf("VectorTemplate %s: spec.components[%d] %q has no version", t.Name, j, c.Name)
			case seen[c.Name]:
				return nil, fmt.Errorf("VectorTemplate %s: spec.components lists %q twice; keep one", t.Name, c.Name)
			}
			seen[c.Name] = true
			merged[c.Name] = c
		}
	}
	out := make([]v1alpha1.ComponentSpec, 0, len(merged))
	for _, c := range merged {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b v1alpha1.ComponentSpec) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// baseChain is [template, its base, the base's base, ...].
func baseChain(template string, templates map[string]v1alpha1.VectorTemplate) ([]string, error) {
	if _, ok := templates[template]; !ok {
		return nil, fmt.Errorf("VectorTemplate %s does not exist", template)
	}
	chain := []string{template}
	for name := template; ; {
		base := templates[name].Spec.Base
		if base == nil {
			return chain, nil
		}
		if base.Kind != "" && base.Kind != v1alpha1.VectorTemplateKind {
			return nil, fmt.Errorf("VectorTemplate %s: spec.base is a %s; only a VectorTemplate can be a base", name, base.Kind)
		}
		if slices.Contains(chain, base.Name) {
			return nil, fmt.Errorf("VectorTemplate %s: spec.base forms a cycle %s -> %s; break the chain",
				template, strings.Join(chain, " -> "), base.Name)
		}
		if _, ok := templates[base.Name]; !ok {
			return nil, fmt.Errorf("VectorTemplate %s: spec.base names VectorTemplate %s, which does not exist", name, base.Name)
		}
		chain = append(chain, base.Name)
		name = base.Name
	}
}

// resolvedComponents applies the registry's resolutions to the specs.
func resolvedComponents(template string, specs []v1alpha1.ComponentSpec, resolved map[string]string) ([]v1alpha1.VectorComponent, error) {
	out := make([]v1alpha1.VectorComponent, 0, len(specs))
	for _, s := range specs {
		version, ok := resolved[s.Name]
		if !ok {
			if picksByPolicy(s) {
				return nil, fmt.Errorf("VectorTemplate %s: component %q picks its tag by policy %s and was not resolved; resolve it against the registry first",
					template, s.Name, s.Policy)
			}
			if v1alpha1.IsVersionRange(s.Version) {
				return nil, fmt.Errorf("VectorTemplate %s: component %q version %q is a range and was not resolved; resolve it against the registry first",
					template, s.Name, s.Version)
			}
			version = s.Version
		}
		c := v1alpha1.VectorComponent{Name: s.Name}
		if s.Image != s.Name {
			c.Image = s.Image
		}
		switch tag, digest, ok := strings.Cut(version, "@"); {
		case ok:
			c.Tag, c.Digest = tag, digest
		case strings.HasPrefix(version, "sha256:"):
			c.Digest = version
		default:
			c.Tag = version
		}
		out = append(out, c)
	}
	return out, nil
}

// NeedsRegistry reports whether a component's version is picked from the
// registry's tags (a range or a tag policy) rather than written out.
func NeedsRegistry(s v1alpha1.ComponentSpec) bool {
	return picksByPolicy(s) || v1alpha1.IsVersionRange(s.Version)
}

// picksByPolicy: an alphabetical or numerical policy picks among the tags
// that pass filterTags, as Flux's ImagePolicy does; it has no version.
func picksByPolicy(s v1alpha1.ComponentSpec) bool {
	return s.Policy == v1alpha1.PolicyAlphabetical || s.Policy == v1alpha1.PolicyNumerical
}

// ComponentsDigest is the content identity of a vector: sha256 over the
// canonical JSON of its components sorted by name.
func ComponentsDigest(components []v1alpha1.VectorComponent) string {
	sorted := slices.Clone(components)
	slices.SortFunc(sorted, func(a, b v1alpha1.VectorComponent) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(sorted) // a slice of string-only structs always marshals
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func latestDigest(v *v1alpha1.Vector) string {
	if v.Spec.Digest != "" {
		return v.Spec.Digest
	}
	return ComponentsDigest(v.Spec.Components)
}

// nextVersion is now's version, or one millisecond past the latest vector's
// when now would not be newer (same millisecond, or a clock behind), so
// versions stay unique and increasing.
func nextVersion(now time.Time, latest *v1alpha1.Vector) string {
	t := now.UTC().Truncate(time.Millisecond)
	if latest != nil {
		if prev, err := ParseVectorVersion(latest.Spec.Version); err == nil && !t.After(prev) {
			t = prev.Add(time.Millisecond)
		}
	}
	return VectorVersion(t)
}

// VectorVersion formats t as a vector version, YYYY.M.D-HHMMSSmmmZ in UTC.
func VectorVersion(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%d.%d.%d-%02d%02d%02d%03dZ", t.Year(), t.Month(), t.Day(),
		t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/int(time.Millisecond))
}

var versionPattern = regexp.MustCompile(`^(\d{4})\.([1-9]\d?)\.([1-9]\d?)-(\d{2})(\d{2})(\d{2})(\d{3})Z$`)

// ParseVectorVersion is the inverse of VectorVersion.
func ParseVectorVersion(v string) (time.Time, error) {
	m := versionPattern.FindStringSubmatch(v)
	if m == nil {
		return time.Time{}, fmt.Errorf("vector version %q is not YYYY.M.D-HHMMSSmmmZ", v)
	}
	n := make([]int, len(m)-1)
	for i, s := range m[1:] {
		n[i], _ = strconv.Atoi(s) // the pattern admits digits only
	}
	t := time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], n[6]*int(time.Millisecond), time.UTC)
	if VectorVersion(t) != v {
		return time.Time{}, fmt.Errorf("vector version %q is not a valid date and time", v)
	}
	return t, nil
}
