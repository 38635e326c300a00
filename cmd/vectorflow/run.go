package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/registry"
)

// maxPassesPerRun bounds --once beyond the passes a change needs to travel
// through every stage (a chain of N stages settles in about 2N: start, then
// record and propagate; controller.RunUntilStable allows those on top).
const maxPassesPerRun = 100

type runOptions struct {
	rf                    repoFlags
	lf                    limitFlags
	sf                    signingFlags
	repos                 []string
	reposFile             string
	once                  bool
	interval              time.Duration
	listen, metricsListen string
	webhookSecretFile     string
	log                   logFlags
	registryCacheTTL      time.Duration
	stateSigners          []string
	ui                    uiFlags
	uiHandler             http.Handler // the web view, served at / on --listen
	events                eventFlags
	kf                    kubeFlags
}

func newRunCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --repo URL --signing-key FILE",
		Short: "Reconcile repositories: assemble vectors, detect drift, promote as signed commits",
		Long: `run reads each config repository and its state branch, assembles vectors
(resolving semver ranges and tag policies against the registries), creates
promotions on drift, records signed approvals and writes each promotion as a
signed commit into the target stage's overlay. State lives on the state branch,
so run can stop and start anywhere.

With --once it runs passes until nothing changes and exits, non-zero when a pass
failed or the configuration has problems (promotions waiting for an approval
are not a failure). Its commits to the config repository go out together in one
atomic push when the passes settle (or before anything else sees them: a write
to another repository, a pull request); if a branch moved meanwhile, none of
them lands and the passes start again from a fresh fetch. Without it, it keeps
reconciling every --interval, at once on a webhook (--listen), and serves
/healthz, /readyz and /metrics; /readyz answers 503, naming the repository and
why, until the last pass of every repository did its work.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.repos, "repo", nil, "config repository URL or local path (repeatable); credentials in an http(s) URL are used for that repository and never shown")
	f.StringVar(&o.reposFile, "repos-file", "", "file listing config repositories, one `URL [branch]` per line (# comments)")
	o.rf.registerCommon(f)
	o.rf.registerStateBranch(f)
	o.lf.register(f)
	o.sf.register(f, "vectorflow <vectorflow@vectorflow.dev>", "author and committer of vectorflow's commits, \"Name <email>\"")
	f.BoolVar(&o.once, "once", false, "run passes until nothing changes, then exit")
	f.DurationVar(&o.interval, "interval", time.Minute, "time between fetches of a repository (with up to 10% jitter)")
	f.StringVar(&o.listen, "listen", "", "address for webhooks (/hooks/github, /hooks/gitlab, /hooks/gitea, /hooks/registry), deployment reports (/hooks/flux, /hooks/argocd), /healthz, /readyz, /metrics and the web view at /")
	f.StringVar(&o.metricsListen, "metrics-listen", "", "separate address for /healthz, /readyz and /metrics (default: --listen)")
	f.StringVar(&o.webhookSecretFile, "webhook-secret-file", "", "file holding the webhook secret (HMAC key or token)")
	o.log.register(cmd)
	f.StringArrayVar(&o.stateSigners, "trust", nil, "file holding the public key of another controller that writes the same state branch (repeatable); a state commit anyone else signs may only add approvals and promotion requests")
	deprecatedAlias(cmd, "trust-state-signer", "trust")
	o.ui.registerRun(f)
	o.events.register(f)
	f.DurationVar(&o.registryCacheTTL, "registry-cache-ttl", registry.DefaultTagListTTL, "how long a registry's tag list is reused")
	o.kf.register(cmd)
	return cmd
}

func run(cmd *cobra.Command, o runOptions) error {
	log, err := o.log.logger(redactingWriter{os.Stderr})
	if err != nil {
		return err
	}
	repos, err := repositories(o.repos, o.reposFile, o.rf.branch)
	if err != nil {
		return err
	}
	urls := make([]string, len(repos))
	for i, r := range repos {
		urls[i] = r.url
	}
	auth, err := o.rf.loadAuth(urls)
	if err != nil {
		return err
	}
	for i := range repos {
		repos[i].url = urls[i]
	}
	w, signer, err := o.sf.writer()
	if err != nil {
		return err
	}
	others, err := readTrustedKeys(o.stateSigners)
	if err != nil {
		return err
	}
	// The state branch is trusted only as far as its commits are signed by
	// this controller or the other controllers named; anyone else may only
	// add approvals and promotion requests.
	stateSigners := append([]gitwriter.TrustedKey{{Name: "vectorflow", PublicKey: signer.PublicKey()}}, others...)
	resolver := registry.NewResolver(registry.Options{Keychain: authn.DefaultKeychain, TagListTTL: o.registryCacheTTL})
	cluster, err := o.kf.cluster(o.once)
	if err != nil {
		return err
	}
	var metrics *controller.Metrics
	promReg := metricsRegistry(cluster)
	if !o.once {
		metrics = controller.NewMetrics(promReg)
	}
	events, closeEvents, err := o.events.notifier(log, promReg)
	if err != nil {
		return err
	}
	defer closeEvents()
	// Each pass goes to the Kubernetes mirror and to the web view, which
	// shows the controller's read instead of reading the repository again.
	serveUI := !o.once && o.listen != "" && o.ui.enabled
	views := &passViews{mirror: cluster.observe()}
	var controllers []*controller.Controller
	var progress io.Writer
	if o.once {
		progress = terminalProgress() // a daemon logs instead
	}
	for _, r := range repos {
		c, err := controller.New(controller.Options{
			URL: r.url, Branch: r.branch, ConfigPath: o.rf.configPath, StateBranch: o.rf.stateBranch,
			Auth: auth, Writer: w, Resolver: resolver, Uploader: resolver, Metrics: metrics, Progress: progress,
			StateSigners: stateSigners, Limits: o.lf.limits(), CacheDir: o.rf.cacheDirectory(), Events: events, Observe: views.observer(serveUI),
			HoldWrites: o.once, Settings: flagSettings(cmd),
			Log: log.WithValues("repository", r.url),
		})
		if err != nil {
			return err
		}
		controllers = append(controllers, c)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.once {
		var errs []error
		for _, c := range controllers {
			passes, err := c.RunUntilStable(ctx, maxPassesPerRun)
			if !transitionsShownByLog(o.log.level, isTerminal(os.Stdout), isTerminal(os.Stderr)) {
				printPasses(cmd, passes)
			}
			errs = append(errs, onceError(c.Name(), passes, err))
		}
		return errors.Join(errs...)
	}
	runner := controller.NewRunner(o.interval, log, controllers...)
	if o.listen != "" && o.ui.enabled {
		uiRepos := make([]uiRepository, len(repos))
		for i, r := range repos {
			uiRepos[i] = uiRepository{url: r.url, branch: r.branch, fedWithin: fedWithin(o.interval, o.ui.refresh)}
		}
		warn := func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), msg) }
		if o.uiHandler, views.web, err = o.ui.startUI(ctx, o.listen, o.rf, uiRepos, auth, stateSigners, log, warn); err != nil {
			return err
		}
	}
	servers, err := startServers(ctx, o, runner, metrics, promReg, log)
	if err != nil {
		return err
	}
	defer servers.shutdown()
	if cluster != nil {
		return cluster.run(ctx, runner, log)
	}
	runner.Run(ctx)
	return nil
}

// onceError is why run --once fails for one repository: its last pass
// could not do its work (see pass.PassProblem). Promotions left
// waiting for an approval are not a failure.
func onceError(repository string, passes []controller.PassResult, err error) error {
	if err != nil {
		return fmt.Errorf("repository %s: %w", repository, err)
	}
	if len(passes) == 0 {
		return nil
	}
	if problem := pass.PassProblem(passes[len(passes)-1].Problems, nil); problem != "" {
		return fmt.Errorf("repository %s: %s", repository, problem)
	}
	return nil
}

type repository struct{ url, branch string }

// repositories merges --repo flags and the --repos-file lines.
func repositories(flags []string, file, defaultBranch string) ([]repository, error) {
	var out []repository
	for _, u := range flags {
		out = append(out, repository{url: u, branch: defaultBranch})
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("read --repos-file: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			fields := strings.Fields(line)
			if len(fields) > 2 {
				return nil, fmt.Errorf("%s:%d: want `URL [branch]`, got %q", file, n, source.RedactText(line))
			}
			r := repository{url: fields[0], branch: defaultBranch}
			if len(fields) == 2 {
				r.branch = fields[1]
			}
			out = append(out, r)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read --repos-file: %w", err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--repo (or --repos-file) is required: the config repositories to reconcile")
	}
	seen := map[repository]bool{}
	for _, r := range out {
		clean, _, _, _ := source.SplitURLCredentials(r.url)
		key := repository{url: clean, branch: r.branch}
		if seen[key] {
			return nil, fmt.Errorf("repository %s branch %s is listed twice", clean, r.branch)
		}
		seen[key] = true
	}
	return out, nil
}

func printPasses(cmd *cobra.Command, passes []controller.PassResult) {
	out := cmd.OutOrStdout()
	for _, p := range passes {
		for _, t := range p.Transitions {
			fmt.Fprintln(out, t)
		}
	}
}

// servers are the HTTP listeners of a long-running run.
type servers struct{ list []*http.Server }

func (s *servers) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range s.list {
		_ = srv.Shutdown(ctx)
	}
}

// flagSettings are the flags run was started with, each with its value
// (defaults included), as controller.Options.Settings: a restarted run
// takes an earlier one's settled pass only under the same flags.
func flagSettings(cmd *cobra.Command) string {
	var b strings.Builder
	visit := func(f *pflag.Flag) { fmt.Fprintf(&b, "%s=%s\n", f.Name, f.Value.String()) }
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return b.String()
}
