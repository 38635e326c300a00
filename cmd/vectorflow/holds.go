package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// hold and release add a signed record under holds/; the controller counts
// it when the key is an approver of a config that targets the stage (or
// the controller's own).
func newHoldCommand() *cobra.Command    { return holdCommand(reconcilers.HoldKind) }
func newReleaseCommand() *cobra.Command { return holdCommand(reconcilers.ReleaseKind) }

func holdCommand(kind string) *cobra.Command {
	var (
		rf            repoFlags
		sf            signingFlags
		stage, reason string
	)
	verb := strings.ToLower(kind)
	short := "Hold a stage: automatic promotions into it wait until it is released"
	if kind == reconcilers.ReleaseKind {
		short = "Release a held stage: automatic promotions into it run again"
	}
	cmd := &cobra.Command{
		Use:   verb + " --stage LANDSCAPE/STAGE --repo URL --signing-key FILE [--reason TEXT]",
		Short: short,
		Long: short + `.

The record, holds/<landscape>/<stage>/<id>.yaml, is added to the state branch
in a commit signed with your key; it counts when that key is one of the
spec.approval.approvers of a config whose target is the stage. The newest
counting record (Hold or Release) is the stage's state. Candidates are still
made while a stage is held, and wait with reason StageHeld; promotions a
person requests (vectorflow promote, rollback) still run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sw, err := openSignedStateWrite(cmd.Context(), &rf, &sf)
			if err != nil {
				return err
			}
			key, approver, err := stageApprover(sw.snap, stage, sw.signer, sf.identity)
			if err != nil {
				return fmt.Errorf("%s: %w", verb, err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			id, err := requestID(now)
			if err != nil {
				return err
			}
			content, err := yaml.Marshal(reconcilers.HoldRecord{APIVersion: v1alpha1.GroupVersion.String(), Kind: kind,
				Stage: key, Reason: reason, By: sf.identity, At: metav1.NewTime(now)})
			if err != nil {
				return err
			}
			file := reconcilers.HoldPath(key, id)
			commit, err := sw.addFile(cmd.Context(), &rf, file, content, fmt.Sprintf("%s stage %s\n\n%s\n", verb, key, orDash(reason)))
			if err != nil {
				return fmt.Errorf("%s %s: %w", verb, key, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s stage %s as %s in signed commit %s (%s)\n", kindPast(kind), key, approver, commit, file)
			return nil
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	sf.register(cmd.Flags(), defaultApprover(), "author of the "+verb+" commit, \"Name <email>\"")
	cmd.Flags().StringVar(&stage, "stage", "", "the stage, `landscape/name`")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the people who see the stage held")
	return cmd
}

func kindPast(kind string) string {
	if kind == reconcilers.HoldKind {
		return "held"
	}
	return "released"
}

// stageApprover finds the stage and the approver the signer is of a config
// that targets it; a stage whose configs have no approvers takes records
// from the controller's key only, which this command cannot know.
func stageApprover(snap *source.Snapshot, stage string, signer gitwriter.Signer, identity string) (key, approver string, err error) {
	landscape, name, ok := strings.Cut(stage, "/")
	if !ok || landscape == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("--stage %q: name the stage as landscape/name (vectorflow get stages lists them)", stage)
	}
	key = reconcilers.StageKey(landscape, name)
	if _, ok := snap.StageIndex[source.StageKey(landscape, name)]; !ok {
		return "", "", fmt.Errorf("--stage %s: no such stage in %s (vectorflow get stages lists them)", key, snap.URL)
	}
	var refusals []string
	for _, cfgName := range keys.Sorted(snap.Configs) {
		cfg := snap.Configs[cfgName]
		if t := cfg.Spec.Target; reconcilers.StageKey(t.Landscape, t.Name) != key {
			continue
		}
		if cfg.Spec.Approval == nil || len(cfg.Spec.Approval.Approvers) == 0 {
			continue
		}
		who, err := controller.ApproverOf(cfg, signer)
		if err == nil {
			return key, who, nil
		}
		refusals = append(refusals, err.Error())
	}
	if len(refusals) == 0 {
		return key, identity, nil // only the controller's key counts; it judges
	}
	return "", "", fmt.Errorf("stage %s: %s", key, strings.Join(refusals, "; "))
}

func newRollbackCommand() *cobra.Command {
	var (
		rf                repoFlags
		sf                signingFlags
		stage, to, reason string
		previous, force   bool
	)
	cmd := &cobra.Command{
		Use:   "rollback --stage LANDSCAPE/STAGE (--to VECTOR | --previous) --repo URL --signing-key FILE [--reason TEXT]",
		Short: "Roll a stage back to a vector it ran before, and hold it there",
		Long: `rollback asks the controller for a promotion of an older vector into the stage:
one the stage keeps a StageVersion of (vectorflow get stageversions --stage),
or one a promotion of the stage's config wrote there (--to names it,
--previous takes the newest other than the current). Like promote, it adds a signed
request to the state branch; where the config requires approval, your
signature is the rollback's approval (you must be one of its approvers). The
rollback runs like every promotion (its commit says Vectorflow-Rollback: true),
respects stepping stones (going down across one needs --force), and holds the
stage, so automatic promotions do not roll it forward again; vectorflow release
lifts the hold.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (to == "") == !previous {
				return fmt.Errorf("rollback: give exactly one of --to VECTOR and --previous")
			}
			sw, err := openSignedStateWrite(cmd.Context(), &rf, &sf)
			if err != nil {
				return err
			}
			signer, view, snap := sw.signer, sw.view, sw.snap
			key, approver, err := stageApprover(snap, stage, signer, sf.identity)
			if err != nil {
				return fmt.Errorf("rollback: %w", err)
			}
			configs := controllerConfigsTargeting(snap, key)
			if len(configs) != 1 {
				return fmt.Errorf("rollback %s: %d VectorPromotionConfigs target the stage; a rollback needs exactly one", key, len(configs))
			}
			cfg := configs[0]
			st := view.state.Configs[cfg.Name]
			var history []v1alpha1.PromotionRecord
			if st != nil {
				history = st.Status.PromotionHistory
			}
			var current string
			if s := view.state.Stages[key]; s != nil {
				current = s.Status.Vector
			}
			vector, err := rollbackVector(history, keptVectors(view.state, cfg.Spec.Target.Landscape, cfg.Spec.Target.Name), current, to, previous)
			if err != nil {
				return fmt.Errorf("rollback %s (VectorPromotionConfig %s): %w", key, cfg.Name, err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			id, err := requestID(now)
			if err != nil {
				return err
			}
			content, err := yaml.Marshal(reconcilers.PromotionRequest{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.PromotionRequestKind,
				Config: cfg.Name, PromoteVector: vector, Force: force, Rollback: true, Reason: reason,
				RequestedBy: sf.identity, RequestedAt: metav1.NewTime(now),
			})
			if err != nil {
				return err
			}
			file := reconcilers.RequestPath(cfg.Name, id)
			commit, err := sw.addFile(cmd.Context(), &rf, file, content, fmt.Sprintf("request a rollback of %s to %s\n\n%s\n\nRequested-by: %s\n", key, vector, orDash(reason), sf.identity))
			if err != nil {
				return fmt.Errorf("rollback %s: %w", key, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "requested a rollback of %s to %s as %s in signed commit %s (%s); the controller promotes it and holds the stage on its next pass\n",
				key, vector, approver, commit, file)
			return nil
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	sf.register(cmd.Flags(), defaultApprover(), "author of the request commit, \"Name <email>\"")
	cmd.Flags().StringVar(&stage, "stage", "", "the stage, `landscape/name`")
	cmd.Flags().StringVar(&to, "to", "", "the vector to roll back to (`template:version`), one the stage ran before (kept as a StageVersion)")
	cmd.Flags().BoolVar(&previous, "previous", false, "roll back to the vector the stage ran before the current one")
	cmd.Flags().BoolVar(&force, "force", false, "allow going down across a stepping stone (recorded as Vectorflow-Forced: true)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the stage's hold")
	return cmd
}

// rollbackVector is the vector to roll back to: to, when a promotion of
// the config wrote it or the stage keeps a StageVersion of it; with
// previous, the newest vector written before current, else the newest
// kept StageVersion's (kept is newest first) that is not current: the
// vector the overlay named before vectorflow's first promotion counts.
func rollbackVector(history []v1alpha1.PromotionRecord, kept []string, current, to string, previous bool) (string, error) {
	for _, r := range history { // newest first
		if r.State != v1alpha1.PromotionSucceeded {
			continue
		}
		if previous && r.Vector != current {
			return r.Vector, nil
		}
		if !previous && r.Vector == to {
			if to == current {
				return "", fmt.Errorf("the stage runs %s already", to)
			}
			return to, nil
		}
	}
	for _, v := range kept {
		if previous && v != current {
			return v, nil
		}
		if !previous && v == to {
			if to == current {
				return "", fmt.Errorf("the stage runs %s already", to)
			}
			return to, nil
		}
	}
	if previous {
		return "", fmt.Errorf("no promotion of it wrote a vector before %s, and the stage keeps no StageVersion of another (vectorflow get stageversions)", reconcilers.VectorOrNone(current))
	}
	return "", fmt.Errorf("no promotion of it wrote %s into the stage and the stage keeps no StageVersion of it; name one vectorflow get stageversions --stage lists", to)
}

// keptVectors are the vectors stage keeps StageVersions of, newest first.
func keptVectors(state *reconcilers.State, landscape, stage string) []string {
	var versions []*v1alpha1.StageVersion
	for _, sv := range state.StageVersions {
		if sv.Spec.Landscape == landscape && sv.Spec.Stage == stage {
			versions = append(versions, sv)
		}
	}
	slices.SortFunc(versions, func(a, b *v1alpha1.StageVersion) int {
		return cmp.Or(b.CreationTimestamp.Time.Compare(a.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	out := make([]string, len(versions))
	for i, sv := range versions {
		out[i] = sv.Spec.Vector
	}
	return out
}

func controllerConfigsTargeting(snap *source.Snapshot, stage string) []*v1alpha1.VectorPromotionConfig {
	var out []*v1alpha1.VectorPromotionConfig
	for _, name := range keys.Sorted(snap.Configs) {
		if t := snap.Configs[name].Spec.Target; reconcilers.StageKey(t.Landscape, t.Name) == stage {
			out = append(out, snap.Configs[name])
		}
	}
	return out
}

// heldColumn is `get stages`' HELD: the controller's record of the
// stage's hold (its Held condition), "HELD (reason)" or "-".
func heldColumn(st v1alpha1.Stage) string {
	c := meta.FindStatusCondition(st.Status.Conditions, pass.HeldCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return "-"
	}
	return "HELD (" + c.Reason + ")"
}
