// Command vectorflow is the GitOps promotion reconciler: it moves vectors
// through stages by committing them, signed, into Kustomize overlays.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/vectorflow-dev/vectorflow/source"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	root := newRootCommand()
	// Whatever a command prints passes through redaction: a URL with
	// credentials in it (a --repo, a landscape's repository) is shown
	// without them.
	root.SetOut(redactingWriter{os.Stdout})
	root.SetErr(redactingWriter{os.Stderr})
	stop := startProfile(os.Getenv("VECTORFLOW_CPUPROFILE"))
	err := root.Execute()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", source.RedactText(err.Error()))
		os.Exit(1)
	}
}

// startProfile writes a CPU profile of the whole command to path, for
// `make bench` and anyone measuring a slow repository; "" profiles nothing.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "warning: VECTORFLOW_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "warning: VECTORFLOW_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// bulkGC makes the garbage collector run less often while a command renders
// many overlays, and returns what puts the old settings back. A kustomize
// build allocates about 2 MB of short-lived garbage over a live heap of a
// few MB, so with the default GOGC=100 the collector runs every few builds
// and takes a fifth of the time. GOGC=400 under a soft limit of
// bulkMemoryLimit keeps peak RSS bounded when the live heap is large (10,000
// stages). GOGC and GOMEMLIMIT in the environment win.
func bulkGC() (restore func()) {
	percent, limit := -2, int64(-1)
	if os.Getenv("GOGC") == "" {
		percent = debug.SetGCPercent(bulkGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		limit = debug.SetMemoryLimit(bulkMemoryLimit)
	}
	return func() {
		if percent != -2 {
			debug.SetGCPercent(percent)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

const (
	bulkGCPercent   = 400
	bulkMemoryLimit = 640 << 20
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "vectorflow",
		Short:         "Promote versions through GitOps stages as signed commits",
		SilenceUsage:  true,
		SilenceErrors: true,
		// No command has hooks of its own, so every one runs this.
		PersistentPreRunE: checkFlagAliases,
	}
	root.AddCommand(
		newVersionCommand(),
		newValidateCommand(),
		newRunCommand(),
		newGetCommand(),
		newDescribeCommand(),
		newDiffCommand(),
		newInitCommand(),
		newApproveCommand(),
		newPromoteCommand(),
		newRollbackCommand(),
		newHoldCommand(),
		newReleaseCommand(),
		newAuditCommand(),
		newDemoCommand(),
		newUICommand(),
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
