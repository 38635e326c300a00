package controller

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// TestStateTrustWalksEveryParent: a forgery reachable only through the
// second parent of a merge taints the tip, and a commit judged once is not
// judged again (its verdict stays when the walk meets it from a new tip).
func TestStateTrustWalksEveryParent(t *testing.T) {
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signer, err := gitwriter.NewSigner(key.PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &trustHistory{store: memory.NewStorage(), signer: signer}
	file := func(content string) plumbing.Hash { return h.blob(t, content) }
	root := func(promotion string, approvals map[string]plumbing.Hash) plumbing.Hash {
		entries := map[string]plumbing.Hash{"promotions": h.tree(t, map[string]plumbing.Hash{"a-1.yaml": file(promotion)}, filemode.Regular)}
		if approvals != nil {
			entries[reconcilers.ApprovalsDir] = h.tree(t, approvals, filemode.Regular)
		}
		return h.tree(t, entries, filemode.Dir)
	}
	trusted := h.write(t, root("waiting", nil), true, 0)
	forged := h.write(t, root("approved", nil), false, 1, trusted)
	withApproval := root("waiting", map[string]plumbing.Hash{"a-1.yaml": file("alice")})
	merge := h.write(t, withApproval, false, 2, trusted, forged)

	tr, err := NewStateTrust([]gitwriter.TrustedKey{{Name: "vectorflow", PublicKey: signer.PublicKey()}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := tr.Verify(h.store, merge, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Trusted || v.Refused == nil || v.Refused.Commit != forged || v.LastTrusted != trusted {
		t.Fatalf("verdict of a merge of a forgery: %+v, want the forgery %s refused", v, forged)
	}
	want := []PathChange{{Path: "promotions/a-1.yaml", Action: PathModified}}
	if diff := cmp.Diff(want, v.Refused.Changes); diff != "" {
		t.Errorf("changes of the forgery (-want +got):\n%s", diff)
	}
	if v.Refused.Signer != "unsigned" {
		t.Errorf("signer %q, want unsigned", v.Refused.Signer)
	}

	// The controller's revert of the merge restores the trusted content
	// (approvals aside) and heals the branch; the approval added by the
	// merge may stay.
	revert := h.write(t, withApproval, true, 3, merge)
	if v, err = tr.Verify(h.store, revert, nil); err != nil || !v.Trusted || v.LastTrusted != revert {
		t.Fatalf("verdict of the revert: %+v, %v; want trusted", v, err)
	}
	if got, ok := tr.Known(forged); !ok || got.Trusted {
		t.Errorf("the forgery's verdict changed after the heal: %+v", got)
	}
}
