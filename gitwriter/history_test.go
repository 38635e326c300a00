package gitwriter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

func TestHistoryCheck(t *testing.T) {
	at := func(n byte) plumbing.Hash { return plumbing.Hash{n} }
	const test, dev = "Stage/test/test", "Stage/dev/dev"
	test2 := HistoryEntry{Promotion: "dev-to-test-2", Config: "dev-to-test", Sequence: 2, Vector: "acme:2", Target: test, Commit: at(2)}
	test3 := HistoryEntry{Promotion: "dev-to-test-3", Config: "dev-to-test", Sequence: 3, Vector: "acme:3", Target: test, Commit: at(3)}
	dev1 := HistoryEntry{Promotion: "latest-to-dev-1", Config: "latest-to-dev", Sequence: 1, Vector: "acme:1", Target: dev, Commit: at(1)}
	history := NewHistory(at(3), test3, test2, dev1)
	promotion := func(name, config string, seq int64, vector string) Trailers {
		target := test
		if strings.HasPrefix(name, "latest-to-dev") {
			target = dev
		}
		return Trailers{Promotion: name, Config: config, Sequence: seq, Vector: vector, Target: target}
	}
	tests := []struct {
		name         string
		history      *History
		pending      []HistoryEntry
		promotion    Trailers
		onlyIdentity bool
		wantEarlier  *HistoryEntry
		wantReason   string
		wantEntry    HistoryEntry
	}{
		{name: "empty history", history: &History{}, promotion: promotion("dev-to-test-1", "dev-to-test", 1, "acme:1")},
		{name: "the next sequence", history: history, promotion: promotion("dev-to-test-4", "dev-to-test", 4, "acme:4")},
		{name: "an older sequence of the config ran there: superseded", history: history,
			promotion: promotion("dev-to-test-2", "dev-to-test", 2, "acme:2"), wantReason: v1alpha1.PromotionSupersededInTargetReason, wantEntry: test3},
		{name: "the config is read from the name without the trailer", history: history,
			promotion: promotion("dev-to-test-1", "", 1, "acme:1"), wantReason: v1alpha1.PromotionSupersededInTargetReason, wantEntry: test3},
		{name: "a name that does not end in its sequence has no config", history: history,
			promotion: promotion("dev-to-test-manual", "", 1, "acme:1")},
		{name: "another config's sequences do not count", history: history,
			promotion: promotion("latest-to-dev-2", "latest-to-dev", 2, "acme:9")},
		{name: "a config of the same name writing another stage (another config repository) does not count", history: history,
			promotion: Trailers{Promotion: "dev-to-test-1", Config: "dev-to-test", Sequence: 1, Vector: "acme:1", Target: "Stage/qa/test"}},
		{name: "the same promotion and vector: maybe applied", history: history,
			promotion: promotion("dev-to-test-3", "dev-to-test", 3, "acme:3"), wantEarlier: &test3},
		{name: "the same name with another vector: identity reused", history: history,
			promotion: promotion("latest-to-dev-1", "latest-to-dev", 1, "acme:7"), wantReason: v1alpha1.PromotionIdentityReusedReason, wantEntry: dev1},
		{name: "identity reuse is checked even when nothing would be written", history: history, onlyIdentity: true,
			promotion: promotion("latest-to-dev-1", "latest-to-dev", 1, "acme:7"), wantReason: v1alpha1.PromotionIdentityReusedReason, wantEntry: dev1},
		{name: "a newer sequence does not matter when nothing would be written", history: history, onlyIdentity: true,
			promotion: promotion("dev-to-test-1", "dev-to-test", 1, "acme:1")},
		{name: "a newer commit made earlier in the same batch supersedes", history: &History{},
			pending:   []HistoryEntry{{Promotion: "dev-to-test-5", Config: "dev-to-test", Sequence: 5, Vector: "acme:5", Target: test, Commit: at(5)}},
			promotion: promotion("dev-to-test-4", "dev-to-test", 4, "acme:4"), wantReason: v1alpha1.PromotionSupersededInTargetReason,
			wantEntry: HistoryEntry{Promotion: "dev-to-test-5", Config: "dev-to-test", Sequence: 5, Vector: "acme:5", Target: test, Commit: at(5)}},
		{name: "the same promotion made earlier in the same batch", history: &History{},
			pending:   []HistoryEntry{test3},
			promotion: promotion("dev-to-test-3", "dev-to-test", 3, "acme:3"), wantEarlier: &test3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			earlier, err := tt.history.Check(tt.promotion, tt.pending, tt.onlyIdentity)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if diff := cmp.Diff(tt.wantEarlier, earlier); diff != "" {
					t.Errorf("earlier commit (-want +got):\n%s", diff)
				}
				return
			}
			herr, ok := err.(*HistoryError)
			if !ok {
				t.Fatalf("Check = %v, %v; want a HistoryError %s", earlier, err, tt.wantReason)
			}
			if herr.Reason != tt.wantReason || herr.Entry != tt.wantEntry {
				t.Errorf("HistoryError %s at %+v, want %s at %+v", herr.Reason, herr.Entry, tt.wantReason, tt.wantEntry)
			}
			if msg := herr.Error(); !containsAll(msg, tt.wantEntry.Promotion, v1alpha1.ShortCommit(tt.wantEntry.Commit.String()), tt.promotion.Promotion) {
				t.Errorf("the message must name both promotions and the commit: %s", msg)
			}
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestHistoryIndex builds histories from real commit objects: a first
// read, an incremental one that reads only the new commits, a merged pull
// request, and a branch reset to an older commit.
func TestHistoryIndex(t *testing.T) {
	s := &countingStorer{EncodedObjectStorer: memory.NewStorage()}
	root := writeTestCommit(t, s, "initial overlay")
	c1 := writeTestCommit(t, s, promotionMessage("latest-to-dev-1", "", 1, "acme:1"), root)
	hand := writeTestCommit(t, s, "a person edits the overlay\n\nSigned-off-by: someone", c1)
	c2 := writeTestCommit(t, s, promotionMessage("latest-to-dev-2", "latest-to-dev", 2, "acme:2"), hand)

	var x historyIndex
	h, err := x.at(s, c2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"latest-to-dev": 2}
	if diff := cmp.Diff(want, sequences(h)); diff != "" {
		t.Errorf("sequences at c2 (-want +got):\n%s", diff)
	}
	if got := h.Commits("latest-to-dev-1"); len(got) != 1 || got[0].Commit != c1 || got[0].Vector != "acme:1" || got[0].Config != "latest-to-dev" {
		t.Errorf("latest-to-dev-1's commits: %+v", got)
	}
	if !x.contains(c1) || !x.contains(c2) || x.contains(plumbing.Hash{9}) {
		t.Errorf("contains: c1 %v, c2 %v, unknown %v", x.contains(c1), x.contains(c2), x.contains(plumbing.Hash{9}))
	}

	// A pull request made on the root and merged: its promotion counts;
	// only the two new commits are read.
	pr := writeTestCommit(t, s, promotionMessage("dev-to-test-7", "dev-to-test", 7, "acme:2"), root)
	merge := writeTestCommit(t, s, "Merge pull request #7", c2, pr)
	s.reads = 0
	h2, err := x.at(s, merge)
	if err != nil {
		t.Fatal(err)
	}
	if s.reads != 2 {
		t.Errorf("the incremental read loaded %d commits, want the 2 new ones", s.reads)
	}
	want2 := map[string]int64{"latest-to-dev": 2, "dev-to-test": 7}
	if diff := cmp.Diff(want2, sequences(h2)); diff != "" {
		t.Errorf("sequences after the merge (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, sequences(h)); diff != "" {
		t.Errorf("the history handed out before changed (-want +got):\n%s", diff)
	}

	// The branch is reset to c1: the index is rebuilt from it, so what
	// is no longer on the branch no longer counts.
	h3, err := x.at(s, c1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"latest-to-dev": 1}, sequences(h3)); diff != "" {
		t.Errorf("sequences after the reset (-want +got):\n%s", diff)
	}
	if x.contains(c2) {
		t.Errorf("c2 is still indexed after the reset")
	}

	// A promotion run twice (a re-write after its first commit was
	// reverted) lists both commits, newest first.
	again := writeTestCommit(t, s, promotionMessage("latest-to-dev-1", "latest-to-dev", 1, "acme:1"), c1)
	h4, err := x.at(s, again)
	if err != nil {
		t.Fatal(err)
	}
	if got := h4.Commits("latest-to-dev-1"); len(got) != 2 || got[0].Commit != again || got[1].Commit != c1 {
		t.Errorf("latest-to-dev-1's commits, newest first: %+v", got)
	}
}

func sequences(h *History) map[string]int64 {
	out := map[string]int64{}
	for k := range h.newest {
		out[k.config] = h.Sequence(k.config, k.target)
	}
	return out
}

func promotionMessage(name, config string, seq int64, vector string) string {
	return fmt.Sprintf("promote %s\n\n%s", vector, FormatTrailers(Trailers{Promotion: name, Config: config, Sequence: seq,
		Vector: vector, Target: "Stage/dev/dev"}))
}

var testCommitTime = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func writeTestCommit(t testing.TB, s storer.EncodedObjectStorer, message string, parents ...plumbing.Hash) plumbing.Hash {
	t.Helper()
	testCommitTime = testCommitTime.Add(time.Minute)
	sig := object.Signature{Name: "test", Email: "test@example.com", When: testCommitTime}
	treeHash := testutil.StoreObject(t, s, &object.Tree{})
	return testutil.StoreObject(t, s, &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: treeHash, ParentHashes: parents})
}

// countingStorer counts the commits read, to show an incremental read
// reads only new commits.
// TestHistoryRefusesAHoleInTheBranch: a store that lacks one commit of
// the branch (a damaged cache) must fail the read, not yield a history
// that ends at the hole. That history would hold a lower sequence than
// the branch, and the ratchet would let an older promotion through.
func TestHistoryRefusesAHoleInTheBranch(t *testing.T) {
	mem := memory.NewStorage()
	root := writeTestCommit(t, mem, "initial overlay")
	c1 := writeTestCommit(t, mem, promotionMessage("latest-to-dev-1", "latest-to-dev", 1, "acme:1"), root)
	hand := writeTestCommit(t, mem, "a person edits the overlay", c1)
	c5 := writeTestCommit(t, mem, promotionMessage("latest-to-dev-5", "latest-to-dev", 5, "acme:5"), hand)
	c6 := writeTestCommit(t, mem, "a person edits the overlay again", c5)
	s := &testutil.LackingStorer{EncodedObjectStorer: mem, Lacks: c5}

	var x historyIndex
	if h, err := x.at(s, c6); err == nil {
		t.Fatalf("a history read over a missing commit succeeded, with sequences %v", sequences(h))
	}
	// An incremental read from an earlier tip meets the same hole, and a
	// failed read must not leave the hole counted as read.
	x = historyIndex{}
	if _, err := x.at(s, hand); err != nil {
		t.Fatal(err)
	}
	if h, err := x.at(s, c6); err == nil {
		t.Fatalf("an incremental read over a missing commit succeeded, with sequences %v", sequences(h))
	}
	s.Lacks = plumbing.ZeroHash // the store fetched afresh
	h, err := x.at(s, c6)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"latest-to-dev": 5}, sequences(h)); diff != "" {
		t.Errorf("sequences once the store holds the whole branch (-want +got):\n%s", diff)
	}
}

type countingStorer struct {
	storer.EncodedObjectStorer
	reads int
}

func (s *countingStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if t == plumbing.CommitObject || t == plumbing.AnyObject {
		s.reads++
	}
	return s.EncodedObjectStorer.EncodedObject(t, h)
}

// BenchmarkHistoryIndex: the first read of a branch of 10,000 commits (one
// in ten a promotion) walks them all once; a pass after one new commit
// reads that commit only.
func BenchmarkHistoryIndex(b *testing.B) {
	s := memory.NewStorage()
	var tip plumbing.Hash
	for i := 1; i <= 10000; i++ {
		msg := "a person's commit"
		if i%10 == 0 {
			msg = promotionMessage(fmt.Sprintf("latest-to-dev-%d", i/10), "latest-to-dev", int64(i/10), fmt.Sprintf("acme:%d", i))
		}
		if tip.IsZero() {
			tip = writeTestCommit(b, s, msg)
		} else {
			tip = writeTestCommit(b, s, msg, tip)
		}
	}
	b.Run("first read", func(b *testing.B) {
		for range b.N {
			var x historyIndex
			if _, err := x.at(s, tip); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one new commit", func(b *testing.B) {
		var x historyIndex
		if _, err := x.at(s, tip); err != nil {
			b.Fatal(err)
		}
		next := tip
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			next = writeTestCommit(b, s, promotionMessage("p-1", "p", 1, "acme:1"), next)
			b.StartTimer()
			if _, err := x.at(s, next); err != nil {
				b.Fatal(err)
			}
		}
	})
}
