package testutil

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"golang.org/x/crypto/ssh"
)

// OpenPGPKey is a generated OpenPGP key pair, armored the way
// `gpg --export[-secret-keys] --armor` writes it (Flux's `git.asc`).
type OpenPGPKey struct {
	Name, Email    string
	PrivateArmored []byte
	PublicArmored  []byte
	// Passphrase encrypts PrivateArmored; empty means it is not encrypted.
	Passphrase []byte
	// Fingerprint is the primary key's fingerprint in upper-case hex, as gpg
	// prints it.
	Fingerprint string
}

// NewOpenPGPKey generates a v4 EdDSA (legacy ed25519) key: generation is
// instant, and gpg 2.2 verifies its signatures (it cannot verify RFC 9580
// Ed25519 or v6 keys).
func NewOpenPGPKey(t testing.TB, name, email string, passphrase []byte) OpenPGPKey {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Curve: packet.Curve25519}
	entity, err := openpgp.NewEntity(name, "", email, cfg)
	if err != nil {
		t.Fatalf("generate OpenPGP key for %s: %v", email, err)
	}
	public := armorEntity(t, openpgp.PublicKeyType, func(w *bytes.Buffer) error { return entity.Serialize(w) })
	if len(passphrase) > 0 {
		// The lowest iteration count: the format is gpg's, the cost is not
		// paid in every test that decrypts.
		if err := entity.EncryptPrivateKeys(passphrase, &packet.Config{S2KCount: 65536}); err != nil {
			t.Fatalf("encrypt OpenPGP key for %s: %v", email, err)
		}
	}
	// The self-signatures were made at generation; re-signing an encrypted
	// key would fail, so serialize without signing again.
	private := armorEntity(t, openpgp.PrivateKeyType, func(w *bytes.Buffer) error {
		return entity.SerializePrivateWithoutSigning(w, nil)
	})
	return OpenPGPKey{
		Name:           name,
		Email:          email,
		PrivateArmored: private,
		PublicArmored:  public,
		Passphrase:     passphrase,
		Fingerprint:    strings.ToUpper(fmt.Sprintf("%x", entity.PrimaryKey.Fingerprint)),
	}
}

func armorEntity(t testing.TB, blockType string, serialize func(*bytes.Buffer) error) []byte {
	t.Helper()
	var body, out bytes.Buffer
	if err := serialize(&body); err != nil {
		t.Fatalf("serialize OpenPGP key: %v", err)
	}
	w, err := armor.Encode(&out, blockType, nil)
	if err != nil {
		t.Fatalf("armor OpenPGP key: %v", err)
	}
	if _, err := w.Write(body.Bytes()); err != nil {
		t.Fatalf("armor OpenPGP key: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("armor OpenPGP key: %v", err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// SSHKey is a generated ed25519 SSH key pair (Flux's `identity` and
// `identity.pub`).
type SSHKey struct {
	// PrivatePEM is in OpenSSH format, encrypted with Passphrase if set.
	PrivatePEM []byte
	// AuthorizedKey is the public key as an authorized_keys line.
	AuthorizedKey string
	Passphrase    []byte
}

// NewSSHKey generates an ed25519 SSH key in OpenSSH PEM format.
func NewSSHKey(t testing.TB, passphrase []byte) SSHKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate SSH key: %v", err)
	}
	var block *pem.Block
	if len(passphrase) > 0 {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "vectorflow-test", passphrase)
	} else {
		block, err = ssh.MarshalPrivateKey(priv, "vectorflow-test")
	}
	if err != nil {
		t.Fatalf("marshal SSH key: %v", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatalf("marshal SSH public key: %v", err)
	}
	return SSHKey{
		PrivatePEM:    pem.EncodeToMemory(block),
		AuthorizedKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))),
		Passphrase:    passphrase,
	}
}

// GPGHome makes a temporary GNUPGHOME holding the public keys, ultimately
// trusted, and returns the environment entries that point gpg (and git) at it.
func GPGHome(t testing.TB, keys ...OpenPGPKey) []string {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Fatalf("the gpg binary is required (run .ci/run to install it): %v", err)
	}
	// A short path: gpg-agent's socket lives here and Unix socket paths are
	// limited to ~100 bytes, which t.TempDir() can exceed.
	home, err := os.MkdirTemp("", "gnupg")
	if err != nil {
		t.Fatalf("create GNUPGHOME: %v", err)
	}
	// gpg-agent calibrates its S2K count to ~100ms of CPU, which on a loaded
	// machine makes any secret-key operation take seconds.
	if err := os.WriteFile(filepath.Join(home, "gpg-agent.conf"), []byte("s2k-count 65536\n"), 0o600); err != nil {
		t.Fatalf("configure gpg-agent: %v", err)
	}
	env := []string{"GNUPGHOME=" + home}
	t.Cleanup(func() {
		// gpg may have started an agent in this home; stop it before removing.
		_, _ = runTool(env, nil, "gpgconf", "--kill", "all")
		_ = os.RemoveAll(home)
	})
	var ownertrust strings.Builder
	for _, k := range keys {
		if out, err := runTool(env, k.PublicArmored, "gpg", "--batch", "--import"); err != nil {
			t.Fatalf("gpg --import key of %s: %v\n%s", k.Email, err, out)
		}
		fmt.Fprintf(&ownertrust, "%s:6:\n", k.Fingerprint)
	}
	if out, err := runTool(env, []byte(ownertrust.String()), "gpg", "--batch", "--import-ownertrust"); err != nil {
		t.Fatalf("gpg --import-ownertrust: %v\n%s", err, out)
	}
	return env
}

// SSHAllowedSigners writes an allowed-signers file trusting keys for
// principal, for `git -c gpg.ssh.allowedSignersFile=<path>`.
func SSHAllowedSigners(t testing.TB, principal string, keys ...SSHKey) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", principal, k.AuthorizedKey)
	}
	path := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("write allowed signers: %v", err)
	}
	return path
}

// GitVerifyCommit runs `git verify-commit -v rev` in dir and returns its
// combined output, where gpg and ssh-keygen report ("Good signature",
// `Good "git" signature`), and the error if git rejects the signature.
func GitVerifyCommit(dir string, extraEnv []string, gitConfig []string, rev string) (string, error) {
	args := make([]string, 0, 2*len(gitConfig)+3)
	for _, c := range gitConfig {
		args = append(args, "-c", c)
	}
	args = append(args, "verify-commit", "-v", rev)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func runTool(env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}
