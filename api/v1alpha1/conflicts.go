package v1alpha1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateConfigs reports what a set of VectorPromotionConfigs cannot do
// together, by config name, each at spec.target:
//
//   - a cycle of configs (dev → test → dev, of any length): every config on
//     it would promote the vector it received back, downgrading a stage in
//     one pass; the message names every config of the cycle in order;
//   - two or more configs targeting one stage: their promotions do not
//     supersede each other and would overwrite each other's vector.
//
// describe names a config in messages (with its file, say); nil uses the
// name. Each config must be valid on its own (Validate).
func ValidateConfigs(configs []*VectorPromotionConfig, describe func(name string) string) map[string]field.ErrorList {
	return ValidateConfigsAt(configs, describe, nil)
}

// ValidateConfigsAt is ValidateConfigs with stages compared by where their
// overlays are: overlay names the overlay a stage writes (repository,
// branch and directory, "" when it does not resolve). Two stages on one
// overlay are one stage to the configs promoting into them: one
// kustomization.yaml cannot render two vectors.
func ValidateConfigsAt(configs []*VectorPromotionConfig, describe func(name string) string, overlay func(landscape, name string) string) map[string]field.ErrorList {
	// Each stage's key is made once: overlay can be costly, and every
	// config's source is another's target.
	keys := make(map[[2]string]string, len(configs)+1)
	stageKey := func(landscape, name string) string {
		if k, ok := keys[[2]string{landscape, name}]; ok {
			return k
		}
		k := "stage " + landscape + "/" + name
		if overlay != nil {
			if o := overlay(landscape, name); o != "" {
				k = "overlay " + o
			}
		}
		keys[[2]string{landscape, name}] = k
		return k
	}
	if describe == nil {
		describe = func(name string) string { return name }
	}
	sorted := slices.Clone(configs)
	slices.SortFunc(sorted, func(a, b *VectorPromotionConfig) int { return strings.Compare(a.Name, b.Name) })
	out := map[string]field.ErrorList{}
	target := field.NewPath("spec", "target")

	// The configs as edges of the stage graph, in name order.
	edges := make([]configEdge, len(sorted))
	byTarget := make(map[string][]*configEdge, len(sorted))
	fromStage := make(map[string][]*configEdge, len(sorted)) // edges by source stage
	for i, c := range sorted {
		e := &edges[i]
		e.config, e.target = c, stageKey(c.Spec.Target.Landscape, c.Spec.Target.Name)
		byTarget[e.target] = append(byTarget[e.target], e)
		if c.Spec.Source.Kind == StageKind {
			e.source = stageKey(c.Spec.Source.Landscape, c.Spec.Source.Name)
			fromStage[e.source] = append(fromStage[e.source], e)
		}
	}
	component := stageComponents(edges, fromStage)
	for i := range edges {
		e := &edges[i]
		c, t := e.config, e.config.Spec.Target
		if others := byTarget[e.target]; len(others) > 1 {
			var names []string
			shared := ""
			for _, o := range others {
				if o == e {
					continue
				}
				name := "VectorPromotionConfig " + describe(o.config.Name)
				if ot := o.config.Spec.Target; ot.Landscape != t.Landscape || ot.Name != t.Name {
					name += fmt.Sprintf(" (through Stage %s in Landscape %s)", ot.Name, ot.Landscape)
					shared = fmt.Sprintf(" (overlay %s)", overlay(t.Landscape, t.Name))
				}
				names = append(names, name)
			}
			out[c.Name] = append(out[c.Name], field.Invalid(target, t.Landscape+"/"+t.Name, fmt.Sprintf(
				"%s%s is also the target of %s; a stage takes its promotions from one config, "+
					"or they overwrite each other's vector: remove one or point its spec.target at another stage",
				t.Describe(), shared, strings.Join(names, ", "))))
		}
		if cycle := configCycle(e, fromStage, component); cycle != nil {
			steps := make([]string, len(cycle))
			for i, cc := range cycle {
				steps[i] = fmt.Sprintf("VectorPromotionConfig %s (%s/%s → %s/%s)", describe(cc.Name),
					cc.Spec.Source.Landscape, cc.Spec.Source.Name, cc.Spec.Target.Landscape, cc.Spec.Target.Name)
			}
			out[c.Name] = append(out[c.Name], field.Invalid(target, t.Landscape+"/"+t.Name, fmt.Sprintf(
				"the configs form a cycle: %s, and back; each would promote the vector it received to where it "+
					"came from, rolling a stage back: remove one of them or point its spec.target out of the cycle",
				strings.Join(steps, " → "))))
		}
	}
	return out
}

// configEdge is a config as an edge of the stage graph: from its source
// stage's key ("" for a template, which no config promotes into) to its
// target stage's key.
type configEdge struct {
	config         *VectorPromotionConfig
	source, target string
}

// configCycle is the shortest cycle of configs through e, starting with e's
// config (then configs from its target stage on, back to its source stage),
// or nil. Breadth-first over configs sorted by name, so it is
// deterministic. A cycle through e exists only when its source and target
// stages are in one strongly connected component, and every stage on it is
// in that component, so the search looks nowhere else: a long chain costs
// its length once, not once per config.
func configCycle(e *configEdge, fromStage map[string][]*configEdge, component map[string]int) []*VectorPromotionConfig {
	if e.source == "" {
		return nil // nothing promotes into a template
	}
	start, first := e.source, e.target
	if component[start] != component[first] {
		return nil
	}
	// via[stage] is the edge that reached stage first.
	via := map[string]*configEdge{first: e}
	queue := []string{first}
	for len(queue) > 0 {
		stage := queue[0]
		queue = queue[1:]
		if stage == start {
			var path []*VectorPromotionConfig
			for s := start; ; {
				ce := via[s]
				path = append(path, ce.config)
				if ce == e {
					break
				}
				s = ce.source
			}
			slices.Reverse(path)
			return path
		}
		for _, next := range fromStage[stage] {
			if component[next.target] != component[start] {
				continue // a stage that cannot lead back to start
			}
			if _, seen := via[next.target]; !seen {
				via[next.target] = next
				queue = append(queue, next.target)
			}
		}
	}
	return nil
}

// stageComponents numbers the strongly connected components of the stage
// graph (an edge from each config's source stage to its target stage),
// with Tarjan's algorithm: linear in stages and configs. Every stage a
// config promotes from, and so every stage one promotes to, gets a number.
func stageComponents(edges []configEdge, fromStage map[string][]*configEdge) map[string]int {
	// visit is Tarjan's bookkeeping of one stage; one map of them, sized
	// once, costs a fraction of four growing ones at 10,000 stages.
	type visit struct {
		index, low int
		onStack    bool
	}
	visits := make(map[string]*visit, len(edges)+1)
	component := make(map[string]int, len(edges)+1)
	var stack []string
	next, components := 0, 0
	var walk func(stage string) *visit
	walk = func(stage string) *visit {
		v := &visit{index: next, low: next, onStack: true}
		visits[stage] = v
		next++
		stack = append(stack, stage)
		for _, e := range fromStage[stage] {
			if w, seen := visits[e.target]; !seen {
				v.low = min(v.low, walk(e.target).low)
			} else if w.onStack {
				v.low = min(v.low, w.index)
			}
		}
		if v.low == v.index {
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				visits[top].onStack = false
				component[top] = components
				if top == stage {
					break
				}
			}
			components++
		}
		return v
	}
	for i := range edges {
		if s := edges[i].source; s != "" {
			if _, seen := visits[s]; !seen {
				walk(s)
			}
		}
	}
	return component
}
