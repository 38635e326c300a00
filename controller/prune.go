package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// Prune safety: a promotion's commit is what the deployer applies, and
// pruning deletes what the stage's render no longer holds. So before a
// promotion is pushed, the render of its edited overlay is compared with
// the render of the stage as its config's last promotion left it (what
// the stage was released at; the overlay as it is when there is none). A
// removed object of a protected kind (spec.protectedKinds) needs a
// person's approval: an unapproved promotion is turned back into one that
// waits for approval (OutcomeNeedsApproval), and an approved one lists the
// objects in its commit body.

// protectedRemovalError stops an unapproved promotion that removes
// protected objects; nothing is pushed.
type protectedRemovalError struct {
	removed []v1alpha1.InventoryEntry
}

func (e *protectedRemovalError) Error() string {
	return "the promotion removes protected objects: " + joinEntries(e.removed)
}

// guardRemovals makes change's check renders (the render check) and then
// the prune-safety rule, on one reading of the edited tree (a batch of
// promotion commits into a wide directory reads it once per commit, not
// twice), and adds the removals to its message; released is the stage's
// render as its last promotion left it.
func (c *Controller) guardRemovals(ctx context.Context, p *v1alpha1.VectorPromotion, cfg *v1alpha1.VectorPromotionConfig,
	ref source.StageRef, target gitwriter.Target, active []v1alpha1.InventoryEntry, renders func(repofs.Tree) error, change *gitwriter.Change) error {
	if cfg == nil {
		return nil
	}
	released := active
	if released == nil {
		var err error
		if released, err = c.releasedInventory(ctx, p, ref, target); err != nil {
			return err
		}
	}
	kinds := reconcilers.ProtectedKinds(cfg)
	var removed []v1alpha1.InventoryEntry
	message := change.Message
	change.Check = func(tree *object.Tree) error {
		files := repofs.GitTree(tree)
		if err := renders(files); err != nil {
			return err
		}
		edited, err := c.inventory(files, ref.Overlay)
		if err != nil {
			return &overlayBuildError{overlay: ref.Overlay, err: err}
		}
		removed = reconcilers.RemovedProtected(released, edited, kinds)
		if len(removed) > 0 && !approvedByPeople(p) {
			return &protectedRemovalError{removed: removed}
		}
		return nil
	}
	change.Message = func(diffs []gitwriter.FileDiff) string {
		return withRemovals(message(diffs), removed)
	}
	return nil
}

// activeInventory is the inventory of the StageVersion the target stage
// runs (its active vector, deployed and healthy), nil when the state has
// none with an inventory: what a promotion may take away from the cluster.
func activeInventory(state *reconcilers.State, t v1alpha1.StageReference) []v1alpha1.InventoryEntry {
	st := state.Stages[reconcilers.StageKey(t.Landscape, t.Name)]
	if st == nil || st.Status.ActiveVector == "" {
		return nil
	}
	for _, sv := range state.StageVersions {
		if sv.Spec.Landscape == t.Landscape && sv.Spec.Stage == t.Name && sv.Spec.Vector == st.Status.ActiveVector && len(sv.Spec.Inventory) > 0 {
			return sv.Spec.Inventory
		}
	}
	return nil
}

// approvedByPeople: the promotion required approval and has it.
func approvedByPeople(p *v1alpha1.VectorPromotion) bool {
	return p.Spec.RequireApproval && p.Status.Approval != nil
}

// releasedInventory is the stage's render at the newest commit of a
// promotion of p's config into it, or at the overlay as the snapshot read
// it when there is none.
func (c *Controller) releasedInventory(ctx context.Context, p *v1alpha1.VectorPromotion, ref source.StageRef, target gitwriter.Target) ([]v1alpha1.InventoryEntry, error) {
	tip := plumbing.ZeroHash
	if plumbing.IsHash(ref.Commit) {
		tip = plumbing.NewHash(ref.Commit)
	}
	h, err := c.opts.Writer.History(ctx, target, tip)
	if err != nil {
		return nil, err
	}
	// An overlay that does not build has no inventory to lose: the render
	// check refuses a promotion whose own edit does not build.
	asItIs := func() ([]v1alpha1.InventoryEntry, error) {
		inv, err := c.inventory(ref.Tree, ref.Overlay)
		if err != nil {
			return nil, nil
		}
		return inv, nil
	}
	e, ok := h.Newest(p.Spec.VectorPromotionConfigName, p.Spec.Target.Ref())
	if !ok {
		return asItIs()
	}
	tree, err := c.opts.Writer.TreeAt(ctx, target, e.Commit)
	if err != nil {
		return nil, fmt.Errorf("read stage %s/%s as promotion %s left it: %w", ref.Landscape, ref.Name, e.Promotion, err)
	}
	inv, err := c.inventory(repofs.GitTree(tree), ref.Overlay)
	if err != nil {
		// The overlay as released no longer builds here (its bases
		// moved): judge against the overlay as it is.
		return asItIs()
	}
	return inv, nil
}

// inventory is the objects overlay renders to in tree.
func (c *Controller) inventory(tree repofs.Tree, overlay string) ([]v1alpha1.InventoryEntry, error) {
	out, err := c.overlayRenderer().Build(tree, overlay)
	if err != nil {
		return nil, err
	}
	return overlays.Inventory(out)
}

// withRemovals puts the removed objects into a promotion commit's body,
// before its trailers (which must stay the last paragraph).
func withRemovals(msg string, removed []v1alpha1.InventoryEntry) string {
	if len(removed) == 0 {
		return msg
	}
	var b strings.Builder
	b.WriteString("Removes protected objects (approved):\n")
	for _, e := range removed {
		b.WriteString("- " + e.String() + "\n")
	}
	i := strings.LastIndex(strings.TrimRight(msg, "\n"), "\n\n")
	if i < 0 {
		return msg + "\n" + b.String()
	}
	return msg[:i] + "\n\n" + strings.TrimRight(b.String(), "\n") + msg[i:]
}

func joinEntries(entries []v1alpha1.InventoryEntry) string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.String()
	}
	return strings.Join(names, ", ")
}
