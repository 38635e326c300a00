package gitwriter_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestSignerGitVerifyCommit signs commits with go-git and NewSigner, then has
// the real git binary (gpg, ssh-keygen) verify them: what we sign must be
// what `git verify-commit` accepts, and git must reject it under other keys.
func TestSignerGitVerifyCommit(t *testing.T) {
	type verification struct {
		env    []string
		config []string
	}
	type keyCase struct {
		signer  gitwriter.Signer
		trusted verification // git trusts the signing key
		other   verification // git trusts only some other key
	}
	openPGP := func(t *testing.T, key testutil.OpenPGPKey) keyCase {
		s, err := gitwriter.NewSigner(key.PrivateArmored, key.Passphrase)
		if err != nil {
			t.Fatalf("NewSigner: %v", err)
		}
		other := testutil.NewOpenPGPKey(t, "Mallory", "mallory@example.com", nil)
		return keyCase{
			signer:  s,
			trusted: verification{env: testutil.GPGHome(t, key)},
			other:   verification{env: testutil.GPGHome(t, other)},
		}
	}
	sshCase := func(t *testing.T, private, passphrase []byte, authorizedKey string) keyCase {
		s, err := gitwriter.NewSigner(private, passphrase)
		if err != nil {
			t.Fatalf("NewSigner: %v", err)
		}
		trusted := testutil.SSHAllowedSigners(t, "author@example.com", testutil.SSHKey{AuthorizedKey: authorizedKey})
		other := testutil.SSHAllowedSigners(t, "author@example.com", testutil.NewSSHKey(t, nil))
		return keyCase{
			signer:  s,
			trusted: verification{config: []string{"gpg.format=ssh", "gpg.ssh.allowedSignersFile=" + trusted}},
			other:   verification{config: []string{"gpg.format=ssh", "gpg.ssh.allowedSignersFile=" + other}},
		}
	}

	tests := []struct {
		name     string
		key      func(t *testing.T) keyCase
		wantKind gitwriter.KeyKind
		wantGood string
	}{
		{
			name: "OpenPGP EdDSA",
			key: func(t *testing.T) keyCase {
				return openPGP(t, testutil.NewOpenPGPKey(t, "Alice", "alice@example.com", nil))
			},
			wantKind: gitwriter.KeyKindOpenPGP,
			wantGood: `Good signature from "Alice <alice@example.com>"`,
		},
		{
			name: "OpenPGP EdDSA with passphrase",
			key: func(t *testing.T) keyCase {
				return openPGP(t, testutil.NewOpenPGPKey(t, "Alice", "alice@example.com", []byte("correct horse")))
			},
			wantKind: gitwriter.KeyKindOpenPGP,
			wantGood: `Good signature from "Alice <alice@example.com>"`,
		},
		{
			name: "OpenPGP key exported by gpg with passphrase",
			key: func(t *testing.T) keyCase {
				return openPGP(t, gpgExportedKey(t, "Erin", "erin@example.com", []byte("battery staple")))
			},
			wantKind: gitwriter.KeyKindOpenPGP,
			wantGood: `Good signature from "Erin <erin@example.com>"`,
		},
		{
			name: "SSH ed25519",
			key: func(t *testing.T) keyCase {
				k := testutil.NewSSHKey(t, nil)
				return sshCase(t, k.PrivatePEM, nil, k.AuthorizedKey)
			},
			wantKind: gitwriter.KeyKindSSH,
			wantGood: `Good "git" signature for author@example.com with ED25519 key`,
		},
		{
			name: "SSH ed25519 with passphrase",
			key: func(t *testing.T) keyCase {
				k := testutil.NewSSHKey(t, []byte("s3cret"))
				return sshCase(t, k.PrivatePEM, k.Passphrase, k.AuthorizedKey)
			},
			wantKind: gitwriter.KeyKindSSH,
			wantGood: `Good "git" signature for author@example.com with ED25519 key`,
		},
		{
			name: "SSH RSA from ssh-keygen",
			key: func(t *testing.T) keyCase {
				private, public := sshKeygen(t, "rsa", nil)
				return sshCase(t, private, nil, public)
			},
			wantKind: gitwriter.KeyKindSSH,
			wantGood: `Good "git" signature for author@example.com with RSA key`,
		},
		{
			name: "SSH ed25519 from ssh-keygen with passphrase",
			key: func(t *testing.T) keyCase {
				private, public := sshKeygen(t, "ed25519", []byte("s3cret"))
				return sshCase(t, private, []byte("s3cret"), public)
			},
			wantKind: gitwriter.KeyKindSSH,
			wantGood: `Good "git" signature for author@example.com with ED25519 key`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.key(t)
			if diff := cmp.Diff(tt.wantKind, k.signer.Kind()); diff != "" {
				t.Errorf("Kind() (-want +got):\n%s", diff)
			}
			dir, commit := signingCommitOnDisk(t, k.signer)

			out, err := testutil.GitVerifyCommit(dir, k.trusted.env, k.trusted.config, commit.Hash.String())
			if err != nil || !strings.Contains(out, tt.wantGood) {
				t.Errorf("git verify-commit with the signing key trusted: err=%v, want output containing %q:\n%s", err, tt.wantGood, out)
			}
			out, err = testutil.GitVerifyCommit(dir, k.other.env, k.other.config, commit.Hash.String())
			if err == nil {
				t.Errorf("git verify-commit with only another key trusted succeeded, want a failure:\n%s", out)
			}

			// The key the signer reports as its public key is the one to
			// trust: an approver copies it into the config.
			v, err := gitwriter.NewVerifier([]gitwriter.TrustedKey{{Name: "the-signer", PublicKey: k.signer.PublicKey()}})
			if err != nil {
				t.Fatalf("NewVerifier(signer's public key): %v", err)
			}
			signer, err := v.VerifyCommit(commit)
			if err != nil {
				t.Fatalf("VerifyCommit: %v", err)
			}
			if diff := cmp.Diff("the-signer", signer); diff != "" {
				t.Errorf("VerifyCommit signer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewSignerRejectsKeysThatCannotSign(t *testing.T) {
	pgp := testutil.NewOpenPGPKey(t, "Alice", "alice@example.com", nil)
	pgpEncrypted := testutil.NewOpenPGPKey(t, "Alice", "alice@example.com", []byte("right"))
	sshKey := testutil.NewSSHKey(t, nil)
	sshEncrypted := testutil.NewSSHKey(t, []byte("right"))

	tests := []struct {
		name       string
		key        []byte
		passphrase []byte
		want       error
	}{
		{name: "empty", key: nil, want: gitwriter.ErrKeyMalformed},
		{name: "garbage", key: []byte("this is not a key\n"), want: gitwriter.ErrKeyMalformed},
		{name: "OpenPGP public key", key: pgp.PublicArmored, want: gitwriter.ErrKeyNotPrivate},
		{name: "SSH public key line", key: []byte(sshKey.AuthorizedKey + "\n"), want: gitwriter.ErrKeyNotPrivate},
		{name: "truncated OpenPGP private key", key: truncateArmor(pgp.PrivateArmored), want: gitwriter.ErrKeyMalformed},
		{name: "truncated SSH private key", key: truncateArmor(sshKey.PrivatePEM), want: gitwriter.ErrKeyMalformed},
		{name: "OpenPGP encrypted, no passphrase", key: pgpEncrypted.PrivateArmored, want: gitwriter.ErrPassphraseRequired},
		{name: "OpenPGP encrypted, wrong passphrase", key: pgpEncrypted.PrivateArmored, passphrase: []byte("wrong"), want: gitwriter.ErrWrongPassphrase},
		{name: "SSH encrypted, no passphrase", key: sshEncrypted.PrivatePEM, want: gitwriter.ErrPassphraseRequired},
		{name: "SSH encrypted, wrong passphrase", key: sshEncrypted.PrivatePEM, passphrase: []byte("wrong"), want: gitwriter.ErrWrongPassphrase},
		{name: "OpenPGP expired", key: expiredOpenPGPKey(t), want: gitwriter.ErrKeyCannotSign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := gitwriter.NewSigner(tt.key, tt.passphrase)
			if !errors.Is(err, tt.want) {
				t.Fatalf("NewSigner error = %v, want %v", err, tt.want)
			}
			if s != nil {
				t.Errorf("NewSigner returned a signer along with error %v", err)
			}
		})
	}
}

func TestLoadSigner(t *testing.T) {
	dir := t.TempDir()
	key := testutil.NewSSHKey(t, []byte("from-file"))
	keyFile := writeSigningFile(t, dir, "identity", key.PrivatePEM)
	passFile := writeSigningFile(t, dir, "password", []byte("from-file\n"))
	t.Setenv("VECTORFLOW_TEST_SIGNING_PASSPHRASE", "from-file")

	tests := []struct {
		name                      string
		keyFile, passEnv, passFil string
		wantErr                   string // substring; empty means success
	}{
		{name: "passphrase file with trailing newline", keyFile: keyFile, passFil: passFile},
		{name: "passphrase env", keyFile: keyFile, passEnv: "VECTORFLOW_TEST_SIGNING_PASSPHRASE"},
		{name: "no passphrase", keyFile: keyFile, wantErr: "no passphrase was given"},
		{name: "env unset", keyFile: keyFile, passEnv: "VECTORFLOW_TEST_UNSET_VARIABLE", wantErr: "VECTORFLOW_TEST_UNSET_VARIABLE holding its passphrase is not set"},
		{name: "both", keyFile: keyFile, passEnv: "VECTORFLOW_TEST_SIGNING_PASSPHRASE", passFil: passFile, wantErr: "not both"},
		{name: "missing key file", keyFile: filepath.Join(dir, "nope"), wantErr: filepath.Join(dir, "nope")},
		{name: "missing passphrase file", keyFile: keyFile, passFil: filepath.Join(dir, "nope"), wantErr: filepath.Join(dir, "nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := gitwriter.LoadSigner(tt.keyFile, tt.passEnv, tt.passFil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadSigner error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadSigner: %v", err)
			}
			if diff := cmp.Diff(key.AuthorizedKey, s.PublicKey()); diff != "" {
				t.Errorf("PublicKey() (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzNewSigner: no key bytes make NewSigner panic, and any key it accepts
// can sign.
func FuzzNewSigner(f *testing.F) {
	pgp := testutil.NewOpenPGPKey(f, "Alice", "alice@example.com", nil)
	pgpEncrypted := testutil.NewOpenPGPKey(f, "Alice", "alice@example.com", []byte("pass"))
	sshKey := testutil.NewSSHKey(f, nil)
	sshEncrypted := testutil.NewSSHKey(f, []byte("pass"))
	for _, seed := range [][]byte{
		nil, []byte("garbage"), pgp.PrivateArmored, pgp.PublicArmored, pgpEncrypted.PrivateArmored,
		sshKey.PrivatePEM, []byte(sshKey.AuthorizedKey), sshEncrypted.PrivatePEM,
		truncateArmor(pgp.PrivateArmored), truncateArmor(sshKey.PrivatePEM),
	} {
		f.Add(seed, []byte("pass"))
	}
	keyErrors := []error{
		gitwriter.ErrKeyMalformed, gitwriter.ErrKeyNotPrivate, gitwriter.ErrPassphraseRequired,
		gitwriter.ErrWrongPassphrase, gitwriter.ErrKeyCannotSign,
	}
	f.Fuzz(func(t *testing.T, key, passphrase []byte) {
		s, err := gitwriter.NewSigner(key, passphrase)
		if err != nil {
			for _, want := range keyErrors {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("NewSigner error %v is none of the typed key errors", err)
		}
		if _, err := s.Sign(strings.NewReader("tree 0\n\nmessage\n")); err != nil {
			t.Fatalf("NewSigner accepted a key that cannot sign: %v", err)
		}
	})
}

func BenchmarkSignCommit(b *testing.B) {
	pgp := testutil.NewOpenPGPKey(b, "Alice", "alice@example.com", nil)
	ed := testutil.NewSSHKey(b, nil)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 3072)
	if err != nil {
		b.Fatal(err)
	}
	rsaBlock, err := ssh.MarshalPrivateKey(rsaKey, "bench")
	if err != nil {
		b.Fatal(err)
	}
	payload := signingPayload(b)
	for _, bc := range []struct {
		name string
		key  []byte
	}{
		{"OpenPGP-EdDSA", pgp.PrivateArmored},
		{"SSH-ed25519", ed.PrivatePEM},
		{"SSH-RSA-3072", pem.EncodeToMemory(rsaBlock)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := gitwriter.NewSigner(bc.key, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Sign(bytes.NewReader(payload)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// signingCommitOnDisk makes a real repository in a temporary directory with
// one commit signed by s, through go-git's CommitOptions.Signer.
func signingCommitOnDisk(t *testing.T, s gitwriter.Signer) (string, *object.Commit) {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatalf("init repository: %v", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	writeSigningFile(t, dir, "kustomization.yaml", []byte("images:\n- name: app\n  newTag: 1.2.3\n"))
	if _, err := wt.Add("kustomization.yaml"); err != nil {
		t.Fatal(err)
	}
	who := &object.Signature{Name: "Test Author", Email: "author@example.com", When: time.Now()}
	hash, err := wt.Commit("Promote app to 1.2.3\n", &git.CommitOptions{Author: who, Committer: who, Signer: s})
	if err != nil {
		t.Fatalf("signed commit: %v", err)
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		t.Fatal(err)
	}
	return dir, commit
}

// signingPayload is a commit encoded as git signs it.
func signingPayload(tb testing.TB) []byte {
	tb.Helper()
	who := object.Signature{Name: "Test Author", Email: "author@example.com", When: time.Unix(1_800_000_000, 0)}
	c := &object.Commit{
		Author: who, Committer: who, Message: "Promote app to 1.2.3\n",
		TreeHash:     plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
		ParentHashes: []plumbing.Hash{plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")},
	}
	obj := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(obj); err != nil {
		tb.Fatal(err)
	}
	r, err := obj.Reader()
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// gpgExportedKey has the real gpg generate a key and export it encrypted,
// the way users make Flux's git.asc.
func gpgExportedKey(t *testing.T, name, email string, passphrase []byte) testutil.OpenPGPKey {
	t.Helper()
	home, err := os.MkdirTemp("", "gnupg")
	if err != nil {
		t.Fatal(err)
	}
	// gpg-agent calibrates its S2K count to ~100ms of CPU, which on a loaded
	// machine makes generating and exporting take tens of seconds.
	if err := os.WriteFile(filepath.Join(home, "gpg-agent.conf"), []byte("s2k-count 65536\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GNUPGHOME="+home)
	t.Cleanup(func() {
		cmd := exec.Command("gpgconf", "--kill", "all")
		cmd.Env = env
		_ = cmd.Run()
		_ = os.RemoveAll(home)
	})
	gpg := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("gpg", append([]string{"--batch", "--pinentry-mode", "loopback", "--passphrase", string(passphrase)}, args...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	gpg("--quick-gen-key", name+" <"+email+">", "ed25519", "sign", "never")
	public := gpg("--armor", "--export", email)
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(public))
	if err != nil {
		t.Fatalf("read key exported by gpg: %v", err)
	}
	return testutil.OpenPGPKey{
		Name: name, Email: email,
		PrivateArmored: gpg("--armor", "--export-secret-keys", email),
		PublicArmored:  public,
		Passphrase:     passphrase,
		Fingerprint:    strings.ToUpper(hex.EncodeToString(entities[0].PrimaryKey.Fingerprint)),
	}
}

// sshKeygen has the real ssh-keygen make a private key file in OpenSSH
// format and returns it with its public key line.
func sshKeygen(t *testing.T, keyType string, passphrase []byte) ([]byte, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "id")
	args := []string{"-q", "-t", keyType, "-N", string(passphrase), "-C", "test", "-f", path}
	if keyType == "rsa" {
		args = append(args, "-b", "2048")
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	private, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	public, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return private, strings.TrimSpace(string(public))
}

// expiredOpenPGPKey is a key generated a day ago that expired after an hour.
func expiredOpenPGPKey(t *testing.T) []byte {
	t.Helper()
	created := time.Now().Add(-24 * time.Hour)
	cfg := &packet.Config{
		Algorithm: packet.PubKeyAlgoEdDSA, Curve: packet.Curve25519,
		Time: func() time.Time { return created }, KeyLifetimeSecs: 3600,
	}
	e, err := openpgp.NewEntity("Old", "", "old@example.com", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// truncateArmor cuts an armored block in the middle, as a bad copy-paste does.
func truncateArmor(b []byte) []byte { return b[:len(b)/2] }

func writeSigningFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
