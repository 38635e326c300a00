package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

func newApproveCommand() *cobra.Command {
	var (
		rf repoFlags
		sf signingFlags
	)
	cmd := &cobra.Command{
		Use:   "approve PROMOTION --repo URL --signing-key FILE",
		Short: "Approve a waiting promotion with a commit signed by your own key",
		Long: `approve adds approvals/<promotion>.yaml to the state branch in a commit signed
with your key. The controller accepts it only if the signature verifies against
spec.approval.approvers of the promotion's config and the file names the
promotion's vector. Approving a finished or superseded promotion changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			view, err := rf.readState(cmd.Context())
			if err != nil {
				return err
			}
			p := view.state.Promotions[name]
			if p == nil {
				return fmt.Errorf("no promotion %s on %s of %s (list them with vectorflow get promotions)", name, rf.stateBranch, rf.repo)
			}
			now := time.Now()
			if res, err := reconcilers.Approve(*p, sf.identity, now); err != nil {
				return err
			} else if !res.Changed {
				fmt.Fprintln(cmd.OutOrStdout(), res.Message)
				return nil
			}
			w, _, err := sf.writer()
			if err != nil {
				return err
			}
			content, err := yaml.Marshal(controller.Approval{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: controller.ApprovalKind,
				Promotion: name, Vector: p.Spec.Vector, ApprovedBy: sf.identity,
				ApprovedAt: metav1.NewTime(now.UTC().Truncate(time.Second)),
			})
			if err != nil {
				return err
			}
			change := gitwriter.Change{
				Message: func([]gitwriter.FileDiff) string {
					return fmt.Sprintf("approve %s: %s to %s/%s\n\nApproved-by: %s\n", name, p.Spec.Vector,
						p.Spec.Target.Landscape, p.Spec.Target.Name, sf.identity)
				},
				// An earlier approval file that the controller refused (wrong
				// key, other vector) is replaced; the new commit is what gets
				// verified.
				Files: []gitwriter.FileEdit{gitwriter.SetFile(controller.ApprovalPath(name), content)},
			}
			target := gitwriter.Target{Remote: gitwriter.Remote{URL: rf.repo, Auth: view.repo.AuthMethod()}, Branch: rf.stateBranch}
			results, err := w.Apply(cmd.Context(), target, change)
			if err != nil {
				return fmt.Errorf("approve %s: %w", name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s (%s to %s/%s) in signed commit %s\n", name, p.Spec.Vector,
				p.Spec.Target.Landscape, p.Spec.Target.Name, results[0].Commit)
			return nil
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	sf.register(cmd.Flags(), "as", defaultApprover(), "who approves, \"Name <email>\" (the commit author)")
	return cmd
}

// defaultApprover is the local user, as git would guess it.
func defaultApprover() string {
	user := os.Getenv("USER")
	if user == "" {
		user = "approver"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s <%s@%s>", user, user, strings.ToLower(host))
}
