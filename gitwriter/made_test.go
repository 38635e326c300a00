package gitwriter

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// TestPushSendsWhatCommitsWrote: the objects a push lists from what the
// writer's commits wrote are everything reachable from the pushed commit
// that is not reachable from the remote's tip, over random chains of
// edits (files added, changed, removed, directories emptied), and they are
// in the store to be packed.
func TestPushSendsWhatCommitsWrote(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 8))
	dirs := []string{"", "a", "a/b", "apps/x/overlays/dev", "apps/y/overlays/dev", "stages/eu"}
	names := []string{"kustomization.yaml", "a.yaml", "z"}
	w := newTestWriter(t, WriterOptions{})
	for round := 0; round < 100; round++ {
		r := newRepo("https://example.com/r.git", nil, w.made, w.receivers)
		files := map[string]bool{}
		head := plumbing.ZeroHash
		var commits []plumbing.Hash
		for commit := 0; commit < 4; commit++ {
			var edits []FileEdit
			if commit == 0 { // never removed: no commit is empty
				edits = append(edits, SetFile("README", []byte("readme\n")))
			}
			for i := 1 + rnd.IntN(5); i > 0; i-- {
				p := path.Join(dirs[rnd.IntN(len(dirs))], names[rnd.IntN(len(names))])
				if files[p] && rnd.IntN(3) == 0 {
					delete(files, p)
					edits = append(edits, SetFile(p, nil))
					continue
				}
				files[p] = true
				edits = append(edits, SetFile(p, []byte(fmt.Sprint(rnd.IntN(4)))))
			}
			res, next, err := w.commitChange(r, head, nil, nil, Change{Files: edits, Message: func([]FileDiff) string { return "edit" }})
			if err != nil {
				t.Fatal(err)
			}
			if !res.AlreadyApplied {
				commits = append(commits, next)
			}
			head = next
		}
		// Every commit of the chain is the remote's tip in turn.
		for i := range commits {
			base := plumbing.ZeroHash
			if i > 0 {
				base = commits[i-1]
			}
			got, bases, err := r.newObjects(head, base)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok := w.made.chain(head, base); !ok {
				t.Fatalf("round %d: the writer's own commits are not listed from what they wrote", round)
			}
			_, walkedBases, err := changedObjects(r.s, head, base)
			if err != nil {
				t.Fatal(err)
			}
			checkBases(t, r.s, got, bases)
			checkBases(t, r.s, got, walkedBases)
			want := reachable(t, r.s, head)
			for h := range reachable(t, r.s, base) {
				delete(want, h)
			}
			listed := map[plumbing.Hash]bool{}
			for _, h := range got {
				if listed[h] {
					t.Fatalf("round %d: object %s listed twice", round, h)
				}
				listed[h] = true
				if _, err := r.s.EncodedObject(plumbing.AnyObject, h); err != nil {
					t.Fatalf("round %d: listed object %s is not in the store: %v", round, h, err)
				}
			}
			for h := range want {
				if !listed[h] {
					t.Fatalf("round %d, remote at commit %d: object %s reachable from the pushed commit is not sent", round, i, h)
				}
			}
		}
		r.made.forget(head, plumbing.ZeroHash)
		if _, _, ok := w.made.chain(head, plumbing.ZeroHash); ok && len(commits) > 0 {
			t.Fatalf("round %d: pushed commits are still remembered", round)
		}
	}
}

// checkBases checks that each base names, for an object, another listed
// object of the same type: the newer version of the same path. (One listed
// after the object it is the base of is not used: the pack writer takes
// only bases it has written.)
func checkBases(t *testing.T, s storer.EncodedObjectStorer, listed []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash) {
	t.Helper()
	isListed := map[plumbing.Hash]bool{}
	for _, h := range listed {
		isListed[h] = true
	}
	for older, newer := range bases {
		if !isListed[newer] || older == newer {
			t.Fatalf("base %s of %s is not another listed object", newer, older)
		}
		o, err := s.EncodedObject(plumbing.AnyObject, older)
		if err != nil {
			continue // the remote's version: not sent, so never a delta
		}
		n, err := s.EncodedObject(plumbing.AnyObject, newer)
		if err != nil || n.Type() != o.Type() {
			t.Fatalf("base %s of %s is not an object of the same type (%v)", newer, older, err)
		}
	}
}

// versionNoter is a memory store that records the versions it is told of.
type versionNoter struct {
	*memory.Storage
	noted map[plumbing.Hash]plumbing.Hash
}

func (n *versionNoter) NoteVersions(replaced map[plumbing.Hash]plumbing.Hash) {
	maps.Copy(n.noted, replaced)
}

// TestCommitsNoteVersionsToTheStore: a store that packs its objects
// itself is told, for each commit, which tree and blob took the place of
// which (so its compaction packs the older ones as deltas); new files and
// directories replace nothing.
func TestCommitsNoteVersionsToTheStore(t *testing.T) {
	w := newTestWriter(t, WriterOptions{})
	store := &versionNoter{Storage: memory.NewStorage(), noted: map[plumbing.Hash]plumbing.Hash{}}
	r := newRepo("https://example.com/r.git", store, w.made, w.receivers)
	commit := func(parent plumbing.Hash, edits ...FileEdit) plumbing.Hash {
		t.Helper()
		_, next, err := w.commitChange(r, parent, nil, nil, Change{Files: edits, Message: func([]FileDiff) string { return "edit" }})
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	first := commit(plumbing.ZeroHash, SetFile("configs/a.yaml", []byte("sequence: 1\n")), SetFile("README", []byte("readme\n")))
	if len(store.noted) != 0 {
		t.Fatalf("a first commit noted versions: %v", store.noted)
	}
	second := commit(first, SetFile("configs/a.yaml", []byte("sequence: 2\n")), SetFile("configs/b.yaml", []byte("new\n")))
	at := func(c plumbing.Hash, p string) plumbing.Hash {
		t.Helper()
		co, err := object.GetCommit(r.s, c)
		if err != nil {
			t.Fatal(err)
		}
		tree, err := co.Tree()
		if err != nil {
			t.Fatal(err)
		}
		if p == "" {
			return tree.Hash
		}
		e, err := tree.FindEntry(p)
		if err != nil {
			t.Fatal(err)
		}
		return e.Hash
	}
	want := map[plumbing.Hash]plumbing.Hash{}
	for _, p := range []string{"", "configs", "configs/a.yaml"} {
		want[at(second, p)] = at(first, p)
	}
	if !maps.Equal(store.noted, want) {
		t.Errorf("noted %v, want the root, configs/ and configs/a.yaml of the second commit replacing the first's: %v", store.noted, want)
	}
}

// TestPushWalksCommitsItDidNotMake: a commit the writer does not know
// (another process made it, or the record was dropped) is listed by
// walking its trees.
func TestPushWalksCommitsItDidNotMake(t *testing.T) {
	r, base, head := wideCommits(t, 20, SetFile("stages/dev/app007.yaml", []byte("moved\n")))
	stranger := newRepo("https://example.com/r.git", nil, newMadeCommits(), newReceivers())
	stranger.s = r.s
	got, _, err := stranger.newObjects(head, base)
	if err != nil {
		t.Fatal(err)
	}
	// The commit, the root, stages/, stages/dev/ and the blob.
	if len(got) != 5 {
		t.Fatalf("listed %d objects by walking, want 5: %v", len(got), got)
	}
}

// wideCommits makes, in a new writer's repo, a commit of wideRepository(n)
// and one on it with edits.
func wideCommits(tb testing.TB, n int, edits ...FileEdit) (r *repo, base, head plumbing.Hash) {
	tb.Helper()
	w := newTestWriter(tb, WriterOptions{})
	r = newRepo("https://example.com/r.git", nil, w.made, w.receivers)
	_, base, err := w.commitChange(r, plumbing.ZeroHash, nil, nil, Change{Files: filesEdits(wideRepository(n)), Message: func([]FileDiff) string { return "seed" }})
	if err != nil {
		tb.Fatal(err)
	}
	_, head, err = w.commitChange(r, base, nil, nil, Change{Files: edits, Message: func([]FileDiff) string { return "edit" }})
	if err != nil {
		tb.Fatal(err)
	}
	return r, base, head
}

// reachable is every object reachable from commit, walked whole.
func reachable(t *testing.T, s storer.EncodedObjectStorer, commit plumbing.Hash) map[plumbing.Hash]bool {
	t.Helper()
	out := map[plumbing.Hash]bool{}
	var walk func(tree plumbing.Hash)
	walk = func(tree plumbing.Hash) {
		out[tree] = true
		tr, err := object.GetTree(s, tree)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tr.Entries {
			if e.Mode == filemode.Dir {
				walk(e.Hash)
			} else {
				out[e.Hash] = true
			}
		}
	}
	for h := commit; !h.IsZero(); {
		c, err := object.GetCommit(s, h)
		if err != nil {
			t.Fatal(err)
		}
		out[h] = true
		walk(c.TreeHash)
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return out
}

// BenchmarkPushObjects lists what a push of one commit sends, a file
// changed in each of two directories of 10,000 entries (a promotion and
// its state record at 10,000 stages): walking the trees against their old
// versions, or from what the commit wrote.
//
//	go test ./gitwriter -run '^$' -bench PushObjects
func BenchmarkPushObjects(b *testing.B) {
	r, base, head := wideCommits(b, 10000,
		SetFile("apps/app4242/overlays/dev/kustomization.yaml", []byte("promoted\n")),
		SetFile("stages/dev/app4242.yaml", []byte("recorded\n")))
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := changedObjects(r.s, head, base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("made", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := r.newObjects(head, base); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPushListsALongHeldChainFromWhatItWrote: a held run (run --once)
// pushes every commit of its passes at once, 10,000 promotions at 10,000
// automatic stages and the state commits beside them; the record holds
// them all, or the push walks 10,000 commits' trees (10 s on the issue's
// 10,000-stage repository).
func TestPushListsALongHeldChainFromWhatItWrote(t *testing.T) {
	w := newTestWriter(t, WriterOptions{})
	r := newRepo("https://example.com/r.git", nil, w.made, w.receivers)
	const commits = 10001
	head := plumbing.ZeroHash
	var base plumbing.Hash
	for i := range commits {
		_, next, err := w.commitChange(r, head, nil, nil, Change{
			Files:   []FileEdit{SetFile(fmt.Sprintf("apps/app%d/overlays/dev/kustomization.yaml", i%100), []byte(fmt.Sprint(i)))},
			Message: func([]FileDiff) string { return "promote" }})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			base = next
		}
		head = next
	}
	objects, _, ok := w.made.chain(head, base)
	if !ok {
		t.Fatalf("the %d commits a held run made are not listed from what they wrote", commits-1)
	}
	// Each commit: itself, the root, apps/, apps/appN/, overlays/, dev/
	// and the blob.
	if want := 7 * (commits - 1); len(objects) != want {
		t.Errorf("listed %d objects, want %d", len(objects), want)
	}
}
