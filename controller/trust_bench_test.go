package controller

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// benchStateHistory is the depth of the state branch the trust walk is
// measured on.
const benchStateHistory = 10000

// BenchmarkStateTrust measures the trust walk over a state branch of
// 10,000 commits: four in five signed by the controller (each rewriting a
// promotion), one in five unsigned, adding an approval.
//   - first-walk: a controller that just started judges every commit;
//   - unchanged-tip: what every later pass pays when the tip did not move;
//   - one-new-commit: the tip moved by one commit.
func BenchmarkStateTrust(b *testing.B) {
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signer, err := gitwriter.NewSigner(key.PrivateArmored, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := newTrustHistory(b, signer, benchStateHistory)
	signers := []gitwriter.TrustedKey{{Name: "vectorflow", PublicKey: signer.PublicKey()}}
	walk := func(b *testing.B, tr *StateTrust, tip plumbing.Hash) {
		v, err := tr.Verify(h.store, tip, nil)
		if err != nil || !v.Trusted {
			b.Fatalf("verdict %+v, err %v", v, err)
		}
	}
	b.Run("first-walk", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tr, err := NewStateTrust(signers)
			if err != nil {
				b.Fatal(err)
			}
			walk(b, tr, h.tip)
		}
	})
	b.Run("unchanged-tip", func(b *testing.B) {
		tr, err := NewStateTrust(signers)
		if err != nil {
			b.Fatal(err)
		}
		walk(b, tr, h.tip)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			walk(b, tr, h.tip)
		}
	})
	b.Run("one-new-commit", func(b *testing.B) {
		tr, err := NewStateTrust(signers)
		if err != nil {
			b.Fatal(err)
		}
		walk(b, tr, h.tip)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tip := h.commit(b, i%5 != 1, benchStateHistory+i)
			b.StartTimer()
			walk(b, tr, tip)
		}
	})
}

// trustHistory builds a state branch in memory with go-git's plumbing.
type trustHistory struct {
	store  *memory.Storage
	signer gitwriter.Signer
	tip    plumbing.Hash
	// promotions and approvals are the files of the two directories; the
	// approvals are spread over subdirectories of 100 so that no tree is
	// rebuilt whole for each commit.
	promotions map[string]plumbing.Hash
	approvals  map[string]map[string]plumbing.Hash
	approvalsT map[string]plumbing.Hash
}

func newTrustHistory(b *testing.B, signer gitwriter.Signer, n int) *trustHistory {
	h := &trustHistory{store: memory.NewStorage(), signer: signer, promotions: map[string]plumbing.Hash{},
		approvals: map[string]map[string]plumbing.Hash{}, approvalsT: map[string]plumbing.Hash{}}
	for i := 0; i < n; i++ {
		h.tip = h.commit(b, i%5 != 1, i)
	}
	return h
}

// commit adds one commit on the tip: signed, it rewrites a promotion;
// unsigned, it adds an approval.
func (h *trustHistory) commit(b testing.TB, signed bool, i int) plumbing.Hash {
	if signed {
		h.promotions[fmt.Sprintf("p-%d.yaml", i%50)] = h.blob(b, fmt.Sprintf("promotion %d\n", i))
	} else {
		dir := fmt.Sprintf("%03d", i/500)
		if h.approvals[dir] == nil {
			h.approvals[dir] = map[string]plumbing.Hash{}
		}
		h.approvals[dir][fmt.Sprintf("a-%d.yaml", i)] = h.blob(b, fmt.Sprintf("approval %d\n", i))
		h.approvalsT[dir] = h.tree(b, h.approvals[dir], filemode.Regular)
	}
	root := map[string]plumbing.Hash{"promotions": h.tree(b, h.promotions, filemode.Regular)}
	if len(h.approvalsT) > 0 {
		root[reconcilers.ApprovalsDir] = h.tree(b, h.approvalsT, filemode.Dir)
	}
	var parents []plumbing.Hash
	if !h.tip.IsZero() {
		parents = []plumbing.Hash{h.tip}
	}
	h.tip = h.write(b, h.tree(b, root, filemode.Dir), signed, i, parents...)
	return h.tip
}

// write stores a commit of tree on parents, signed with h's signer or not.
func (h *trustHistory) write(b testing.TB, tree plumbing.Hash, signed bool, i int, parents ...plumbing.Hash) plumbing.Hash {
	who := object.Signature{Name: "vectorflow", Email: "vectorflow@vectorflow.dev", When: time.Unix(1764000000+int64(i), 0)}
	c := &object.Commit{Author: who, Committer: who, Message: fmt.Sprintf("commit %d\n", i), TreeHash: tree, ParentHashes: parents}
	if signed {
		payload := &plumbing.MemoryObject{}
		if err := c.EncodeWithoutSignature(payload); err != nil {
			b.Fatal(err)
		}
		r, _ := payload.Reader()
		sig, err := h.signer.Sign(r)
		if err != nil {
			b.Fatal(err)
		}
		c.PGPSignature = string(sig)
	}
	obj := h.store.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		b.Fatal(err)
	}
	hash, err := h.store.SetEncodedObject(obj)
	if err != nil {
		b.Fatal(err)
	}
	return hash
}

func (h *trustHistory) blob(b testing.TB, content string) plumbing.Hash {
	obj := h.store.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, _ := obj.Writer()
	if _, err := w.Write([]byte(content)); err != nil {
		b.Fatal(err)
	}
	_ = w.Close()
	hash, err := h.store.SetEncodedObject(obj)
	if err != nil {
		b.Fatal(err)
	}
	return hash
}

func (h *trustHistory) tree(b testing.TB, entries map[string]plumbing.Hash, mode filemode.FileMode) plumbing.Hash {
	t := &object.Tree{}
	for name, hash := range entries {
		m := mode
		if name == "promotions" || name == reconcilers.ApprovalsDir {
			m = filemode.Dir
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: m, Hash: hash})
	}
	// git orders a tree's entries by name, directories as if they ended in "/".
	sort.Slice(t.Entries, func(i, j int) bool { return sortName(t.Entries[i]) < sortName(t.Entries[j]) })
	obj := h.store.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		b.Fatal(err)
	}
	hash, err := h.store.SetEncodedObject(obj)
	if err != nil {
		b.Fatal(err)
	}
	return hash
}

func sortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}
