package source

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// componentImageProblems is what validate says about the images of the
// templates' components. A component's image (Image, else Name) is the name
// of its overlay images: entry, which kustomize matches against the image of
// each container with tag and digest taken off, so it must be a valid image
// repository (parsed as Flux parses image references, with
// go-containerregistry) and must match a container in every stage the
// template's vectors are promoted to, or a promotion there changes nothing.
// A stage's images entry for the image (named after it, or a placeholder's
// entry whose newName is it) says which name the containers run it under.
func componentImageProblems(ctx context.Context, s *Snapshot, renderer Builder) []Problem {
	var problems []Problem
	files := s.filesOf(v1alpha1.VectorTemplateKind)
	for _, t := range keys.Sorted(s.Templates) {
		tmpl := s.Templates[t]
		for i, c := range tmpl.Spec.Components {
			image, field := componentImage(c, i)
			if _, err := name.NewRepository(image); err != nil {
				problems = append(problems, Problem{File: files[t], Kind: v1alpha1.VectorTemplateKind, Name: t, Field: field,
					Reason: fmt.Sprintf("%q is not a valid image reference: %v; write the image repository the containers use, without tag or digest (those come from version)", image, err)})
			}
		}
	}

	// Each config's overlay is read and matched on every core; the findings
	// are then taken in the configs' order, each problem once.
	templates := newSourceTemplates(s)
	configs := keys.Sorted(s.Configs)
	sources := make([]string, len(configs))
	for i, name := range configs {
		sources[i] = templates.of(s.Configs[name])
	}
	findings := make([][]imageFinding, len(configs))
	var matchers imageMatchers
	parallel.EachContext(ctx, len(configs), func(i int) error {
		findings[i] = s.configImageFindings(renderer, &matchers, files, configs[i], sources[i])
		return nil
	})
	seen := map[string]bool{}
	for _, fs := range findings {
		for _, f := range fs {
			if !seen[f.key] {
				seen[f.key] = true
				problems = append(problems, f.problem)
			}
		}
	}
	return problems
}

// imageFinding is a problem one config's check found, and what makes it the
// same problem as another config's: the stage, template and field it is about.
type imageFinding struct {
	key     string
	problem Problem
}

// configImageFindings checks the components of template (the one config
// cfgName promotes) against the images its target stage's overlay renders;
// files names the file of each template.
func (s *Snapshot) configImageFindings(renderer Builder, matchers *imageMatchers, files map[string]string, cfgName, template string) []imageFinding {
	if template == "" {
		return nil
	}
	t := s.Configs[cfgName].Spec.Target
	key := StageKey(t.Landscape, t.Name)
	ref, ok := s.StageIndex[key]
	if !ok {
		return nil // reported where the target is resolved
	}
	out, err := renderer.Build(ref.Tree, ref.Overlay)
	if err != nil {
		return nil // BuildStages reports it
	}
	images, err := overlays.Images(out)
	if err != nil {
		return nil
	}
	var findings []imageFinding
	for _, c := range s.templateComponents(template) {
		image, field := componentImage(c.spec, c.index)
		if entries := ref.Vector.Entries(image); len(entries) > 1 {
			findings = append(findings, imageFinding{key: key + "\x00entries\x00" + image, problem: Problem{
				File: files[c.template], Kind: v1alpha1.VectorTemplateKind, Name: c.template, Field: field,
				Reason: fmt.Sprintf("image %s has %d images entries in the overlay %s of Stage %s (%s): kustomize applies each, and a promotion cannot tell which sets the version; keep one",
					image, len(entries), ref.Overlay, key, describeEntries(entries))}})
		}
		if _, err := name.NewRepository(image); err != nil || matchesAny(images, matchers.of(runsAs(ref.Vector, image))) {
			continue
		}
		findings = append(findings, imageFinding{key: key + "\x00" + c.template + "\x00" + field, problem: Problem{
			File: files[c.template], Kind: v1alpha1.VectorTemplateKind, Name: c.template, Field: field,
			Reason: fmt.Sprintf("image %s matches no container of Stage %s (overlay %s, promoted to by VectorPromotionConfig %s): its containers use %s; set image to the image the containers use",
				image, key, ref.Overlay, cfgName, containerImageNames(images))}})
	}
	return findings
}

// componentImage is the image a component's overlay entry is named after,
// and the field it is written in.
func componentImage(c v1alpha1.ComponentSpec, i int) (string, string) {
	if c.Image != "" {
		return c.Image, fmt.Sprintf("spec.components[%d].image", i)
	}
	return c.Name, fmt.Sprintf("spec.components[%d].name", i)
}

// sourceTemplates finds the VectorTemplate whose vectors a config promotes:
// its source, or for a Stage source the template of a config promoting
// into that stage, searched depth first in the order of the configs' names
// (the first one found wins). Configs are indexed by target once, and
// answers are remembered when the configs have no cycle (a remembered
// answer is then the one a fresh search would give), so a deep chain
// costs its length, not its square.
type sourceTemplates struct {
	s        *Snapshot
	byTarget map[targetRef][]string // config names, sorted
	acyclic  bool
	memo     map[string]string
}

type targetRef struct{ landscape, name string }

func newSourceTemplates(s *Snapshot) *sourceTemplates {
	st := &sourceTemplates{s: s, byTarget: map[targetRef][]string{}, memo: map[string]string{}}
	for _, n := range keys.Sorted(s.Configs) {
		t := s.Configs[n].Spec.Target
		k := targetRef{t.Landscape, t.Name}
		st.byTarget[k] = append(st.byTarget[k], n)
	}
	st.acyclic = !st.hasCycle()
	return st
}

// of is the template cfg's vectors come from; empty when none is reached.
func (st *sourceTemplates) of(cfg *v1alpha1.VectorPromotionConfig) string {
	return st.search(cfg, map[string]bool{})
}

func (st *sourceTemplates) search(cfg *v1alpha1.VectorPromotionConfig, visited map[string]bool) string {
	src := cfg.Spec.Source
	if src.Kind != v1alpha1.StageKind {
		if _, ok := st.s.Templates[src.Name]; ok {
			return src.Name
		}
		return ""
	}
	if t, ok := st.memo[cfg.Name]; ok {
		return t
	}
	if visited[cfg.Name] {
		return ""
	}
	visited[cfg.Name] = true
	found := ""
	for _, n := range st.byTarget[targetRef{src.Landscape, src.Name}] {
		if t := st.search(st.s.Configs[n], visited); t != "" {
			found = t
			break
		}
	}
	if st.acyclic {
		st.memo[cfg.Name] = found
	}
	return found
}

// hasCycle says whether some config is, through Stage sources, upstream of
// itself (three-colour depth-first search, each config once).
func (st *sourceTemplates) hasCycle() bool {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case open:
			return true
		case done:
			return false
		}
		state[name] = open
		if src := st.s.Configs[name].Spec.Source; src.Kind == v1alpha1.StageKind {
			for _, up := range st.byTarget[targetRef{src.Landscape, src.Name}] {
				if visit(up) {
					return true
				}
			}
		}
		state[name] = done
		return false
	}
	for _, n := range keys.Sorted(st.s.Configs) {
		if visit(n) {
			return true
		}
	}
	return false
}

// templateComponent is one component of a template's vectors and where it
// is written: in the template itself or in a base.
type templateComponent struct {
	template string
	index    int
	spec     v1alpha1.ComponentSpec
}

// templateComponents are the components of template's vectors: its base's,
// overridden by name by its own.
func (s *Snapshot) templateComponents(template string) []templateComponent {
	var chain []string
	for t := template; t != "" && !contains(chain, t); {
		tmpl, ok := s.Templates[t]
		if !ok {
			break
		}
		chain = append(chain, t)
		t = ""
		if tmpl.Spec.Base != nil {
			t = tmpl.Spec.Base.Name
		}
	}
	var out []templateComponent
	for i := len(chain) - 1; i >= 0; i-- {
		for j, c := range s.Templates[chain[i]].Spec.Components {
			tc := templateComponent{template: chain[i], index: j, spec: c}
			replaced := false
			for k := range out {
				if out[k].spec.Name == c.Name {
					out[k], replaced = tc, true
				}
			}
			if !replaced {
				out = append(out, tc)
			}
		}
	}
	return out
}

// runsAs is the image name the containers of the component whose image is
// image run under in an overlay: the one its images entry gives (a
// mirror's newName), as a promotion's edit and render check take it.
func runsAs(overlay overlays.StageVector, image string) string {
	if entry, ok := overlay.Entry(image); ok {
		return entry.ImageName()
	}
	return image
}

func describeEntries(entries []v1alpha1.VectorComponent) string {
	var out []string
	for _, e := range entries {
		d := "name " + e.Name
		if e.Image != "" {
			d += " newName " + e.Image
		}
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}

// imageMatchers compiles kustomize's expression for each image name once:
// thousands of configs match a few names, one overlay each. Safe for
// concurrent use, as a compiled expression is.
type imageMatchers struct{ byName sync.Map } // name -> func(image string) bool

func (m *imageMatchers) of(name string) func(image string) bool {
	if f, ok := m.byName.Load(name); ok {
		return f.(func(string) bool)
	}
	f, _ := m.byName.LoadOrStore(name, overlays.ImageMatcher(name))
	return f.(func(string) bool)
}

func matchesAny(images []overlays.RenderedImage, matches func(image string) bool) bool {
	for _, r := range images {
		if matches(r.Image) {
			return true
		}
	}
	return false
}

// containerImageNames lists the distinct image names (without tag or
// digest) the containers use.
func containerImageNames(images []overlays.RenderedImage) string {
	set := map[string]bool{}
	for _, r := range images {
		n, _, _ := overlays.SplitImage(r.Image)
		set[n] = true
	}
	if len(set) == 0 {
		return "no images (the overlay has no containers)"
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
