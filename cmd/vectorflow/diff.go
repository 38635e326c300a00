package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/spf13/cobra"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

func newDiffCommand() *cobra.Command {
	var (
		rf         repoFlags
		trusted    []string
		unverified bool
		from, to   string
	)
	cmd := &cobra.Command{
		Use:   "diff PROMOTION | diff --from STAGE --to STAGE --repo URL",
		Short: "Show what a promotion changes: its components and rendered objects",
		Long: `diff shows the change a promotion makes to its target's overlay, the same
text its pull request's body shows: the components whose version changes (old
and new, with digests) and the objects of the rendered overlay (kustomize
build) it adds, changes and removes.

diff PROMOTION compares the target's overlay before and after the promotion:
for a promotion that ran, as its commit changed it; otherwise as the overlay is
now. diff --from STAGE --to STAGE shows what promoting the vector that --from's
overlay names into --to would change now. A stage is NAME, or LANDSCAPE/NAME
when several landscapes have a stage of that name.`,
		Example: `  vectorflow diff dev-to-test-3 --repo $REPO --trust controller.pub
  vectorflow diff --from dev --to test --repo $REPO`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFirst(completeNames(&rf, "promotions")),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (from != "" || to != "") {
				return fmt.Errorf("give a PROMOTION, or --from STAGE and --to STAGE")
			}
			if len(args) == 0 && (from == "" || to == "") {
				return fmt.Errorf("--from and --to go together: the stage whose vector to promote, and the stage to promote it into")
			}
			r, err := newStateReader(cmd, &rf, trusted, unverified)
			if err != nil {
				return err
			}
			view, err := r.read(cmd.Context())
			if err != nil {
				return err
			}
			var d pass.PullRequestDescription
			var header string
			if len(args) == 1 {
				d, header, err = promotionDiff(cmd.Context(), view, args[0], r)
			} else {
				d, header, err = stageDiff(view, from, to)
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(printableWriter{cmd.OutOrStdout()}, "%s\n\n%s", header, d.Diff())
			return err
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	cmd.Flags().StringArrayVar(&trusted, "trust", nil, "file holding the public key of a trusted state signer: the controller's, or another controller's of the same state branch (repeatable)")
	cmd.Flags().BoolVar(&unverified, "unverified", false, "use a state branch that does not verify")
	cmd.Flags().StringVar(&from, "from", "", "the stage whose vector to promote, NAME or LANDSCAPE/NAME")
	cmd.Flags().StringVar(&to, "to", "", "the stage to promote it into, NAME or LANDSCAPE/NAME")
	_ = cmd.RegisterFlagCompletionFunc("from", completeNames(&rf, "stages"))
	_ = cmd.RegisterFlagCompletionFunc("to", completeNames(&rf, "stages"))
	return cmd
}

// promotionDiff describes what promotion name changes in its target: as
// its commit changed the overlay when it ran and the commit is in the
// config repository, else against the overlay as it is now.
func promotionDiff(ctx context.Context, view stateRead, name string, r *stateReader) (pass.PullRequestDescription, string, error) {
	p := view.state.Promotions[name]
	if p == nil {
		return pass.PullRequestDescription{}, "", r.notFound(view, fmt.Errorf("vectorpromotion %q not found", name))
	}
	vector := view.state.Vectors[p.Spec.Vector]
	if vector == nil {
		return pass.PullRequestDescription{}, "", fmt.Errorf("promotion %s: its vector %s is not on the state branch", name, p.Spec.Vector)
	}
	t := p.Spec.Target
	ref, ok := view.snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
	if !ok {
		return pass.PullRequestDescription{}, "", fmt.Errorf("promotion %s: its target, %s, does not resolve in %s (see vectorflow validate)", name, t.Describe(), view.snap.URL)
	}
	state := reconcilers.DeriveState(p)
	against := "against the overlay as it is now"
	if p.Status.Commit != "" {
		if before, ok := treeBefore(ctx, r, p.Status.Commit, ref); ok {
			ref = before
			against = "as its commit " + v1alpha1.ShortCommit(p.Status.Commit) + " changed the overlay"
		}
	}
	d, err := describeChange(ref, name, p.Spec.Source.Ref(), t.Ref(), vector)
	header := fmt.Sprintf("Promotion %s (%s): vector %s from %s to %s, %s.", name, state, p.Spec.Vector, p.Spec.Source.Describe(), t.Describe(), against)
	return d, header, err
}

// treeBefore is ref as the parent of commit held it, when commit is on
// the branch of the landscape's repository.
func treeBefore(ctx context.Context, r *stateReader, commit string, ref source.StageRef) (source.StageRef, bool) {
	if !plumbing.IsHash(commit) || ref.Branch == "" {
		return ref, false
	}
	repo, err := source.OpenCached(ref.URL, r.auth(ref.URL), r.rf.cacheDirectory())
	if err != nil {
		return ref, false
	}
	if _, err := repo.Fetch(ctx, ref.Branch); err != nil {
		return ref, false
	}
	c, err := object.GetCommit(repo.Storer(), plumbing.NewHash(commit))
	if err != nil || c.NumParents() == 0 {
		return ref, false
	}
	parent, err := c.Parent(0)
	if err != nil {
		return ref, false
	}
	tree, err := parent.Tree()
	if err != nil {
		return ref, false
	}
	ref.Tree = repofs.GitTree(tree)
	if ref.Vector, err = overlays.ReadStageVector(ref.Tree, ref.Overlay); err != nil {
		return ref, false
	}
	return ref, true
}

// stageDiff describes promoting the vector the overlay of from names into
// the overlay of to.
func stageDiff(view stateRead, from, to string) (pass.PullRequestDescription, string, error) {
	src, err := resolveStage(view.snap, "--from", from)
	if err != nil {
		return pass.PullRequestDescription{}, "", err
	}
	dst, err := resolveStage(view.snap, "--to", to)
	if err != nil {
		return pass.PullRequestDescription{}, "", err
	}
	ref := src.Vector.Vector
	if ref == "" {
		return pass.PullRequestDescription{}, "", fmt.Errorf("--from %s: the overlay %s names no vector (no %s annotation)", from, src.Overlay, v1alpha1.VectorAnnotation)
	}
	vector := view.state.Vectors[ref]
	if vector == nil {
		return pass.PullRequestDescription{}, "", fmt.Errorf("--from %s: its vector %s is not on the state branch (run vectorflow run --once to record it)", from, ref)
	}
	srcRef := v1alpha1.StageReference{Kind: v1alpha1.StageKind, Landscape: src.Landscape, Name: src.Name}
	dstRef := v1alpha1.StageReference{Kind: v1alpha1.StageKind, Landscape: dst.Landscape, Name: dst.Name}
	d, err := describeChange(dst, "", srcRef.Ref(), dstRef.Ref(), vector)
	header := fmt.Sprintf("Vector %s of %s into %s, against the overlay as it is now.", ref, srcRef.Describe(), dstRef.Describe())
	return d, header, err
}

// resolveStage finds the stage NAME or LANDSCAPE/NAME names.
func resolveStage(snap *source.Snapshot, flag, given string) (source.StageRef, error) {
	var keys []string
	for key := range snap.StageIndex {
		if stageMatches(given, key) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	switch len(keys) {
	case 1:
		return snap.StageIndex[keys[0]], nil
	case 0:
		return source.StageRef{}, fmt.Errorf("%s %s: no stage of that name resolves in %s (list them with vectorflow get stages)", flag, given, snap.URL)
	}
	return source.StageRef{}, fmt.Errorf("%s %s is ambiguous: name one of %s", flag, given, strings.Join(keys, ", "))
}

func describeChange(ref source.StageRef, promotion, sourceRef, targetRef string, vector *v1alpha1.Vector) (pass.PullRequestDescription, error) {
	return controller.DescribePromotion(render.NewRenderer(render.Options{}), ref, promotion, sourceRef, targetRef, vector)
}

// completeFirst completes the first argument only.
func completeFirst(f cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f(cmd, args, toComplete)
	}
}
