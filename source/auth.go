package source

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables that carry credentials, so they stay out of argv
// (visible in ps) and out of the repository URL (visible in logs).
const (
	EnvGitUsername   = "VECTORFLOW_GIT_USERNAME"
	EnvGitPassword   = "VECTORFLOW_GIT_PASSWORD"
	EnvGitToken      = "VECTORFLOW_GIT_TOKEN"
	EnvSSHKey        = "VECTORFLOW_SSH_KEY"        // a file
	EnvSSHPassphrase = "VECTORFLOW_SSH_PASSPHRASE" // the passphrase itself
	EnvKnownHosts    = "VECTORFLOW_KNOWN_HOSTS"    // a file
)

// AuthFlags are the credential sources given on the command line. A flag
// set here wins over its environment variable. Secrets are files, never
// values, so they do not show up in the process list.
type AuthFlags struct {
	Username       string
	PasswordFile   string
	TokenFile      string
	SSHKeyFile     string
	KnownHostsFile string
}

// LoadAuth assembles Auth from flags, then the environment (getenv), then
// the default known_hosts file (~/.ssh/known_hosts under home) when it
// exists. A file named explicitly that cannot be read is an error.
func LoadAuth(flags AuthFlags, getenv func(string) string, home string) (Auth, error) {
	pick := func(flag, env string) string {
		if flag != "" {
			return flag
		}
		return getenv(env)
	}
	a := Auth{
		Username:      pick(flags.Username, EnvGitUsername),
		Password:      getenv(EnvGitPassword),
		Token:         getenv(EnvGitToken),
		SSHPassphrase: getenv(EnvSSHPassphrase),
	}
	var err error
	if flags.PasswordFile != "" {
		if a.Password, err = readSecret(flags.PasswordFile, "--password-file"); err != nil {
			return Auth{}, err
		}
	}
	if flags.TokenFile != "" {
		if a.Token, err = readSecret(flags.TokenFile, "--token-file"); err != nil {
			return Auth{}, err
		}
	}
	if keyFile := pick(flags.SSHKeyFile, EnvSSHKey); keyFile != "" {
		if a.SSHPrivateKey, err = os.ReadFile(keyFile); err != nil {
			return Auth{}, fmt.Errorf("read SSH private key %s (--ssh-key / %s): %w", keyFile, EnvSSHKey, err)
		}
	}
	knownHosts := pick(flags.KnownHostsFile, EnvKnownHosts)
	if knownHosts != "" {
		if a.KnownHosts, err = os.ReadFile(knownHosts); err != nil {
			return Auth{}, fmt.Errorf("read known_hosts %s (--known-hosts / %s): %w", knownHosts, EnvKnownHosts, err)
		}
	} else if home != "" {
		b, err := os.ReadFile(filepath.Join(home, ".ssh", "known_hosts"))
		switch {
		case err == nil:
			a.KnownHosts = b
		case !errors.Is(err, fs.ErrNotExist):
			return Auth{}, fmt.Errorf("read default known_hosts: %w", err)
		}
	}
	return a, nil
}

// readSecret reads a one-line secret file; the trailing newline editors add
// is not part of the secret.
func readSecret(file, flag string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read %s %s: %w", flag, file, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
