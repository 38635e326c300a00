package controller

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/registry"
)

// Resolver picks a component's version from its registry's tags.
type Resolver interface {
	Resolve(ctx context.Context, image string, spec registry.ComponentVersion) (registry.Resolved, error)
}

// registryResolution is what the registries said for every template.
type registryResolution struct {
	// resolved by template, then component: "tag@digest".
	resolved map[string]map[string]string
	// problems by template: the registry errors, each saying which
	// version was kept instead.
	problems map[string]string
}

// resolveComponents asks the registries for every component whose version
// is a range or a tag policy. When a registry fails, the version the
// template's latest vector has is kept, and the template says so. The
// registries are asked concurrently (see askRegistries); progress, when not
// nil, hears about the slow ones.
func resolveComponents(ctx context.Context, r Resolver, snap *source.Snapshot, state *reconcilers.State, progress io.Writer) registryResolution {
	out := registryResolution{resolved: map[string]map[string]string{}, problems: map[string]string{}}
	templates := make(map[string]v1alpha1.VectorTemplate, len(snap.Templates))
	for name, t := range snap.Templates {
		templates[name] = *t
	}
	type ask struct {
		component, key string
	}
	asks := map[string][]ask{}
	questions := map[string]registryQuestion{}
	for _, name := range keys.Sorted(templates) {
		specs, err := reconcilers.ResolveComponents(name, templates)
		if err != nil {
			continue // AssembleVector reports it
		}
		for _, s := range specs {
			if !reconcilers.NeedsRegistry(s) {
				continue
			}
			image := s.Image
			if image == "" {
				image = s.Name
			}
			spec := registry.ComponentVersion{Version: s.Version, Policy: s.Policy, Order: s.Order}
			if s.FilterTags != nil {
				spec.TagFilter, spec.Extract = s.FilterTags.Pattern, s.FilterTags.Extract
			}
			key := fmt.Sprintf("%s\x00%+v", image, spec)
			questions[key] = registryQuestion{image: image, spec: spec}
			asks[name] = append(asks[name], ask{component: s.Name, key: key})
		}
	}
	answers := askRegistries(ctx, r, questions, progress)
	for _, name := range keys.Sorted(asks) {
		var problems []string
		for _, a := range asks[name] {
			ans := answers[a.key]
			if ans.err == nil {
				put(out.resolved, name, a.component, ans.version)
				continue
			}
			kept := lastResolved(state, name, a.component)
			if kept != "" {
				put(out.resolved, name, a.component, kept)
				problems = append(problems, fmt.Sprintf("%s: %v; kept %s", a.component, ans.err, kept))
			} else {
				problems = append(problems, fmt.Sprintf("%s: %v", a.component, ans.err))
			}
		}
		if len(problems) > 0 {
			sort.Strings(problems)
			out.problems[name] = strings.Join(problems, "; ")
		}
	}
	return out
}

type registryAnswer struct {
	version string
	err     error
}

func put(m map[string]map[string]string, template, component, version string) {
	if m[template] == nil {
		m[template] = map[string]string{}
	}
	m[template][component] = version
}

// lastResolved is the component's version in the template's latest vector.
func lastResolved(state *reconcilers.State, template, component string) string {
	t := state.Templates[template]
	if t == nil {
		return ""
	}
	v := state.Vectors[t.Status.LatestVector]
	if v == nil {
		return ""
	}
	for _, c := range v.Spec.Components {
		if c.Name == component {
			switch {
			case c.Tag != "" && c.Digest != "":
				return c.Tag + "@" + c.Digest
			case c.Digest != "":
				return c.Digest
			}
			return c.Tag
		}
	}
	return ""
}
