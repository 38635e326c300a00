package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/examples"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/demo"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/registry"
)

const (
	demoRepository = "acme.git"
	demoApprover   = "Alice <alice@example.com>"
	// demoMaxPasses bounds each settle: the quickstart's chain settles in a
	// handful of passes, so hitting it means the controller is looping.
	demoMaxPasses = 30
)

func newDemoCommand() *cobra.Command {
	var keep string
	cmd := &cobra.Command{
		Use:   "demo [--keep DIR]",
		Short: "Watch vectorflow promote through a throwaway repository and registry on this machine",
		Long: `demo starts a git server and an OCI registry on 127.0.0.1, creates a
repository from the quickstart whose template follows semver ranges in that
registry, generates fresh signing keys, and runs the real controller: vectors
assembled from the registry, auto-promotion to dev, a promotion to test
approved with alice's signed commit, a burst of new tags, and the audit trail.
It needs no network and no cluster, and removes everything when it ends
unless --keep clones the repository (with its state branch) into DIR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), keep)
		},
	}
	cmd.Flags().StringVar(&keep, "keep", "", "clone the demo repository, with its state branch, into `DIR` at the end")
	return cmd
}

// demoRun is one demo: its servers, keys and controller, and the last state
// it narrated from.
type demoRun struct {
	out          io.Writer
	dir          string
	srv          *demo.Servers
	keys         demo.Keys
	url          string
	passwordFile string
	controller   *controller.Controller
	stateRepo    *source.Repository
	state        *reconcilers.State
	bare         *git.Repository
}

func runDemo(ctx context.Context, out io.Writer, keep string) (err error) {
	start := time.Now()
	// Ctrl-C ends the demo through its deferred cleanup, so even an
	// interrupted demo leaves no servers and no files behind.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if keep != "" {
		if keep, err = emptyDir(keep); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "vectorflow-demo-")
	if err != nil {
		return fmt.Errorf("demo: make a working directory: %w", err)
	}
	defer os.RemoveAll(dir)
	d := &demoRun{out: out, dir: dir, state: reconcilers.NewState()}
	if d.srv, err = demo.StartServers(dir); err != nil {
		return err
	}
	defer d.srv.Close()

	fmt.Fprintln(out, "vectorflow demo: a git server and an OCI registry on 127.0.0.1, fresh keys, the real controller.")
	if err := d.setUp(ctx); err != nil {
		return err
	}
	d.heading("The controller's first passes")
	if err := d.settle(ctx); err != nil {
		return err
	}
	if err := d.approveNewest(ctx); err != nil {
		return err
	}
	rounds := []struct {
		note string
		tags map[string][]string
	}{
		{"", map[string][]string{"acme/service-a": {"1.0.2"}}},
		{"service-b 2.0.0 is outside " + demo.VersionRange + ", so vectors keep service-b 1.1.0",
			map[string][]string{"acme/frontend": {"1.3.0"}, "acme/service-b": {"2.0.0"}}},
		{"", map[string][]string{"acme/service-a": {"1.0.3"}}},
	}
	for i, r := range rounds {
		d.heading(fmt.Sprintf("CI pushes new tags (round %d of %d): %s", i+1, len(rounds), describeTags(r.tags)))
		for _, repo := range demo.Components {
			if err := d.srv.PushTags(ctx, repo, r.tags[repo]...); err != nil {
				return err
			}
		}
		if r.note != "" {
			d.say(r.note + ".")
		}
		if err := d.settle(ctx); err != nil {
			return err
		}
	}
	if err := d.approveNewest(ctx); err != nil {
		return err
	}
	d.heading("The audit trail, as `vectorflow audit` prints it")
	if err := d.cli(ctx, d.out, "audit"); err != nil {
		return err
	}
	if keep != "" {
		if err := d.keep(ctx, keep); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nDone in %s; the servers are stopped", time.Since(start).Round(100*time.Millisecond))
	if keep == "" {
		fmt.Fprint(out, " and everything is removed (use --keep DIR to look at the repository)")
	}
	fmt.Fprintln(out, ".")
	return nil
}

// setUp fills the registry, creates the repository and the controller.
func (d *demoRun) setUp(ctx context.Context) error {
	d.heading("Setting up")
	initial := map[string][]string{
		"acme/frontend":  {"1.0.0", "1.1.0", "1.2.0", "2.0.0"},
		"acme/service-a": {"1.0.0", "1.0.1"},
		"acme/service-b": {"1.0.0", "1.1.0"},
	}
	for _, repo := range demo.Components {
		if err := d.srv.PushTags(ctx, repo, initial[repo]...); err != nil {
			return err
		}
	}
	d.say("Registry %s holds %s.", d.srv.RegistryHost, describeTags(initial))

	keyDir := filepath.Join(d.dir, "keys")
	if err := os.Mkdir(keyDir, 0o700); err != nil {
		return err
	}
	var err error
	if d.keys, err = demo.GenerateKeys(keyDir); err != nil {
		return err
	}
	d.say("Generated keys: the controller signs its commits with a new OpenPGP key; alice approves with a new SSH key.")
	quickstart, err := fs.Sub(examples.Quickstart, "quickstart")
	if err != nil {
		return err
	}
	files, err := demo.Repository(quickstart, d.srv.RegistryHost, d.keys)
	if err != nil {
		return err
	}
	if d.url, err = d.srv.CreateRepository(filepath.Join(d.dir, "fixture"), "main", demoRepository, files); err != nil {
		return err
	}
	d.passwordFile = filepath.Join(d.dir, "git-password")
	if err := os.WriteFile(d.passwordFile, []byte(d.srv.Password), 0o600); err != nil {
		return err
	}
	d.say("Git server holds %s, made from examples/quickstart: VectorTemplate acme takes %q of each component,",
		d.url, demo.VersionRange)
	d.say("latest-to-dev promotes every new vector to dev, dev-to-test waits for alice's signed approval.")

	auth := source.Auth{Username: d.srv.Username, Password: d.srv.Password}
	signer, err := gitwriter.LoadSigner(d.keys.ControllerKeyFile, "", "")
	if err != nil {
		return err
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		return err
	}
	// A tag list is never reused: the demo pushes tags and wants the very
	// next pass to see them, where a real deployment caches for a minute.
	resolver := registry.NewResolver(registry.Options{Keychain: demo.Anonymous{}, TagListTTL: -1})
	d.controller, err = controller.New(controller.Options{
		URL: d.url, Branch: "main", Auth: func(string) source.Auth { return auth },
		Writer: w, Resolver: resolver, Log: logr.Discard(),
	})
	if err != nil {
		return err
	}
	if d.stateRepo, err = source.Open(d.url, auth); err != nil {
		return err
	}
	d.bare, err = git.PlainOpen(d.srv.BarePath(demoRepository))
	return err
}

// settle runs controller passes until one changes nothing, narrating what
// each pass changed on the state branch.
func (d *demoRun) settle(ctx context.Context) error {
	for i := 0; i < demoMaxPasses; i++ {
		res, err := d.controller.Pass(ctx)
		if err != nil {
			return fmt.Errorf("demo: controller pass: %w", err)
		}
		if err := d.narrate(ctx); err != nil {
			return err
		}
		if !res.Changed() {
			return nil
		}
	}
	return fmt.Errorf("demo: the controller did not settle after %d passes", demoMaxPasses)
}

func (d *demoRun) narrate(ctx context.Context) error {
	_, _, state, err := controller.ReadState(ctx, d.stateRepo, controller.DefaultStateBranch)
	if err != nil {
		return fmt.Errorf("demo: read the state branch: %w", err)
	}
	n := demo.Narrate(d.state, state)
	d.state = state
	for _, line := range n.Lines {
		d.say("%s", line)
	}
	for _, p := range n.Promoted {
		if p.Status.Approval == nil {
			continue
		}
		c, err := d.bare.CommitObject(plumbing.NewHash(p.Status.Commit))
		if err != nil {
			return fmt.Errorf("demo: read promotion commit %s of %s: %w", p.Status.Commit, p.Name, err)
		}
		d.say("  its trailers:")
		for _, t := range demo.Trailers(c.Message) {
			d.say("    %s", t)
		}
	}
	return nil
}

// approveNewest has alice approve the newest waiting promotion to test,
// with `vectorflow approve`, then lets the controller act on it.
func (d *demoRun) approveNewest(ctx context.Context) error {
	var newest *v1alpha1.VectorPromotion
	for _, p := range d.state.Promotions {
		if p.Spec.VectorPromotionConfigName == "dev-to-test" && p.Status.State == v1alpha1.PromotionWaiting &&
			(newest == nil || p.Spec.Sequence > newest.Spec.Sequence) {
			newest = p
		}
	}
	if newest == nil {
		return errors.New("demo: no promotion to test is waiting for approval")
	}
	d.heading(fmt.Sprintf("alice approves the newest candidate for test, %s (vectorflow approve)", newest.Name))
	var out bytes.Buffer
	if err := d.cli(ctx, &out, "approve", newest.Name, "--signing-key", d.keys.AliceKeyFile, "--identity", demoApprover); err != nil {
		return err
	}
	d.say("%s", strings.TrimSpace(out.String()))
	return d.settle(ctx)
}

// cli runs a vectorflow command in this process against the demo
// repository, as a user would from a shell.
func (d *demoRun) cli(ctx context.Context, out io.Writer, args ...string) error {
	cmd := newRootCommand()
	var stderr bytes.Buffer
	cmd.SetOut(out)
	cmd.SetErr(&stderr)
	cmd.SetArgs(append(args, "--repo", d.url, "--username", d.srv.Username, "--password-file", d.passwordFile))
	if err := cmd.ExecuteContext(ctx); err != nil {
		return fmt.Errorf("demo: vectorflow %s: %w %s", args[0], err, stderr.String())
	}
	return nil
}

// keep clones the repository with its state branch into dir and says what
// to try there.
func (d *demoRun) keep(ctx context.Context, dir string) error {
	steps := [][]string{
		{"clone", "--quiet", "--branch", "main", d.srv.BarePath(demoRepository), dir},
		{"-C", dir, "branch", "--quiet", controller.DefaultStateBranch, "origin/" + controller.DefaultStateBranch},
		// The server is gone when the demo ends; a remote pointing at it
		// would only confuse a later fetch.
		{"-C", dir, "remote", "remove", "origin"},
	}
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("demo: keep the repository in %s: git %s: %w\n%s", dir, strings.Join(args, " "), err, out)
		}
	}
	d.heading("Kept the repository in " + dir)
	d.say("Try:")
	d.say("  git -C %s log --format='%%h %%s%%n%%(trailers:only,unfold)' -- apps/overlays/test", dir)
	d.say("  git -C %s log --oneline %s", dir, controller.DefaultStateBranch)
	d.say("  vectorflow get promotions --repo %s", dir)
	d.say("  vectorflow audit --repo %s", dir)
	return nil
}

func (d *demoRun) heading(s string) { fmt.Fprintf(d.out, "\n== %s\n", s) }

func (d *demoRun) say(format string, args ...any) {
	fmt.Fprintf(d.out, "   "+format+"\n", args...)
}

// emptyDir checks that --keep names a directory git can clone into.
func emptyDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--keep %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("--keep %s: %w", dir, err)
	case len(entries) > 0:
		return "", fmt.Errorf("--keep %s: the directory is not empty; name a new or empty one", dir)
	}
	return abs, nil
}

// describeTags lists tags per component: "acme/frontend 1.0.0, 1.1.0; ...".
func describeTags(tags map[string][]string) string {
	var parts []string
	for _, repo := range demo.Components {
		if len(tags[repo]) > 0 {
			parts = append(parts, repo+" "+strings.Join(tags[repo], ", "))
		}
	}
	return strings.Join(parts, "; ")
}
