package main

import (
	"context"
	"fmt"
	"io"
	"net/mail"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
)

// envSigningPassphrase carries the signing key's passphrase when
// --signing-passphrase-file is not given.
const envSigningPassphrase = "VECTORFLOW_SIGNING_PASSPHRASE"

// repoFlags name the config repository and how to reach it; every command
// that reads or writes a repository shares them.
type repoFlags struct {
	repo, branch, configPath, stateBranch string
	auth                                  source.AuthFlags
	// cacheDir is --cache-dir as given; cacheDirectory resolves it.
	cacheDir string
}

func (f *repoFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.repo, "repo", "", "config repository URL (file://, https://, ssh://, git@host:path) or local path; credentials in an http(s) URL are used for it and never shown")
	f.registerCommon(fs)
}

// registerCommon registers every flag but --repo, for commands that take
// several repositories.
func (f *repoFlags) registerCommon(fs *pflag.FlagSet) {
	fs.StringVar(&f.branch, "branch", "main", "branch of the config repository (ignored for a plain directory)")
	fs.StringVar(&f.configPath, "config-path", source.DefaultConfigPath, "directory holding the promotion configs")
	fs.StringVar(&f.auth.Username, "username", "", "HTTP username (default $"+source.EnvGitUsername+")")
	fs.StringVar(&f.auth.PasswordFile, "password-file", "", "file holding the HTTP password (default $"+source.EnvGitPassword+")")
	fs.StringVar(&f.auth.TokenFile, "token-file", "", "file holding an access token (default $"+source.EnvGitToken+")")
	fs.StringVar(&f.auth.SSHKeyFile, "ssh-key", "", "SSH private key file for git over SSH (default $"+source.EnvSSHKey+")")
	fs.StringVar(&f.auth.KnownHostsFile, "known-hosts", "", "known_hosts file (default $"+source.EnvKnownHosts+", then ~/.ssh/known_hosts)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "directory caching fetched objects across runs, shared by processes (default $"+envCacheDir+", then the user cache directory's vectorflow/); none keeps everything in memory")
}

// envCacheDir names the cache directory when --cache-dir is not given.
const envCacheDir = "VECTORFLOW_CACHE_DIR"

// cacheDirectory is the cache directory the flags and the environment
// name; "" (none) keeps everything in memory. Without a user cache
// directory (no $HOME) there is nothing to reuse: memory.
func (f *repoFlags) cacheDirectory() string {
	dir := f.cacheDir
	if dir == "" {
		dir = os.Getenv(envCacheDir)
	}
	if dir == "" {
		userCache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(userCache, "vectorflow")
	}
	if dir == "none" {
		return ""
	}
	return dir
}

// registerStateBranch registers --state-branch, for commands that read or
// write vectorflow's runtime objects.
func (f *repoFlags) registerStateBranch(fs *pflag.FlagSet) {
	fs.StringVar(&f.stateBranch, "state-branch", controller.DefaultStateBranch, "branch holding vectors, promotions and statuses")
}

// resolve checks the flags and loads the credentials. Credentials written
// into --repo move out of it: f.repo becomes the URL without them, which is
// all that is ever shown, and the credentials are what git gets for it.
func (f *repoFlags) resolve() (func(string) source.Auth, error) {
	if f.repo == "" {
		return nil, fmt.Errorf("--repo is required: the config repository URL or a local path")
	}
	urls := []string{f.repo}
	auth, err := f.loadAuth(urls)
	f.repo = urls[0]
	return auth, err
}

// loadAuth loads the credentials of the flags and the environment, and
// takes the credentials out of every URL in urls (rewriting it in place):
// for that repository they win, as they do for git.
func (f *repoFlags) loadAuth(urls []string) (func(string) source.Auth, error) {
	home, _ := os.UserHomeDir()
	auth, err := source.LoadAuth(f.auth, os.Getenv, home)
	if err != nil {
		return nil, err
	}
	fromURL := map[string]source.Auth{}
	for i, u := range urls {
		clean, username, password, ok := source.SplitURLCredentials(u)
		if !ok {
			continue
		}
		if prev, seen := fromURL[clean]; seen && (prev.Username != username || prev.Password != password) {
			return nil, fmt.Errorf("repository %s is given twice with different credentials in its URL", clean)
		}
		urls[i] = clean
		fromURL[clean] = source.WithURLCredentials(auth, username, password)
	}
	return func(url string) source.Auth {
		if a, ok := fromURL[url]; ok {
			return a
		}
		return auth
	}, nil
}

// loadSnapshot reads the config repository's branch into a snapshot, as
// the controller reads it (the shell hands the loader its renderer).
func (f *repoFlags) loadSnapshot(ctx context.Context, auth func(string) source.Auth) (*source.Snapshot, error) {
	return f.newLoader(auth).Load(ctx, f.repo, f.branch)
}

func (f *repoFlags) newLoader(auth func(string) source.Auth) *source.Loader {
	cacheDir := f.cacheDirectory()
	return source.NewLoader(source.Options{ConfigPath: f.configPath, Auth: auth, Progress: terminalProgress(), CacheDir: cacheDir,
		Renderer: render.NewRenderer(render.Options{CacheDir: cacheDir})})
}

func (f *repoFlags) openRepository(auth func(string) source.Auth) (*source.Repository, error) {
	repo, err := source.OpenCached(f.repo, auth(f.repo), f.cacheDirectory())
	if err != nil {
		return nil, err
	}
	repo.ShowProgress(terminalProgress())
	return repo, nil
}

// stateView is the config repository opened with its state branch read.
type stateView struct {
	auth  func(string) source.Auth
	repo  *source.Repository
	state *reconcilers.State
}

// readState opens the config repository and reads its state branch, what
// every command that looks at promotions starts with.
func (f *repoFlags) readState(ctx context.Context) (stateView, error) {
	auth, err := f.resolve()
	if err != nil {
		return stateView{}, err
	}
	repo, err := f.openRepository(auth)
	if err != nil {
		return stateView{}, err
	}
	_, _, state, err := controller.ReadState(ctx, repo, f.stateBranch)
	if err != nil {
		return stateView{}, err
	}
	return stateView{auth: auth, repo: repo, state: state}, nil
}

// terminalProgress is where the servers' fetch progress goes: standard
// error when a person watches it, nowhere when it is a log or a pipe.
func terminalProgress() io.Writer {
	if term.IsTerminal(int(os.Stderr.Fd())) {
		return os.Stderr
	}
	return nil
}

// signingFlags name the key every commit is signed with.
type signingFlags struct {
	keyFile, passphraseFile, identity string
}

// register registers the signing flags; --identity is who signs and
// authors the commits, on every command that makes one.
func (f *signingFlags) register(fs *pflag.FlagSet, identityDefault, identityHelp string) {
	fs.StringVar(&f.keyFile, "signing-key", "", "armored OpenPGP private key (Flux's git.asc) or OpenSSH private key (Flux's identity) that signs every commit")
	fs.StringVar(&f.passphraseFile, "signing-passphrase-file", "", "file holding the signing key's passphrase (default $"+envSigningPassphrase+")")
	fs.StringVar(&f.identity, "identity", identityDefault, identityHelp)
}

// writer loads the signing key and returns a Writer committing as the
// configured identity.
func (f *signingFlags) writer() (*gitwriter.Writer, gitwriter.Signer, error) {
	if f.keyFile == "" {
		return nil, nil, fmt.Errorf("--signing-key is required: every commit vectorflow makes is signed")
	}
	env := ""
	if f.passphraseFile == "" {
		if _, ok := os.LookupEnv(envSigningPassphrase); ok {
			env = envSigningPassphrase
		}
	}
	signer, err := gitwriter.LoadSigner(f.keyFile, env, f.passphraseFile)
	if err != nil {
		return nil, nil, err
	}
	id, err := parseIdentity(f.identity)
	if err != nil {
		return nil, nil, err
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: id, Signer: signer})
	return w, signer, err
}

// parseIdentity reads "Name <email>".
func parseIdentity(s string) (gitwriter.Identity, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(s))
	if err != nil || a.Name == "" {
		return gitwriter.Identity{}, fmt.Errorf("identity %q is not \"Name <email>\"", s)
	}
	return gitwriter.Identity{Name: a.Name, Email: a.Address}, nil
}

// flagAliasOf annotates a flag that is an old name of another: its value
// is the new name.
const flagAliasOf = "vectorflow.dev/alias-of"

// deprecatedAlias registers old as a hidden, deprecated name of the flag
// now, registered before it: both set one value, so a script written for
// the old name keeps working while help shows one word per idea.
func deprecatedAlias(cmd *cobra.Command, old, now string) {
	f := cmd.Flags().Lookup(now)
	cmd.Flags().VarP(f.Value, old, "", f.Usage)
	markDeprecatedAlias(cmd, old, now, "use --"+now+" instead")
}

// markDeprecatedAlias hides the registered flag old, an old name of now,
// and makes its use print notice on standard error. pflag prints the
// notice on the flag set's output, which cobra would send to standard
// output, among the command's results.
func markDeprecatedAlias(cmd *cobra.Command, old, now, notice string) {
	fs := cmd.Flags()
	_ = fs.SetAnnotation(old, flagAliasOf, []string{now})
	_ = fs.MarkDeprecated(old, notice)
	fs.SetOutput(errWriter{cmd})
}

// checkFlagAliases refuses a flag given under both its old and its new
// name, when only one value can win; a repeatable flag takes the values of
// both.
func checkFlagAliases(cmd *cobra.Command, _ []string) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		now := f.Annotations[flagAliasOf]
		if err != nil || len(now) == 0 || !cmd.Flags().Changed(now[0]) {
			return
		}
		if _, repeatable := f.Value.(pflag.SliceValue); repeatable {
			return
		}
		err = fmt.Errorf("--%s is the old name of --%s, and both are given; give only --%s", f.Name, now[0], now[0])
	})
	return err
}

// errWriter is the command's standard error, looked up at each write: the
// caller may set it after the flags are registered.
type errWriter struct{ cmd *cobra.Command }

func (w errWriter) Write(p []byte) (int, error) { return w.cmd.ErrOrStderr().Write(p) }

// signedStateWrite is what a command that adds a signed record to the
// state branch (promote, hold, release, rollback) reads before it writes.
type signedStateWrite struct {
	writer *gitwriter.Writer
	signer gitwriter.Signer
	view   stateView
	snap   *source.Snapshot
}

// openSignedStateWrite loads the signing key, the state branch and the
// config repository, in that order: a bad key fails before any fetch.
func openSignedStateWrite(ctx context.Context, rf *repoFlags, sf *signingFlags) (signedStateWrite, error) {
	w, signer, err := sf.writer()
	if err != nil {
		return signedStateWrite{}, err
	}
	view, err := rf.readState(ctx)
	if err != nil {
		return signedStateWrite{}, err
	}
	snap, err := rf.loadSnapshot(ctx, view.auth)
	if err != nil {
		return signedStateWrite{}, err
	}
	return signedStateWrite{writer: w, signer: signer, view: view, snap: snap}, nil
}

// addFile commits file with content to the state branch in one signed
// commit with message, and returns the commit.
func (s signedStateWrite) addFile(ctx context.Context, rf *repoFlags, file string, content []byte, message string) (string, error) {
	change := gitwriter.Change{
		Message: func([]gitwriter.FileDiff) string { return message },
		Files:   []gitwriter.FileEdit{gitwriter.SetFile(file, content)},
	}
	target := gitwriter.Target{Remote: gitwriter.Remote{URL: rf.repo, Auth: s.view.repo.AuthMethod()}, Branch: rf.stateBranch}
	results, err := s.writer.Apply(ctx, target, change)
	if err != nil {
		return "", err
	}
	return results[0].Commit.String(), nil
}
