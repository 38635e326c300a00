package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOpenPGPKeyIsReadByGPG: the keys tests sign with are ones the real gpg
// 2.2 accepts — the public key imported and ultimately trusted, the
// encrypted private key importable with its passphrase.
func TestOpenPGPKeyIsReadByGPG(t *testing.T) {
	for _, passphrase := range [][]byte{nil, []byte("correct horse")} {
		key := NewOpenPGPKey(t, "Alice", "alice@example.com", passphrase)
		env := GPGHome(t, key)

		out, err := runTool(env, nil, "gpg", "--batch", "--with-colons", "--list-keys", "alice@example.com")
		if err != nil {
			t.Fatalf("gpg --list-keys: %v\n%s", err, out)
		}
		got := gpgColons(string(out))
		want := map[string]string{
			"pub": "u:255:22", // ultimately trusted, 255 bits, EdDSA
			"fpr": key.Fingerprint,
			"uid": "Alice <alice@example.com>",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("gpg's view of the key (-want +got):\n%s", diff)
		}

		out, err = runTool(env, key.PrivateArmored, "gpg", "--batch", "--pinentry-mode", "loopback",
			"--passphrase", string(passphrase), "--import")
		if err != nil {
			t.Fatalf("gpg --import of the private key (passphrase %q): %v\n%s", passphrase, err, out)
		}
		if !strings.Contains(string(out), "secret keys imported: 1") {
			t.Errorf("gpg did not import the secret key (passphrase %q):\n%s", passphrase, out)
		}
	}
}

// TestSSHKeyIsReadBySSHKeygen: ssh-keygen derives the same public key from
// the private key file, with the passphrase when there is one.
func TestSSHKeyIsReadBySSHKeygen(t *testing.T) {
	for _, passphrase := range [][]byte{nil, []byte("s3cret")} {
		key := NewSSHKey(t, passphrase)
		path := filepath.Join(t.TempDir(), "id")
		if err := os.WriteFile(path, key.PrivatePEM, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ssh-keygen", "-y", "-P", string(passphrase), "-f", path).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen -y (passphrase %q): %v\n%s", passphrase, err, out)
		}
		if diff := cmp.Diff(keyWithoutComment(key.AuthorizedKey), keyWithoutComment(string(out))); diff != "" {
			t.Errorf("public key (-want +got):\n%s", diff)
		}
	}
}

func TestSSHAllowedSigners(t *testing.T) {
	a, b := NewSSHKey(t, nil), NewSSHKey(t, nil)
	content, err := os.ReadFile(SSHAllowedSigners(t, "alice@example.com", a, b))
	if err != nil {
		t.Fatal(err)
	}
	want := "alice@example.com " + a.AuthorizedKey + "\nalice@example.com " + b.AuthorizedKey + "\n"
	if diff := cmp.Diff(want, string(content)); diff != "" {
		t.Errorf("allowed signers (-want +got):\n%s", diff)
	}
}

func BenchmarkNewOpenPGPKey(b *testing.B) {
	for b.Loop() {
		NewOpenPGPKey(b, "Alice", "alice@example.com", nil)
	}
}

func BenchmarkNewSSHKey(b *testing.B) {
	for b.Loop() {
		NewSSHKey(b, nil)
	}
}

// gpgColons picks the fields tests care about from `gpg --with-colons`.
func gpgColons(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ":")
		switch {
		case f[0] == "pub" && len(f) > 3:
			got["pub"] = strings.Join(f[1:4], ":")
		case f[0] == "fpr" && len(f) > 9 && got["fpr"] == "":
			got["fpr"] = f[9] // the primary key's; subkeys follow
		case f[0] == "uid" && len(f) > 9:
			got["uid"] = f[9]
		}
	}
	return got
}

func keyWithoutComment(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return line
	}
	return f[0] + " " + f[1]
}
