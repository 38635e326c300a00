package controller

import (
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// signedWriter is a writer signing with a fresh key: a controller trusts
// its own state commits by their signature, so it needs one.
func signedWriter(t testing.TB) *gitwriter.Writer {
	t.Helper()
	return oneKeyWriters(t)()
}

// oneKeyWriters makes writers signing with one fresh key: each restarted
// controller is a new process, with a writer of its own.
func oneKeyWriters(t testing.TB) func() *gitwriter.Writer {
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	return func() *gitwriter.Writer {
		signer, err := gitwriter.NewSigner(key.PrivateArmored, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
			Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
}

// TestNewNeedsAStateSigner: a controller whose writer does not sign, with
// no other state signer, could not trust even its own state commits.
func TestNewNeedsAStateSigner(t *testing.T) {
	unsigned, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{URL: "http://example.com/acme.git", Branch: "main", Writer: unsigned}); err == nil ||
		!strings.Contains(err.Error(), "no trusted state signer") {
		t.Fatalf("New with an unsigned writer and no state signers: %v, want a refusal", err)
	}
	other := testutil.NewSSHKey(t, nil)
	if _, err := New(Options{URL: "http://example.com/acme.git", Branch: "main", Writer: unsigned,
		StateSigners: []gitwriter.TrustedKey{{Name: "other", PublicKey: other.AuthorizedKey}}}); err != nil {
		t.Fatalf("New with a state signer: %v", err)
	}
}
