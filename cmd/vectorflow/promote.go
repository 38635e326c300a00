package main

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

func newPromoteCommand() *cobra.Command {
	var (
		rf     repoFlags
		sf     signingFlags
		config string
		vector string
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "promote --config NAME --repo URL --signing-key FILE",
		Short: "Request a fresh promotion of a config's current source vector",
		Long: `promote asks the controller for a new promotion of the vector the config's
source offers now, with the next sequence, even if an earlier promotion of that
vector failed. Only the controller writes promotions: promote adds a request,
requests/<config>/<id>.yaml, to the state branch in a commit signed with your
key, and the controller's next pass creates the promotion if that key is one of
the config's spec.approval.approvers (and deletes the request either way). The
promotion then waits for approval (when the config requires it) and runs like
any other.

--vector promotes that vector (one vectorflow get vectors lists) instead of the
source's current one: a stepping stone, say. --force lets the promotion take a
component down across a stepping stone; its commit then says
Vectorflow-Forced: true, and vectorflow audit shows it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				return fmt.Errorf("--config is required: the VectorPromotionConfig to promote")
			}
			sw, err := openSignedStateWrite(cmd.Context(), &rf, &sf)
			if err != nil {
				return err
			}
			signer, view, snap := sw.signer, sw.view, sw.snap
			cfg := snap.Configs[config]
			if cfg == nil {
				return fmt.Errorf("promote: no VectorPromotionConfig %s in %s (list them with vectorflow get configs)", config, rf.repo)
			}
			// A config without approvers (an automatic one) takes requests
			// from the controller's key only, which this command cannot
			// know: the controller judges those.
			approver := sf.identity
			if a := cfg.Spec.Approval; a != nil && len(a.Approvers) > 0 {
				if approver, err = controller.ApproverOf(cfg, signer); err != nil {
					return fmt.Errorf("promote %s: %w", config, err)
				}
			}
			// The vector the requester sees is the one the controller must
			// promote: a request for a source that moved on is dropped.
			var seen string
			if st := view.state.Configs[config]; st != nil {
				seen = st.Status.SourceVector
			}
			if vector != "" && view.state.Vectors[vector] == nil {
				return fmt.Errorf("promote %s: --vector %s is not a vector on the state branch %s; vectorflow get vectors lists them", config, vector, rf.stateBranch)
			}
			// The vector the new promotion will hold: --vector, else the
			// source's.
			wanted := cmp.Or(vector, seen)
			for _, w := range waitingWithVector(view.state, config, wanted) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s already waits for approval with the same vector %s: approving it (vectorflow approve %s) promotes that vector; a new promotion would supersede it and wait again\n", w, wanted, w)
			}
			now := time.Now().UTC().Truncate(time.Second)
			id, err := requestID(now)
			if err != nil {
				return err
			}
			content, err := yaml.Marshal(reconcilers.PromotionRequest{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.PromotionRequestKind,
				Config: config, Vector: seen, PromoteVector: vector, Force: force,
				RequestedBy: sf.identity, RequestedAt: metav1.NewTime(now),
			})
			if err != nil {
				return err
			}
			file := reconcilers.RequestPath(config, id)
			commit, err := sw.addFile(cmd.Context(), &rf, file, content, fmt.Sprintf("request a promotion of %s\n\nRequested-by: %s\n", config, sf.identity))
			if err != nil {
				return fmt.Errorf("promote %s: %w", config, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "requested a promotion of %s (%s) as approver %s in signed commit %s (%s); the controller creates it on its next pass\n",
				config, orDash(cmp.Or(vector, seen)), approver, commit, file)
			return nil
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	sf.register(cmd.Flags(), defaultApprover(), "author of the request commit, \"Name <email>\"")
	cmd.Flags().StringVar(&config, "config", "", "the VectorPromotionConfig to promote")
	cmd.Flags().StringVar(&vector, "vector", "", "promote this existing vector (`template:version`) instead of the source's current one")
	cmd.Flags().BoolVar(&force, "force", false, "allow the promotion to take a component down across a stepping stone (recorded as Vectorflow-Forced: true)")
	return cmd
}

// requestID names a request file uniquely: its time, for people listing
// requests/, and random bytes, so two requests never collide.
func requestID(now time.Time) (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("name the request: %w", err)
	}
	return now.Format("20060102T150405Z") + "-" + hex.EncodeToString(b), nil
}

// waitingWithVector names the promotions of config that wait for approval
// with vector, oldest first: a request for the same vector repeats them.
func waitingWithVector(state *reconcilers.State, config, vector string) []string {
	var out []string
	for _, name := range keys.Sorted(state.Promotions) {
		p := state.Promotions[name]
		if vector != "" && p.Spec.VectorPromotionConfigName == config && p.Spec.Vector == vector &&
			reconcilers.DeriveState(p) == v1alpha1.PromotionWaiting {
			out = append(out, name)
		}
	}
	return out
}
