package controller

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
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
	if v.Trusted || v.Refused == nil || v.Refused.Commit != forged.String() || v.LastTrusted != trusted.String() {
		t.Fatalf("verdict of a merge of a forgery: %+v, want the forgery %s refused", v, forged)
	}
	want := []trust.PathChange{{Path: "promotions/a-1.yaml", Action: trust.PathModified}}
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
	if v, err = tr.Verify(h.store, revert, nil); err != nil || !v.Trusted || v.LastTrusted != revert.String() {
		t.Fatalf("verdict of the revert: %+v, %v; want trusted", v, err)
	}
	if got, ok := tr.Known(forged); !ok || got.Trusted {
		t.Errorf("the forgery's verdict changed after the heal: %+v", got)
	}
}

// TestDiffTreesFlagsMalformedEntries: a tree git would not write (a name
// twice, a name with a slash, . or ..) is a change of its own, whatever
// path it is at: readers disagree on what such a tree holds.
func TestDiffTreesFlagsMalformedEntries(t *testing.T) {
	s := memory.NewStorage()
	put := func(tr *object.Tree) plumbing.Hash { return testutil.StoreObject(t, s, tr) }
	blob := func(content string) plumbing.Hash { return testutil.StoreBlob(t, s, []byte(content)) }
	real := put(&object.Tree{Entries: []object.TreeEntry{{Name: "a-1.yaml", Mode: filemode.Regular, Hash: blob("waiting")}}})
	forged := put(&object.Tree{Entries: []object.TreeEntry{
		{Name: "a-1.yaml", Mode: filemode.Regular, Hash: blob("waiting")},
		{Name: "a-2.yaml", Mode: filemode.Regular, Hash: blob("approved")}}})
	parent := put(&object.Tree{Entries: []object.TreeEntry{{Name: "promotions", Mode: filemode.Dir, Hash: real}}})
	tests := []struct {
		name    string
		entries []object.TreeEntry
		want    []trust.PathChange
	}{{
		name: "a forged directory before the real one",
		entries: []object.TreeEntry{
			{Name: reconcilers.ApprovalsDir, Mode: filemode.Dir, Hash: real},
			{Name: "promotions", Mode: filemode.Dir, Hash: forged},
			{Name: "promotions", Mode: filemode.Dir, Hash: real}},
		want: []trust.PathChange{{Path: "promotions", Action: trust.PathMalformed}, {Path: "approvals/", Action: trust.PathAdded}},
	}, {
		// A whole new approvals/ is records whatever it holds: every file
		// under it is read as an approval, and judged on its own.
		name: "a name with a slash inside a new approvals directory",
		entries: []object.TreeEntry{
			{Name: reconcilers.ApprovalsDir, Mode: filemode.Dir, Hash: put(&object.Tree{Entries: []object.TreeEntry{{Name: "../promotions", Mode: filemode.Dir, Hash: forged}}})},
			{Name: "promotions", Mode: filemode.Dir, Hash: real}},
		want: []trust.PathChange{{Path: "approvals/", Action: trust.PathAdded}},
	}, {
		name: "a dot name",
		entries: []object.TreeEntry{
			{Name: "..", Mode: filemode.Dir, Hash: forged},
			{Name: "promotions", Mode: filemode.Dir, Hash: real}},
		want: []trust.PathChange{{Path: "..", Action: trust.PathMalformed}, {Path: "../", Action: trust.PathAdded}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []trust.PathChange
			if err := diffTrees(s, parent, put(&object.Tree{Entries: tt.entries}), "", &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommitThatAddedFindsTheContentsOrigin: a request is judged by the
// commit that gave it the content it has, not by the one that first added
// its path. An unsigned commit rewrites a request a trusted key added, and
// a state signer's commit that restores the trusted content (requests
// aside) heals the branch around it: the rewritten request is the unsigned
// commit's word.
func TestCommitThatAddedFindsTheContentsOrigin(t *testing.T) {
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signer, err := gitwriter.NewSigner(key.PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &trustHistory{store: memory.NewStorage(), signer: signer}
	root := func(request string) plumbing.Hash {
		cfg := h.tree(t, map[string]plumbing.Hash{"x.yaml": h.blob(t, request)}, filemode.Regular)
		return h.tree(t, map[string]plumbing.Hash{reconcilers.RequestsDir: h.tree(t, map[string]plumbing.Hash{"c": cfg}, filemode.Dir)}, filemode.Dir)
	}
	added := h.write(t, root("vector: acme:1\n"), true, 0)
	rewritten := h.write(t, root("vector: acme:2\n"), false, 1, added)
	healed := h.write(t, root("vector: acme:2\n"), true, 2, rewritten)
	got, err := commitThatAdded(h.store, healed, "requests/c/x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != rewritten {
		t.Errorf("the request's content came from %s, commitThatAdded says %s", rewritten, got.Hash)
	}
}
