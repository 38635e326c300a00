package v1alpha1

import "strings"

// Resource is how people name a kind on the command line, as kubectl names
// a resource: its plural, its singular and its short names. The CLI's
// `get`, `describe` and completion, and the CRDs of the Kubernetes mirror
// (their +kubebuilder:resource markers), use these names, so each kind has
// the same short name everywhere.
type Resource struct {
	Kind       string
	Plural     string
	Singular   string
	ShortNames []string
}

// Resources are the kinds of the API, users' objects first.
var Resources = []Resource{
	{Kind: LandscapeKind, Plural: "landscapes", Singular: "landscape", ShortNames: []string{"ls"}},
	{Kind: StageKind, Plural: "stages", Singular: "stage", ShortNames: []string{"st"}},
	{Kind: VectorTemplateKind, Plural: "vectortemplates", Singular: "vectortemplate", ShortNames: []string{"vt"}},
	{Kind: VectorPromotionConfigKind, Plural: "vectorpromotionconfigs", Singular: "vectorpromotionconfig", ShortNames: []string{"vpc"}},
	{Kind: VectorKind, Plural: "vectors", Singular: "vector", ShortNames: []string{"vec"}},
	{Kind: VectorPromotionKind, Plural: "vectorpromotions", Singular: "vectorpromotion", ShortNames: []string{"vp"}},
	{Kind: StageVersionKind, Plural: "stageversions", Singular: "stageversion", ShortNames: []string{"sv"}},
	{Kind: StageVersionUsageKind, Plural: "stageversionusages", Singular: "stageversionusage", ShortNames: []string{"svu"}},
}

// Names are every name of r: plural, singular, short names and the kind.
func (r Resource) Names() []string {
	return append([]string{r.Plural, r.Singular, strings.ToLower(r.Kind)}, r.ShortNames...)
}

// ResourceFor finds the resource a name on the command line means, case
// insensitively, as kubectl does.
func ResourceFor(name string) (Resource, bool) {
	name = strings.ToLower(name)
	for _, r := range Resources {
		for _, n := range r.Names() {
			if n == name {
				return r, true
			}
		}
	}
	return Resource{}, false
}
