// Command vectorflow is the GitOps promotion reconciler: it moves vectors
// through stages by committing them, signed, into Kustomize overlays.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "vectorflow",
		Short:         "Promote versions through GitOps stages as signed commits",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCommand(),
		newValidateCommand(),
		newRunCommand(),
		newGetCommand(),
		newApproveCommand(),
		newPromoteCommand(),
		newAuditCommand(),
		newDemoCommand(),
	)
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the vectorflow version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "vectorflow %s\n", version)
			return err
		},
	}
}
