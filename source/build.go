package source

import (
	"fmt"
	"sort"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/render"
)

// BuildStages renders every indexed stage overlay with kustomize, as Flux or
// Argo CD would, and reports each one that does not build as a Problem on
// its Stage's spec.path: an overlay that cannot build cannot be promoted to.
// It also reports template components whose image is no valid reference or
// matches no container of a stage their vectors are promoted to.
func BuildStages(s *Snapshot, renderer *render.Renderer) []Problem {
	keys := make([]string, 0, len(s.StageIndex))
	for k := range s.StageIndex {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var problems []Problem
	for _, k := range keys {
		ref := s.StageIndex[k]
		if _, err := renderer.Build(ref.Tree, ref.Overlay); err != nil {
			o, _ := s.Object(v1alpha1.StageKind, k)
			problems = append(problems, Problem{
				File: o.File, Kind: v1alpha1.StageKind, Name: ref.Name, Field: "spec.path",
				Reason: fmt.Sprintf("overlay %q does not build: %v", ref.Overlay, err),
			})
		}
	}
	return append(problems, componentImageProblems(s, renderer)...)
}
