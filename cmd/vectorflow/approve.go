package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

func newApproveCommand() *cobra.Command {
	var (
		rf     repoFlags
		sf     signingFlags
		vector string
	)
	cmd := &cobra.Command{
		Use:   "approve PROMOTION --repo URL --signing-key FILE [--vector VECTOR]",
		Short: "Approve a waiting promotion with a commit signed by your own key",
		Long: `approve adds a new file approvals/<promotion>/<key-id>-<time>-<random>.yaml to
the state branch in a commit signed with your key; it never changes or removes
another file, so every approver's approval stands on its own. It first checks
that your key is one of spec.approval.approvers of the promotion's config and,
with --vector, that the promotion promotes that vector, and refuses otherwise.
The controller counts the approval only if the commit's signature verifies
against those approvers and the file names the promotion's vector; with
spec.approval.minApprovals above 1 the promotion waits for that many distinct
approvers. Approving a finished or superseded promotion changes nothing.`,
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
			if msg, closed := reconcilers.ApprovalClosed(*p); closed {
				fmt.Fprintln(cmd.OutOrStdout(), name+" "+msg)
				return nil
			}
			if vector != "" && vector != p.Spec.Vector {
				return fmt.Errorf("approve %s: it promotes %s, not %s (--vector); check what you approve", name, p.Spec.Vector, vector)
			}
			w, signer, err := sf.writer()
			if err != nil {
				return err
			}
			snap, err := rf.loadSnapshot(cmd.Context(), view.auth)
			if err != nil {
				return err
			}
			approver, keyID, err := approverOf(snap, p, signer.PublicKey(), sf.keyFile)
			if err != nil {
				return err
			}
			now := time.Now()
			content, err := yaml.Marshal(reconcilers.Approval{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind,
				Promotion: name, Vector: p.Spec.Vector, ApprovedBy: sf.identity,
				ApprovedAt: metav1.NewTime(now.UTC().Truncate(time.Second)), Removes: removedNames(p.Status.RemovesProtected),
			})
			if err != nil {
				return err
			}
			file, err := controller.NewApprovalPath(name, keyID, now)
			if err != nil {
				return err
			}
			change := gitwriter.Change{
				Message: func([]gitwriter.FileDiff) string {
					return fmt.Sprintf("approve %s: %s to %s/%s\n\nApproved-by: %s\n", name, p.Spec.Vector,
						p.Spec.Target.Landscape, p.Spec.Target.Name, approver)
				},
				Files: []gitwriter.FileEdit{addFile(file, content)},
			}
			target := gitwriter.Target{Remote: gitwriter.Remote{URL: rf.repo, Auth: view.repo.AuthMethod()}, Branch: rf.stateBranch}
			results, err := w.Apply(cmd.Context(), target, change)
			if err != nil {
				return fmt.Errorf("approve %s: %w", name, err)
			}
			if len(results) != 1 || results[0].AlreadyApplied || results[0].Existing {
				return fmt.Errorf("approve %s: no new commit was made for %s; run approve again", name, file)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s (%s to %s/%s) in signed commit %s, as approver %s\n", name, p.Spec.Vector,
				p.Spec.Target.Landscape, p.Spec.Target.Name, results[0].Commit, approver)
			if removes := removedNames(p.Status.RemovesProtected); len(removes) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "it removes protected objects, which your approval names: %s\n", strings.Join(removes, ", "))
			}
			return nil
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	sf.register(cmd.Flags(), defaultApprover(), "who approves, \"Name <email>\" (the commit author)")
	deprecatedAlias(cmd, "as", "identity")
	cmd.Flags().StringVar(&vector, "vector", "", "the vector you approve (`template:version`); refused unless the promotion promotes exactly it")
	return cmd
}

// approverOf is the approver of p's own config whose key is publicKey, and
// that key's id. Anyone else's approval would be refused by the controller,
// so it is refused here, before anything is written.
func approverOf(snap *source.Snapshot, p *v1alpha1.VectorPromotion, publicKey, keyFile string) (name, keyID string, err error) {
	config := p.Spec.VectorPromotionConfigName
	cfg := snap.Configs[config]
	if cfg == nil {
		return "", "", fmt.Errorf("approve %s: its VectorPromotionConfig %s is not in %s, so nobody can approve it", p.Name, config, snap.URL)
	}
	ids, err := controller.ApproverKeyIDs(publicKey)
	if err == nil && len(ids) != 1 {
		err = fmt.Errorf("it holds %d keys, want one", len(ids))
	}
	if err != nil {
		return "", "", fmt.Errorf("approve %s: the public key of --signing-key %s: %w", p.Name, keyFile, err)
	}
	var names []string
	if cfg.Spec.Approval != nil {
		for _, a := range cfg.Spec.Approval.Approvers {
			names = append(names, a.Name)
			theirs, err := controller.ApproverKeyIDs(a.PublicKey)
			if err == nil && slices.Contains(theirs, ids[0]) {
				return a.Name, ids[0], nil
			}
		}
	}
	return "", "", fmt.Errorf("approve %s: your key %s (--signing-key %s) is not one of the approvers of VectorPromotionConfig %s (spec.approval.approvers: %s); ask for your public key to be added there, or let one of them approve",
		p.Name, ids[0], keyFile, config, orDash(strings.Join(names, ", ")))
}

// addFile writes a new file and refuses to replace one: an approval is
// added beside the others, never over one.
func addFile(p string, content []byte) gitwriter.FileEdit {
	return gitwriter.FileEdit{Path: p, Edit: func(_ []byte, existed bool) ([]byte, bool, error) {
		if existed {
			return nil, false, fmt.Errorf("%s already exists; run approve again for a new file name", p)
		}
		return content, false, nil
	}}
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

// removedNames are the protected objects a promotion removes, as the
// approval record names them.
func removedNames(entries []v1alpha1.InventoryEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.String())
	}
	return out
}
