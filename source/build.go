package source

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"

	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// BuildStages renders every indexed stage overlay with kustomize, as Flux or
// Argo CD would, and reports each one that does not build as a Problem on
// its Stage's spec.path: an overlay that cannot build cannot be promoted to.
// It also reports template components whose image is no valid reference or
// matches no container of a stage their vectors are promoted to. The error
// is only for ctx being done.
//
// Overlays build on GOMAXPROCS workers at once (renderer must be safe for
// concurrent use); the problems come in the order of the stages' keys
// whatever order the builds finish in.
func BuildStages(ctx context.Context, s *Snapshot, renderer Builder) ([]Problem, error) {
	keys := make([]string, 0, len(s.StageIndex))
	for k := range s.StageIndex {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	reads := make([][]string, len(keys))
	errs := parallel.EachContext(ctx, len(keys), func(i int) error {
		ref := s.StageIndex[keys[i]]
		var err error
		_, reads[i], err = renderer.BuildReads(ctx, ref.Tree, ref.Overlay)
		return err
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var problems []Problem
	var files map[string]string
	for i, k := range keys {
		err := errs[i]
		if err == nil {
			continue
		}
		if files == nil {
			files = s.filesOf(v1alpha1.StageKind)
		}
		ref := s.StageIndex[k]
		file := files[k]
		problems = append(problems, Problem{
			File: file, Kind: v1alpha1.StageKind, Name: ref.Name, Field: "spec.path",
			Reason: fmt.Sprintf("overlay %q does not build: %v", ref.Overlay, err),
		})
		// The file at fault, when it is not the Stage's: a link out of
		// the repository, or a file over a limit.
		if p := buildProblem("", err); p.File != "" && (p.File != file) && !isBuildErrorOnly(err) {
			problems = append(problems, p)
		}
	}
	problems = append(problems, s.overlaysBuiltOnStages(keys, reads)...)
	problems = append(problems, s.vectorsNamedTwoWays(keys)...)
	problems = append(problems, componentImageProblems(ctx, s, renderer)...)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return problems, nil
}

// overlaysBuiltOnStages reports each stage whose overlay build read another
// stage's kustomization file (reads[i] are the files the build of stage
// keys[i] read): kustomize lets an overlay build on another, but
// promotions into that other stage rewrite the file, so each would change
// what this stage runs without this stage's own promotion and approvals,
// and this stage would report the vector its own file names, not the one it
// runs.
func (s *Snapshot) overlaysBuiltOnStages(keys []string, reads [][]string) []Problem {
	stageAt := s.stageAt()
	var problems []Problem
	var files map[string]string
	for i, k := range keys {
		ref := s.StageIndex[k]
		for _, f := range reads[i] {
			// Two stages on one overlay are the configs' problem
			// (v1alpha1.ValidateConfigsAt), not this one.
			dir := path.Dir(f)
			other, ok := stageAt(ref, dir)
			if !ok || dir == ref.Overlay || !slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(f)) {
				continue
			}
			if files == nil {
				files = s.filesOf(v1alpha1.StageKind)
			}
			problems = append(problems, Problem{File: files[k], Kind: v1alpha1.StageKind, Name: ref.Name, Field: "spec.path",
				Reason: builtOnStage(ref.Overlay, f+", the kustomization file", other, k)})
			break
		}
	}
	return problems
}

// vectorsNamedTwoWays reports each stage whose overlay names the vector an
// earlier stage's overlay (in keys' order) names, with an images entry
// setting the same image to another tag or digest: a vector is one set of
// versions, so one of the two does not run what it names (an annotation
// edited by hand, or an overlay copied from another). A pass believes
// neither blindly (pass.RunningVectors); this says it before it lands.
func (s *Snapshot) vectorsNamedTwoWays(keys []string) []Problem {
	namedFirst := map[string]string{} // vector -> the first stage naming it
	var problems []Problem
	var files map[string]string
	for _, k := range keys {
		ref := s.StageIndex[k]
		named := ref.Vector.Vector
		if named == "" {
			continue
		}
		other, seen := namedFirst[named]
		if !seen {
			namedFirst[named] = k
			continue
		}
		// The first overlay's entries are the vector, as a pass records
		// one it has not seen.
		first := s.StageIndex[other]
		contradiction := ref.Vector.Contradiction(first.Vector.Images)
		if contradiction == "" {
			continue
		}
		if files == nil {
			files = s.filesOf(v1alpha1.StageKind)
		}
		problems = append(problems, Problem{File: files[k], Kind: v1alpha1.StageKind, Name: ref.Name, Field: "spec.path",
			Reason: fmt.Sprintf("overlay %q names vector %s, as the overlay %s of Stage %s does, but %s (as that one sets): "+
				"one of them does not run %s; make its vectorflow.dev/vector annotation name what its entries run, or let a promotion write both",
				ref.Overlay, named, first.Overlay, other, contradiction, named)})
	}
	return problems
}

// isBuildErrorOnly is a plain kustomize failure, already reported on the
// Stage's spec.path with kustomize's own message.
func isBuildErrorOnly(err error) bool {
	var esc *repofs.EscapeError
	var le *repofs.LimitError
	return !errors.As(err, &esc) && !errors.As(err, &le)
}
