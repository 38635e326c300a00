package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/source"
)

func newAuditCommand() *cobra.Command {
	var (
		rf      repoFlags
		stage   string
		output  string
		trusted []string
		strict  bool
	)
	cmd := &cobra.Command{
		Use:   "audit --repo URL [--stage NAME]",
		Short: "List every commit that changed a stage's overlay, with who approved it",
		Long: `audit reads the history of each stage's overlay, newest first. For every commit
it shows the promotion its trailers name (empty for a commit no promotion made),
whether its signature verifies against a trusted key (the landscape's
spec.signers, the approvers of the configs promoting into that stage, and
--trust keys), and whether the approvals on the state branch count for its
promotion and vector, judged as the controller judges them
(spec.approval.minApprovals included; only a promotion of a config targeting
that stage, and only state the --trust keys, the controllers' keys, verify).
REASON says
why a commit is NOT VERIFIED: unsigned, unknown key, bad signature, or
approval missing. With --strict, audit exits non-zero when any commit does not
verify.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			stateRepo, err := rf.openRepository(auth)
			if err != nil {
				return err
			}
			open := func(url, branch string) (*source.Repository, error) {
				r, err := source.OpenCached(url, auth(url), rf.cacheDirectory())
				if err != nil {
					return nil, err
				}
				_, err = r.Fetch(cmd.Context(), branch)
				return r, err
			}
			// The state branch is believed as far as the controllers'
			// signatures go (the --trust keys), as the controller and `get`
			// believe it; a Landscape's signers sign overlays, not state.
			var trust *controller.StateTrust
			if len(keys) > 0 {
				if trust, err = controller.NewStateTrust(keys); err != nil {
					return err
				}
			}
			entries, err := controller.Audit(cmd.Context(), controller.AuditInput{
				Snapshot: snap, Open: open, StateRepo: stateRepo, StateBranch: rf.stateBranch, StateTrust: trust,
				Trusted: keys, Stage: stage,
			})
			if err != nil {
				return err
			}
			if done, err := printStructured(cmd.OutOrStdout(), output, entries); done {
				if err != nil {
					return err
				}
				return strictResult(strict, entries)
			}
			t := &table{header: []string{"COMMIT", "STAGE", "TIME", "PROMOTION", "SEQ", "VECTOR", "APPROVED BY", "SIGNED", "APPROVAL", "REASON"}}
			for _, e := range entries {
				seq := "-"
				if e.Sequence > 0 {
					seq = strconv.FormatInt(e.Sequence, 10)
				}
				t.add(e.Commit[:12], e.Stage, e.Time, orDash(e.Promotion)+auditFlags(e), seq, orDash(e.Vector), orDash(e.ApprovedBy),
					verdict(e.SignatureVerified, e.Signer), approvalVerdict(e), orDash(e.Reason))
			}
			if err := t.print(cmd.OutOrStdout()); err != nil {
				return err
			}
			return strictResult(strict, entries)
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage (`name` or `landscape/name`)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit non-zero when any commit does not verify (for CI)")
	cmd.Flags().StringArrayVar(&trusted, "trust", nil, "file holding a public key whose commit signatures count as verified (repeatable)")
	return cmd
}

// strictResult is audit --strict's verdict: an error counting the commits
// that do not verify, by reason.
func strictResult(strict bool, entries []controller.AuditEntry) error {
	if !strict {
		return nil
	}
	reasons := map[string]int{}
	for _, e := range entries {
		if !e.Verified {
			reasons[e.Reason]++
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	var parts []string
	total := 0
	for _, r := range []string{controller.ReasonUnsigned, controller.ReasonUnknownKey, controller.ReasonBadSignature, controller.ReasonApprovalMissing} {
		if n := reasons[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
			total += n
		}
	}
	return fmt.Errorf("audit --strict: %d of %d commits do not verify (%s); see the REASON column", total, len(entries), strings.Join(parts, ", "))
}

func readTrustedKeys(files []string) ([]gitwriter.TrustedKey, error) {
	var keys []gitwriter.TrustedKey
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read --trust key: %w", err)
		}
		keys = append(keys, gitwriter.TrustedKey{Name: f, PublicKey: string(b)})
	}
	return keys, nil
}

func verdict(ok bool, signer string) string {
	if ok {
		return "verified (" + signer + ")"
	}
	return "NOT VERIFIED"
}

func approvalVerdict(e controller.AuditEntry) string {
	switch {
	case e.ApprovedBy == "":
		return "-"
	case e.ApprovalVerified:
		return "verified"
	case e.PullRequest != "":
		return "pull request " + e.PullRequest
	}
	return "NOT VERIFIED"
}

// auditFlags marks a forced promotion and a rollback beside its name.
func auditFlags(e controller.AuditEntry) string {
	var flags []string
	if e.Forced {
		flags = append(flags, "forced")
	}
	if e.Rollback {
		flags = append(flags, "rollback")
	}
	if len(flags) == 0 {
		return ""
	}
	return " (" + strings.Join(flags, ", ") + ")"
}
