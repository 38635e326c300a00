package gitwriter_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

func TestVerifyCommit(t *testing.T) {
	alice := testutil.NewOpenPGPKey(t, "Alice", "alice@example.com", nil)
	bob := testutil.NewSSHKey(t, nil)
	carol := testutil.NewOpenPGPKey(t, "Carol", "carol@example.com", nil) // not trusted
	dave := testutil.NewSSHKey(t, nil)                                    // not trusted
	v, err := gitwriter.NewVerifier([]gitwriter.TrustedKey{
		{Name: "alice", PublicKey: string(alice.PublicArmored)},
		{Name: "bob", PublicKey: bob.AuthorizedKey},
	})
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	st := memory.NewStorage()
	bySigner := func(key []byte) func(t *testing.T, payload []byte) string {
		return func(t *testing.T, payload []byte) string {
			s, err := gitwriter.NewSigner(key, nil)
			if err != nil {
				t.Fatalf("NewSigner: %v", err)
			}
			sig, err := s.Sign(bytes.NewReader(payload))
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			return string(sig)
		}
	}
	aliceSigns, bobSigns := bySigner(alice.PrivateArmored), bySigner(bob.PrivatePEM)

	tests := []struct {
		name       string
		commit     func(t *testing.T) *object.Commit
		wantSigner string
		wantErr    error
	}{
		{
			name:       "OpenPGP, trusted",
			commit:     func(t *testing.T) *object.Commit { return verifyTestCommit(t, st, "approve 1", aliceSigns) },
			wantSigner: "alice",
		},
		{
			name:       "SSH, trusted",
			commit:     func(t *testing.T) *object.Commit { return verifyTestCommit(t, st, "approve 2", bobSigns) },
			wantSigner: "bob",
		},
		{
			name: "OpenPGP, untrusted",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 3", bySigner(carol.PrivateArmored))
			},
			wantErr: gitwriter.ErrUnknownSigner,
		},
		{
			name: "SSH, untrusted",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 4", bySigner(dave.PrivatePEM))
			},
			wantErr: gitwriter.ErrUnknownSigner,
		},
		{
			name:    "unsigned",
			commit:  func(t *testing.T) *object.Commit { return verifyTestCommit(t, st, "approve 5", nil) },
			wantErr: gitwriter.ErrUnsigned,
		},
		{
			name: "OpenPGP, message tampered",
			commit: func(t *testing.T) *object.Commit {
				return tamperCommit(t, st, verifyTestCommit(t, st, "approve 6", aliceSigns), "approve 6", "approve 7")
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "SSH, message tampered",
			commit: func(t *testing.T) *object.Commit {
				return tamperCommit(t, st, verifyTestCommit(t, st, "approve 8", bobSigns), "approve 8", "approve 9")
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "SSH, author tampered",
			commit: func(t *testing.T) *object.Commit {
				return tamperCommit(t, st, verifyTestCommit(t, st, "approve 10", bobSigns), "Test Author", "Eve Author")
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "OpenPGP, garbage signature",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 11", func(*testing.T, []byte) string {
					return "-----BEGIN PGP SIGNATURE-----\n\nbm90IGEgc2lnbmF0dXJl\n-----END PGP SIGNATURE-----\n"
				})
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "two signatures",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 12", func(t *testing.T, p []byte) string {
					return aliceSigns(t, p) + bobSigns(t, p)
				})
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "unknown signature format",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 13", func(*testing.T, []byte) string {
					return "-----BEGIN SIGNED MESSAGE-----\nMIIB\n-----END SIGNED MESSAGE-----\n"
				})
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "SSH, trusted key but another namespace",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 14", sshSignsInNamespace(bob, "file"))
			},
			wantErr: gitwriter.ErrBadSignature,
		},
		{
			name: "OpenPGP, dated 2 minutes ahead (clock skew)",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 15", openPGPSignsAt(alice, time.Now().Add(2*time.Minute)))
			},
			wantSigner: "alice",
		},
		{
			name: "OpenPGP, dated an hour ahead",
			commit: func(t *testing.T) *object.Commit {
				return verifyTestCommit(t, st, "approve 16", openPGPSignsAt(alice, time.Now().Add(time.Hour)))
			},
			wantErr: gitwriter.ErrBadSignature,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signer, err := v.VerifyCommit(tt.commit(t))
			t.Logf("VerifyCommit: signer %q, error: %v", signer, err)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("VerifyCommit error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantSigner, signer); diff != "" {
				t.Errorf("VerifyCommit signer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewVerifierNamesTheBadKey(t *testing.T) {
	alice := testutil.NewOpenPGPKey(t, "Alice", "alice@example.com", nil)
	bob := testutil.NewSSHKey(t, nil)
	tests := []struct {
		name    string
		keys    []gitwriter.TrustedKey
		wantErr []string // substrings of the error
	}{
		{
			name:    "garbage",
			keys:    []gitwriter.TrustedKey{{Name: "alice", PublicKey: string(alice.PublicArmored)}, {Name: "bob", PublicKey: "ssh-ed25519 notbase64"}},
			wantErr: []string{`"bob"`, "neither an armored OpenPGP public key block nor an SSH public key line"},
		},
		{
			name:    "truncated OpenPGP block",
			keys:    []gitwriter.TrustedKey{{Name: "alice", PublicKey: string(alice.PublicArmored[:len(alice.PublicArmored)/2])}},
			wantErr: []string{`"alice"`, "not a valid armored OpenPGP public key"},
		},
		{
			name:    "private key",
			keys:    []gitwriter.TrustedKey{{Name: "bob", PublicKey: string(bob.PrivatePEM)}},
			wantErr: []string{`"bob"`, "holds a private key"},
		},
		{
			name:    "same key twice",
			keys:    []gitwriter.TrustedKey{{Name: "bob", PublicKey: bob.AuthorizedKey}, {Name: "robert", PublicKey: bob.AuthorizedKey}},
			wantErr: []string{`"robert"`, `also trusted as "bob"`},
		},
		{
			name:    "no name",
			keys:    []gitwriter.TrustedKey{{PublicKey: bob.AuthorizedKey}},
			wantErr: []string{"trusted key 0 has no name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := gitwriter.NewVerifier(tt.keys)
			if err == nil {
				t.Fatalf("NewVerifier succeeded, want an error containing %q", tt.wantErr)
			}
			if v != nil {
				t.Errorf("NewVerifier returned a verifier along with error %v", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("NewVerifier error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// verifyTestCommit stores a commit signed by sign (nil: unsigned) and reads
// it back from storage, as VerifyCommit sees commits of a fetched branch.
func verifyTestCommit(t *testing.T, st *memory.Storage, message string, sign func(*testing.T, []byte) string) *object.Commit {
	t.Helper()
	who := object.Signature{Name: "Test Author", Email: "author@example.com", When: time.Unix(1_800_000_000, 0).UTC()}
	c := &object.Commit{
		Author: who, Committer: who, Message: message + "\n",
		TreeHash: plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
	}
	if sign != nil {
		payload := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(payload); err != nil {
			t.Fatal(err)
		}
		c.PGPSignature = sign(t, readObject(t, payload))
	}
	obj := st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := object.GetCommit(st, h)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// tamperCommit rewrites the stored bytes of c, keeping its signature header,
// as someone editing a signed commit would.
func tamperCommit(t *testing.T, st *memory.Storage, c *object.Commit, old, replacement string) *object.Commit {
	t.Helper()
	orig, err := st.EncodedObject(plumbing.CommitObject, c.Hash)
	if err != nil {
		t.Fatal(err)
	}
	raw := readObject(t, orig)
	if !bytes.Contains(raw, []byte(old)) {
		t.Fatalf("commit %s does not contain %q", c.Hash, old)
	}
	obj := st.NewEncodedObject()
	obj.SetType(plumbing.CommitObject)
	w, err := obj.Writer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Replace(raw, []byte(old), []byte(replacement), 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := object.GetCommit(st, h)
	if err != nil {
		t.Fatal(err)
	}
	return tampered
}

func readObject(t *testing.T, o plumbing.EncodedObject) []byte {
	t.Helper()
	r, err := o.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openPGPSignsAt signs as if the signer's clock read at.
func openPGPSignsAt(key testutil.OpenPGPKey, at time.Time) func(*testing.T, []byte) string {
	return func(t *testing.T, payload []byte) string {
		entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key.PrivateArmored))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		cfg := &packet.Config{Time: func() time.Time { return at }}
		if err := openpgp.ArmoredDetachSign(&b, entities[0], bytes.NewReader(payload), cfg); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
}

func sshSignsInNamespace(key testutil.SSHKey, namespace string) func(*testing.T, []byte) string {
	return func(t *testing.T, payload []byte) string {
		s, err := ssh.ParsePrivateKey(key.PrivatePEM)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := sshsig.Sign(bytes.NewReader(payload), s, sshsig.HashSHA512, namespace)
		if err != nil {
			t.Fatal(err)
		}
		return string(sshsig.Armor(sig))
	}
}
