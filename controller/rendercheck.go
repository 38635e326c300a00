package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// renderCheck is the Change.Check of a promotion into overlay: Succeeded
// means the stage runs the vector, so before anything is pushed the edited
// overlay is built with kustomize inside the edited repository tree (as
// validate builds it) and must run every component at its tag or digest,
// under the name the overlay's entry for it gives (a mirror's newName).
func (c *Controller) renderCheck(overlay string, components []v1alpha1.VectorComponent) func(*object.Tree) error {
	return func(tree *object.Tree) error { return c.checkRenders(repofs.GitTree(tree), overlay, components) }
}

// checkRenders builds overlay in tree and checks that it runs every
// component at its tag or digest (see renderCheck).
func (c *Controller) checkRenders(tree repofs.Tree, overlay string, components []v1alpha1.VectorComponent) error {
	images, err := c.overlayRenderer().Images(context.Background(), tree, overlay)
	if err != nil {
		return &overlayBuildError{overlay: overlay, err: err}
	}
	// The edited entries say under which name each component runs.
	entries, err := overlays.ReadStageVector(tree, overlay)
	if err != nil {
		return &overlayBuildError{overlay: overlay, err: err}
	}
	return render.CheckComponents(images, entries, components, c.imageNames.Parts)
}

// rendersVector checks that a stage's overlay, as a snapshot read it, runs
// a promotion's vector (the components state holds for it).
func (c *Controller) rendersVector(state *reconcilers.State) func(p *v1alpha1.VectorPromotion, ref source.StageRef) error {
	return func(p *v1alpha1.VectorPromotion, ref source.StageRef) error {
		vector := state.Vectors[p.Spec.Vector]
		switch {
		case vector == nil:
			return fmt.Errorf("vector %s is not on the state branch", p.Spec.Vector)
		case ref.Tree == nil:
			return fmt.Errorf("stage %s/%s was not read", ref.Landscape, ref.Name)
		}
		return c.checkRenders(ref.Tree, ref.Overlay, vector.Spec.Components)
	}
}

// rendersOther says why overlay in tree, whose entries sv name a vector of
// components and contradict none of them, does not run it: what its
// render runs instead, or that it does not build. "" when the render runs
// every component at its version.
func (c *Controller) rendersOther(ctx context.Context, tree repofs.Tree, overlay string, sv overlays.StageVector, components []v1alpha1.VectorComponent) (string, error) {
	if tree == nil {
		return "", nil
	}
	images, err := c.overlayRenderer().Images(ctx, tree, overlay)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return rendersOtherThan(images, err, sv, components, c.imageNames.Parts), nil
}

// rendersOtherThan is rendersOther's answer for an overlay whose build
// ran the images (or failed with err).
func rendersOtherThan(images []overlays.RenderedImage, err error, sv overlays.StageVector, components []v1alpha1.VectorComponent,
	parts func(image string) overlays.ImageParts) string {
	if err != nil {
		return fmt.Sprintf("it does not build: %v", err)
	}
	if err := render.CheckComponents(images, sv, components, parts); err != nil {
		return fmt.Sprintf("its render does not run it: %v", err)
	}
	return ""
}

// overlayBuildError is an edited overlay kustomize cannot build.
type overlayBuildError struct {
	overlay string
	err     error
}

func (e *overlayBuildError) Error() string {
	return fmt.Sprintf("the overlay %s does not build with the promotion's edit: %v", e.overlay, e.err)
}

func (e *overlayBuildError) Unwrap() error { return e.err }

// checkFailure is the Failed result of a promotion whose render check
// refused its edit: retrying the same edit cannot help, the overlay or the
// vector must change.
func checkFailure(err *gitwriter.CheckError) reconcilers.Result {
	res := reconcilers.Result{Outcome: reconcilers.OutcomeFailed, Reason: v1alpha1.PromotionFailedReason}
	var build *overlayBuildError
	var noEffect *render.NoEffectError
	switch {
	case errors.As(err, &build):
		res.Reason = v1alpha1.OverlayBuildFailedReason
		res.Message = build.Error() + "; nothing was pushed: fix the overlay, then promote again"
	case errors.As(err, &noEffect):
		res.Reason = v1alpha1.PromotionNoEffectReason
		res.Message = noEffect.Error() + "; nothing was pushed: make the containers use the component's image, or set the component's image to the one they use"
	default:
		res.Message = err.Error() + "; nothing was pushed"
	}
	return res
}

// overlayRenderer is the controller's renderer, made by New; a Controller
// made otherwise gets a fresh one each time (promotions execute
// concurrently, so it is not stored here).
func (c *Controller) overlayRenderer() *render.Renderer {
	if c.renderer == nil {
		return render.NewRenderer(render.Options{})
	}
	return c.renderer
}
