package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

func newGetCommand() *cobra.Command {
	var (
		rf         repoFlags
		output     string
		trusted    []string
		unverified bool
	)
	cmd := &cobra.Command{
		Use:   "get promotions|vectors|configs|stages --repo URL",
		Short: "List vectorflow's objects from the state branch",
		Long: `get reads the state branch and checks its whole history the way the
controller does, against the keys it knows: each Landscape's spec.signers and
the --trust keys. When a commit that no trusted key signed changed more than
approvals and promotion requests, get refuses and names it; with --unverified
it shows the state anyway, with VERIFIED=no on every object changed since the
last trusted commit.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"promotions", "vectors", "configs", "stages"},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			switch kind {
			case "promotions", "promotion", "vectorpromotions", "vectors", "vector",
				"configs", "config", "vectorpromotionconfigs", "stages", "stage":
			default:
				return fmt.Errorf("unknown kind %q: use promotions, vectors, configs or stages", kind)
			}
			auth, err := rf.resolve()
			if err != nil {
				return err
			}
			keys, err := readTrustedKeys(trusted)
			if err != nil {
				return err
			}
			snap, err := rf.loadSnapshot(cmd.Context(), auth)
			if err != nil {
				return err
			}
			repo, err := rf.openRepository(auth)
			if err != nil {
				return err
			}
			view, err := readVerifiedState(cmd, repo, rf.stateBranch, snap, keys)
			if err != nil {
				return err
			}
			if !view.Verdict.Trusted && !unverified {
				return fmt.Errorf("%w: %s (show it anyway, marked, with --unverified)", controller.ErrUntrustedState, view.Refusal)
			}
			state := view.State
			var list any
			var t *table
			var paths []string
			switch kind {
			case "promotions", "promotion", "vectorpromotions":
				var ps []v1alpha1.VectorPromotion
				ps, t = promotionsTable(state)
				for _, p := range ps {
					paths = append(paths, reconcilers.PromotionPath(p.Spec.VectorPromotionConfigName, p.Name))
				}
				list = ps
			case "vectors", "vector":
				var vs []v1alpha1.Vector
				vs, t = vectorsTable(state)
				for _, v := range vs {
					paths = append(paths, reconcilers.VectorPath(v.Spec.Template, v.Spec.Version))
				}
				list = vs
			case "configs", "config", "vectorpromotionconfigs":
				var cs []v1alpha1.VectorPromotionConfig
				cs, t = configsTable(snap, state, time.Now())
				for _, c := range cs {
					paths = append(paths, controller.ConfigStatusPath(c.Name))
				}
				list = cs
			case "stages", "stage":
				var ss []v1alpha1.Stage
				ss, t = stagesTable(state)
				for _, s := range ss {
					paths = append(paths, controller.StagePath(s.Spec.Landscape, s.Name))
				}
				list = ss
			}
			if done, err := printStructured(cmd.OutOrStdout(), output, list); done {
				return err
			}
			if !view.Verdict.Trusted {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", view.Refusal)
				markVerified(t, paths, view.Unverified)
			}
			return t.print(cmd.OutOrStdout())
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().StringArrayVar(&trusted, "trust", nil, "file holding the public key of a trusted state signer: the controller's, or another controller's of the same state branch (repeatable)")
	cmd.Flags().BoolVar(&unverified, "unverified", false, "show a state branch that does not verify, with VERIFIED=no on what changed since its last trusted commit")
	return cmd
}

// readVerifiedState reads the state branch and checks it against the --trust
// keys, the controllers' keys, exactly as the controller checks it. A
// Landscape's spec.signers are not state signers: they may sign overlay
// commits, and a person among them may not edit state. With no key it warns
// and shows the state unchecked.
func readVerifiedState(cmd *cobra.Command, repo *source.Repository, branch string, snap *source.Snapshot, keys []gitwriter.TrustedKey) (controller.VerifiedState, error) {
	if len(keys) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the state branch %s is shown unverified: give the controller's public key with --trust KEYFILE\n", branch)
		_, files, state, err := controller.ReadState(cmd.Context(), repo, branch)
		return controller.VerifiedState{Files: files, State: state, Verdict: trust.CommitVerdict{Trusted: true}}, err
	}
	trust, err := controller.NewStateTrust(keys)
	if err != nil {
		return controller.VerifiedState{}, err
	}
	return controller.ReadVerifiedState(cmd.Context(), repo, branch, trust, snap.Configs)
}

// markVerified adds a VERIFIED column: no for the rows whose file changed
// since the last trusted commit.
func markVerified(t *table, paths []string, unverified map[string]bool) {
	t.header = append(t.header, "VERIFIED")
	for i := range t.rows {
		mark := "yes"
		if i >= len(paths) || unverified[paths[i]] {
			mark = "no"
		}
		t.rows[i] = append(t.rows[i], mark)
	}
}

func sortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func promotionsTable(s *reconcilers.State) ([]v1alpha1.VectorPromotion, *table) {
	list := make([]v1alpha1.VectorPromotion, 0, len(s.Promotions))
	for _, p := range s.Promotions {
		list = append(list, *p)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Spec, list[j].Spec
		if a.VectorPromotionConfigName != b.VectorPromotionConfigName {
			return a.VectorPromotionConfigName < b.VectorPromotionConfigName
		}
		return a.Sequence > b.Sequence
	})
	t := &table{header: []string{"NAME", "CONFIG", "SEQ", "VECTOR", "TARGET", "STATE", "APPROVED BY", "REASON"}}
	for _, p := range list {
		approvedBy := "-"
		if p.Status.Approval != nil {
			approvedBy = p.Status.Approval.ApprovedBy
		}
		if len(p.Status.Approvals) > 1 || (len(p.Status.Approvals) == 1 && p.Status.Approval == nil) {
			// Every counted approver, also while more are needed.
			names := make([]string, 0, len(p.Status.Approvals))
			for _, a := range p.Status.Approvals {
				names = append(names, a.ApprovedBy)
			}
			approvedBy = strings.Join(names, ",")
		}
		t.add(p.Name, p.Spec.VectorPromotionConfigName, strconv.FormatInt(p.Spec.Sequence, 10), p.Spec.Vector,
			p.Spec.Target.Landscape+"/"+p.Spec.Target.Name, string(reconcilers.DeriveState(&p)), approvedBy, lastReason(p.Status.Conditions))
	}
	return list, t
}

func vectorsTable(s *reconcilers.State) ([]v1alpha1.Vector, *table) {
	list := make([]v1alpha1.Vector, 0, len(s.Vectors))
	for _, v := range s.Vectors {
		list = append(list, *v)
	}
	// Newest first, by the time the version names (2026.11.29 after 2026.11.3).
	sort.Slice(list, func(i, j int) bool {
		ti, errI := reconcilers.ParseVectorVersion(list[i].Spec.Version)
		tj, errJ := reconcilers.ParseVectorVersion(list[j].Spec.Version)
		if errI != nil || errJ != nil || ti.Equal(tj) {
			return list[i].Ref() > list[j].Ref()
		}
		return ti.After(tj)
	})
	t := &table{header: []string{"VECTOR", "COMPONENTS", "DIGEST"}}
	for _, v := range list {
		comps := ""
		for i, c := range v.Spec.Components {
			if i > 0 {
				comps += ", "
			}
			comps += c.Name + ":" + orDash(c.Tag)
		}
		t.add(v.Ref(), comps, orDash(v1alpha1.ShortDigest(v.Spec.Digest)))
	}
	return list, t
}

func configsTable(snap *source.Snapshot, s *reconcilers.State, now time.Time) ([]v1alpha1.VectorPromotionConfig, *table) {
	list := make([]v1alpha1.VectorPromotionConfig, 0, len(snap.Configs))
	for _, c := range snap.Configs {
		cfg := *c.DeepCopy()
		if st := s.Configs[c.Name]; st != nil {
			cfg.Status = *st.Status.DeepCopy()
		}
		list = append(list, cfg)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	t := &table{header: []string{"NAME", "SOURCE", "TARGET", "SEQ", "SOURCE VECTOR", "READY", "MESSAGE"}}
	for _, c := range list {
		src := c.Spec.Source.Kind + "/" + c.Spec.Source.Name
		if c.Spec.Source.Landscape != "" {
			src = c.Spec.Source.Kind + "/" + c.Spec.Source.Landscape + "/" + c.Spec.Source.Name
		}
		ready, msg := "Unknown", ""
		if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ReadyCondition); r != nil {
			ready, msg = string(r.Status), r.Message
		}
		if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.UpdateDelayedCondition); d != nil {
			msg = d.Message
			if c.Status.SourceVectorSince != nil && c.Spec.UpdateDelay != nil {
				left := c.Status.SourceVectorSince.Add(c.Spec.UpdateDelay.Duration).Sub(now).Round(time.Second)
				msg += fmt.Sprintf("; %s left", max(left, 0))
			}
		}
		// A drift the config leaves alone needs a person: say why.
		if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.DriftCondition); d != nil && ready == string(metav1.ConditionTrue) &&
			(d.Reason == v1alpha1.FailedNotRetriedReason || d.Reason == v1alpha1.TargetChangedByHandReason) {
			msg = d.Message
		}
		t.add(c.Name, src, c.Spec.Target.Landscape+"/"+c.Spec.Target.Name, strconv.FormatInt(c.Status.Sequence, 10),
			orDash(c.Status.SourceVector), ready, msg)
	}
	return list, t
}

func stagesTable(s *reconcilers.State) ([]v1alpha1.Stage, *table) {
	list := make([]v1alpha1.Stage, 0, len(s.Stages))
	for _, st := range s.Stages {
		list = append(list, *st)
	}
	sort.Slice(list, func(i, j int) bool {
		return reconcilers.StageKey(list[i].Spec.Landscape, list[i].Name) < reconcilers.StageKey(list[j].Spec.Landscape, list[j].Name)
	})
	t := &table{header: []string{"STAGE", "PATH", "VECTOR", "SINCE", "HELD"}}
	for _, st := range list {
		since := "-"
		if st.Status.VectorSince != nil {
			since = st.Status.VectorSince.UTC().Format(time.RFC3339)
		}
		t.add(reconcilers.StageKey(st.Spec.Landscape, st.Name), orDash(st.Spec.Path), orDash(st.Status.Vector), since, heldColumn(st))
	}
	return list, t
}

func lastReason(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, v1alpha1.SucceededCondition); c != nil {
		return c.Reason
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ApprovedCondition); c != nil {
		return c.Reason
	}
	return "-"
}
