package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/source"
)

func newPromoteCommand() *cobra.Command {
	var (
		rf     repoFlags
		sf     signingFlags
		config string
	)
	cmd := &cobra.Command{
		Use:   "promote --config NAME --repo URL --signing-key FILE",
		Short: "Create a fresh promotion of a config's current source vector",
		Long: `promote snapshots the vector the config's source offers now into a new
promotion with the next sequence, even if an earlier promotion of that vector
failed. It then waits for approval (when the config requires it) and runs on
the controller's next pass like any other.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				return fmt.Errorf("--config is required: the VectorPromotionConfig to promote")
			}
			auth, err := rf.resolve()
			if err != nil {
				return err
			}
			w, _, err := sf.writer()
			if err != nil {
				return err
			}
			repo, err := rf.openRepository(auth)
			if err != nil {
				return err
			}
			loader := source.NewLoader(source.Options{ConfigPath: rf.configPath, Auth: auth, Progress: terminalProgress()})
			target := gitwriter.Target{Remote: gitwriter.Remote{URL: rf.repo, Auth: repo.AuthMethod()}, Branch: rf.stateBranch}
			for attempt := 1; ; attempt++ {
				snap, err := loader.Load(cmd.Context(), rf.repo, rf.branch)
				if err != nil {
					return err
				}
				tip, files, state, err := controller.ReadState(cmd.Context(), repo, rf.stateBranch)
				if err != nil {
					return err
				}
				// The new sequence continues after the target's history.
				sequences, err := controller.TargetSequences(cmd.Context(), w, snap, func(url string) gitwriter.Remote {
					return controller.WriterRemote(url, auth(url))
				})
				if err != nil {
					return err
				}
				d, name, err := controller.Promote(controller.Inputs{Snapshot: snap, State: state, TargetSequences: sequences}, config, time.Now())
				if err != nil {
					return err
				}
				after, err := controller.EncodeState(d.State)
				if err != nil {
					return err
				}
				_, err = w.CompareAndSwap(cmd.Context(), target, tip, controller.StateDiff(files, after), controller.StateMessage(d.Transitions))
				if errors.Is(err, gitwriter.ErrConflict) && attempt < 8 {
					continue
				}
				if err != nil {
					return fmt.Errorf("promote %s: %w", config, err)
				}
				p := d.State.Promotions[name]
				fmt.Fprintf(cmd.OutOrStdout(), "created %s: %s to %s/%s (%s)\n", name, p.Spec.Vector,
					p.Spec.Target.Landscape, p.Spec.Target.Name, p.Status.State)
				return nil
			}
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	sf.register(cmd.Flags(), "identity", defaultApprover(), "author of the state commit, \"Name <email>\"")
	cmd.Flags().StringVar(&config, "config", "", "the VectorPromotionConfig to promote")
	return cmd
}
