package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/web"
)

// uiFlags configure the web view, for `ui` and for `run --listen`.
type uiFlags struct {
	enabled                  bool
	tokenFile, basicAuthFile string
	refresh                  time.Duration
	maxEventClients          int
}

func (f *uiFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.tokenFile, "ui-token-file", "", "file holding a token the web view asks for (Authorization: Bearer, or as the password of basic auth)")
	fs.StringVar(&f.basicAuthFile, "ui-basic-auth-file", "", "file of `user:bcrypt-hash` lines (htpasswd -nB user) the web view asks for")
	fs.DurationVar(&f.refresh, "ui-refresh", 10*time.Second, "how often the web view reads the config and state branches itself (under run, only while no pass has reached it for twice --interval)")
	fs.IntVar(&f.maxEventClients, "ui-max-live-pages", 64, "how many pages the web view keeps updating live at once")
}

// registerRun registers the flags for run, which serves the view on
// --listen unless --ui=false.
func (f *uiFlags) registerRun(fs *pflag.FlagSet) {
	fs.BoolVar(&f.enabled, "ui", true, "serve the read-only web view at / on --listen")
	f.register(fs)
}

// auth loads the credentials the view asks for; nil when none.
func (f *uiFlags) auth() (*web.Auth, error) {
	switch {
	case f.tokenFile != "" && f.basicAuthFile != "":
		return nil, errors.New("give --ui-token-file or --ui-basic-auth-file, not both")
	case f.tokenFile != "":
		return web.LoadTokenFile(f.tokenFile)
	case f.basicAuthFile != "":
		return web.LoadBasicAuthFile(f.basicAuthFile)
	}
	return nil, nil
}

// uiRepository is one repository the view shows. fedWithin, when set,
// says a controller of this process feeds its reader every pass over it
// (web.ReaderOptions.FedWithin).
type uiRepository struct {
	url, branch string
	fedWithin   time.Duration
}

// uiRepositoryKey names a reader: one repository may be reconciled on two
// branches.
type uiRepositoryKey struct{ url, branch string }

// startUI starts a reader per repository, refreshing every f.refresh until
// ctx ends, and returns the view's handler and the readers (to be fed) by
// URL and branch. It warns when the view is open to anyone on a
// non-loopback address.
func (f *uiFlags) startUI(ctx context.Context, listen string, rf repoFlags, repos []uiRepository, auth func(string) source.Auth,
	trust []gitwriter.TrustedKey, log logr.Logger, warn func(string)) (http.Handler, map[uiRepositoryKey]*web.Reader, error) {
	if f.refresh <= 0 {
		return nil, nil, fmt.Errorf("--ui-refresh %s: give a positive duration", f.refresh)
	}
	if f.maxEventClients <= 0 {
		return nil, nil, fmt.Errorf("--ui-max-live-pages %d: give at least 1", f.maxEventClients)
	}
	guard, err := f.auth()
	if err != nil {
		return nil, nil, err
	}
	if guard == nil && !loopback(listen) {
		warn(fmt.Sprintf("warning: the web view on %s is open to anyone who can reach it: it shows the repositories' stages, vectors, "+
			"promotions, approvers and overlay history; give --ui-token-file or --ui-basic-auth-file", listen))
	}
	if len(trust) == 0 {
		warn("warning: the web view shows the state branch unverified: give the controller's public key with --trust KEYFILE")
	}
	events := web.NewBroker(f.maxEventClients, 15*time.Second)
	urls := make([]string, len(repos))
	for i, r := range repos {
		urls[i] = r.url
	}
	ids := web.RepositoryIDs(urls)
	var list []web.Repository
	var readers []*web.Reader
	fed := map[uiRepositoryKey]*web.Reader{}
	for i, r := range repos {
		reader, err := web.NewReader(web.ReaderOptions{ID: ids[i], URL: r.url, Branch: r.branch, ConfigPath: rf.configPath,
			StateBranch: rf.stateBranch, Auth: auth, Trust: trust, CacheDir: rf.cacheDirectory(), OnChange: events.Publish,
			FedWithin: r.fedWithin, Log: log.WithValues("repository", source.RedactURL(r.url))})
		if err != nil {
			return nil, nil, err
		}
		list = append(list, reader)
		readers = append(readers, reader)
		fed[uiRepositoryKey{r.url, r.branch}] = reader
	}
	for _, reader := range readers {
		go reader.Run(ctx, f.refresh)
	}
	// Without credentials on loopback, only this machine's names are
	// answered, so that a web site cannot read the view by DNS rebinding.
	h, err := web.NewHandler(web.Options{Repositories: list, Auth: guard, Events: events, Log: log.WithName("web"),
		LoopbackHostsOnly: guard == nil && loopback(listen)})
	return h, fed, err
}

// passViews hand each pass of run's controllers to what shows it: the
// Kubernetes mirror (only passes that decided) and the web view's reader
// of the repository. Both are set before the first pass.
type passViews struct {
	mirror func(controller.Observed)
	web    map[uiRepositoryKey]*web.Reader // as the controllers have them
}

// observer is the controllers' Options.Observe; nil when nothing views the
// passes, so a controller hands nothing over.
func (v *passViews) observer(webView bool) func(controller.Observed) {
	if v.mirror == nil && !webView {
		return nil
	}
	return func(o controller.Observed) {
		if v.mirror != nil && o.Decided {
			v.mirror(o)
		}
		if r := v.web[uiRepositoryKey{o.Repository, o.Branch}]; r != nil {
			r.Observe(o)
		}
	}
}

// fedWithin is how long run's web view waits for a pass of its controller
// before it reads the repository itself: a controller passes at least every
// --interval (with 10% jitter), and a pass may take as long again (a first
// pass over a large repository); never less than --ui-refresh.
func fedWithin(interval, refresh time.Duration) time.Duration {
	return max(2*interval+interval/10, refresh)
}

// loopback reports whether addr listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newUICommand() *cobra.Command {
	var (
		rf      repoFlags
		uf      uiFlags
		lf      logFlags
		listen  string
		trusted []string
	)
	cmd := &cobra.Command{
		Use:   "ui --repo URL [--listen ADDR] [--trust KEYFILE]...",
		Short: "Serve the read-only web view of one repository, without reconciling",
		Long: `ui serves the web view that run --listen serves at /: every pipeline (stages,
the vectors they name and run, drift, waiting promotions), the promotions with
what each would change and the exact approve command, each stage's overlay
history as audit shows it, and the vectors. It reads the config branch and the
state branch every --ui-refresh and updates open pages when either moves. It
never writes: approvals stay signed commits made with vectorflow approve.

The state branch is believed as far as the --trust keys (the controllers'
public keys) verify it, as get and audit believe it; a state that does not
verify is shown as of its last trusted commit, with the refusal on top.

The view shows the repository's stages, vectors, promotions, approvers and
overlay history to whoever reaches it: on an address other than loopback,
give --ui-token-file or --ui-basic-auth-file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := lf.logger(redactingWriter{os.Stderr})
			if err != nil {
				return err
			}
			auth, err := rf.resolve()
			if err != nil {
				return err
			}
			keys, err := readTrustedKeys(trusted)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			h, _, err := uf.startUI(ctx, listen, rf, []uiRepository{{url: rf.repo, branch: rf.branch}}, auth, keys, log,
				func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), msg) })
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			limits := defaultServerLimits()
			srv := &http.Server{Handler: h, BaseContext: func(net.Listener) context.Context { return ctx },
				ReadHeaderTimeout: limits.ReadHeaderTimeout, ReadTimeout: limits.ReadTimeout, WriteTimeout: limits.WriteTimeout,
				IdleTimeout: limits.IdleTimeout, MaxHeaderBytes: limits.MaxHeaderBytes}
			go func() {
				<-ctx.Done()
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdown)
			}()
			fmt.Fprintf(cmd.OutOrStdout(), "serving the web view of %s at http://%s/\n", source.RedactURL(rf.repo), ln.Addr())
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	rf.register(cmd.Flags())
	rf.registerStateBranch(cmd.Flags())
	uf.register(cmd.Flags())
	lf.register(cmd)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve the web view on")
	cmd.Flags().StringArrayVar(&trusted, "trust", nil, "file holding the public key of a trusted state signer: the controller's (repeatable)")
	return cmd
}
