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
	// Each stage's key is made once: overlay can be costly, and the checks
	// below ask for every key many times.
	keys := map[[2]string]string{}
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

	byTarget := map[string][]*VectorPromotionConfig{}
	fromStage := map[string][]*VectorPromotionConfig{} // configs by source stage
	for _, c := range sorted {
		t := stageKey(c.Spec.Target.Landscape, c.Spec.Target.Name)
		byTarget[t] = append(byTarget[t], c)
		if c.Spec.Source.Kind == StageKind {
			s := stageKey(c.Spec.Source.Landscape, c.Spec.Source.Name)
			fromStage[s] = append(fromStage[s], c)
		}
	}
	component := stageComponents(sorted, fromStage, stageKey)
	for _, c := range sorted {
		t := c.Spec.Target
		if others := byTarget[stageKey(t.Landscape, t.Name)]; len(others) > 1 {
			var names []string
			shared := ""
			for _, o := range others {
				if o == c {
					continue
				}
				name := "VectorPromotionConfig " + describe(o.Name)
				if ot := o.Spec.Target; ot.Landscape != t.Landscape || ot.Name != t.Name {
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
		if cycle := configCycle(c, fromStage, stageKey, component); cycle != nil {
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

// configCycle is the shortest cycle of configs through c, starting with c
// (c, then configs from c's target stage on, back to c's source stage), or
// nil. Breadth-first over configs sorted by name, so it is deterministic.
// A cycle through c exists only when c's source and target stages are in
// one strongly connected component, and every stage on it is in that
// component, so the search looks nowhere else: a long chain costs its
// length once, not once per config.
func configCycle(c *VectorPromotionConfig, fromStage map[string][]*VectorPromotionConfig, stageKey func(landscape, name string) string, component map[string]int) []*VectorPromotionConfig {
	if c.Spec.Source.Kind != StageKind {
		return nil // nothing promotes into a template
	}
	start := stageKey(c.Spec.Source.Landscape, c.Spec.Source.Name)
	first := stageKey(c.Spec.Target.Landscape, c.Spec.Target.Name)
	if component[start] != component[first] {
		return nil
	}
	// via[stage] is the config that reached stage first.
	via := map[string]*VectorPromotionConfig{first: c}
	queue := []string{first}
	for len(queue) > 0 {
		stage := queue[0]
		queue = queue[1:]
		if stage == start {
			var path []*VectorPromotionConfig
			for s := start; ; {
				cc := via[s]
				path = append(path, cc)
				if cc == c {
					break
				}
				s = stageKey(cc.Spec.Source.Landscape, cc.Spec.Source.Name)
			}
			slices.Reverse(path)
			return path
		}
		for _, next := range fromStage[stage] {
			t := stageKey(next.Spec.Target.Landscape, next.Spec.Target.Name)
			if component[t] != component[start] {
				continue // a stage that cannot lead back to start
			}
			if _, seen := via[t]; !seen {
				via[t] = next
				queue = append(queue, t)
			}
		}
	}
	return nil
}

// stageComponents numbers the strongly connected components of the stage
// graph (an edge from each config's source stage to its target stage),
// with Tarjan's algorithm: linear in stages and configs. Every stage a
// config promotes from, and so every stage one promotes to, gets a number.
func stageComponents(configs []*VectorPromotionConfig, fromStage map[string][]*VectorPromotionConfig, stageKey func(landscape, name string) string) map[string]int {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	component := map[string]int{}
	var stack []string
	next, components := 0, 0
	var visit func(stage string)
	visit = func(stage string) {
		index[stage], low[stage] = next, next
		next++
		stack = append(stack, stage)
		onStack[stage] = true
		for _, c := range fromStage[stage] {
			t := stageKey(c.Spec.Target.Landscape, c.Spec.Target.Name)
			if _, seen := index[t]; !seen {
				visit(t)
				low[stage] = min(low[stage], low[t])
			} else if onStack[t] {
				low[stage] = min(low[stage], index[t])
			}
		}
		if low[stage] == index[stage] {
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[top] = false
				component[top] = components
				if top == stage {
					break
				}
			}
			components++
		}
	}
	for _, c := range configs {
		if c.Spec.Source.Kind != StageKind {
			continue // a template is no stage: nothing can lead back to it
		}
		stage := stageKey(c.Spec.Source.Landscape, c.Spec.Source.Name)
		if _, seen := index[stage]; !seen {
			visit(stage)
		}
	}
	return component
}
