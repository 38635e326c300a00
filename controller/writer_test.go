package controller

import (
	"testing"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// signedWriter is a writer signing with a fresh key: a controller trusts
// its own state commits by their signature, so it needs one.
func signedWriter(t testing.TB) *gitwriter.Writer {
	t.Helper()
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
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
