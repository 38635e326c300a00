package gitwriter

import (
	"context"
	"errors"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestSharedStoreWritesWithoutFetching: a writer sharing the store a reader
// just fetched the branch into builds on the tip the reader saw and pushes
// at once, one request in all; when the branch moved since, the push's
// compare-and-swap refuses it and the writer fetches and retries, keeping
// the other writer's commit.
func TestSharedStoreWritesWithoutFetching(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	remote, proxy := r.proxiedRemote(t)
	target := Target{Remote: remote, Branch: "main"}
	ctx := context.Background()

	store := memory.NewStorage()
	reader, err := git.Init(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}}); err != nil {
		t.Fatal(err)
	}
	read := func() plumbing.Hash {
		t.Helper()
		err := reader.FetchContext(ctx, &git.FetchOptions{Auth: remote.Auth, Force: true,
			RefSpecs: []config.RefSpec{"+refs/heads/main:refs/remotes/origin/main"}})
		if err != nil && err != git.NoErrAlreadyUpToDate {
			t.Fatal(err)
		}
		ref, err := reader.Reference("refs/remotes/origin/main", true)
		if err != nil {
			t.Fatal(err)
		}
		return ref.Hash()
	}
	w := newTestWriter(t, WriterOptions{})
	w.ShareStore(remote.URL, store)
	seen := read()
	if ok, err := w.Saw(ctx, target, seen); err != nil || !ok {
		t.Fatalf("Saw(%s) = %v, %v; want the tip taken", seen, ok, err)
	}

	proxy.Reset()
	if _, err := w.History(ctx, target, seen); err != nil {
		t.Fatal(err)
	}
	res, err := w.Apply(ctx, target, promotionChange("p1", 1, lineEdit("settings.env", "a", "1")))
	if err != nil {
		t.Fatal(err)
	}
	if got := proxy.Reset(); got.Total() != 1 || got[testutil.Push] != 1 {
		t.Errorf("history and a write on the tip just read took %s, want one push", got)
	}
	if tip := r.tip(t, "main"); tip != res[0].Commit.String() {
		t.Fatalf("main is at %s, want the promotion %s", tip, res[0].Commit)
	}
	if c, err := object.GetCommit(store, res[0].Commit); err != nil || c.ParentHashes[0] != seen {
		t.Fatalf("the promotion commit is not in the shared store on top of %s: %v", seen, err)
	}
	// The reader's next fetch finds the writer's commit in the store: an
	// advertisement, no pack.
	if got := read(); got != res[0].Commit {
		t.Fatalf("the reader fetched %s, want %s", got, res[0].Commit)
	}
	if got := proxy.Reset(); got.Total() != 1 || got[testutil.ListForFetch] != 1 {
		t.Errorf("fetching what the writer pushed took %s, want one advertisement", got)
	}

	// Another writer moves main; this one is told the tip it saw before.
	other := newTestWriter(t, WriterOptions{})
	if _, err := other.Apply(ctx, Target{Remote: r.httpRemote(), Branch: "main"}, promotionChange("p2", 2, lineEdit("settings.env", "b", "2"))); err != nil {
		t.Fatal(err)
	}
	foreign := r.tip(t, "main")
	if _, err := w.Saw(ctx, target, res[0].Commit); err != nil {
		t.Fatal(err)
	}
	res, err = w.Apply(ctx, target, promotionChange("p3", 3, lineEdit("settings.env", "c", "3")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := object.GetCommit(store, res[0].Commit)
	if err != nil || c.ParentHashes[0].String() != foreign {
		t.Fatalf("the retried promotion is not on top of the other writer's %s: %v", foreign, err)
	}
	if counts := r.promotions(t, "main"); counts["p1"] != 1 || counts["p2"] != 1 || counts["p3"] != 1 {
		t.Errorf("promotions on main: %v, want p1, p2 and p3 once each", counts)
	}
	r.checkNoForcePush(t, "main")
}

// TestSawIgnoresATipTheStoreLacks: a tip the writer cannot read is not
// taken; the write then fetches as without a shared store.
func TestSawIgnoresATipTheStoreLacks(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	w := newTestWriter(t, WriterOptions{})
	w.ShareStore(r.httpRemote().URL, memory.NewStorage())
	target := Target{Remote: r.httpRemote(), Branch: "main"}
	tip := plumbing.NewHash(r.tip(t, "main"))
	if ok, err := w.Saw(context.Background(), target, tip); err != nil || ok {
		t.Fatalf("Saw of a tip the store lacks = %v, %v; want it ignored", ok, err)
	}
	res, err := w.Apply(context.Background(), target, promotionChange("p1", 1, lineEdit("settings.env", "a", "1")))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.tip(t, "main"); got != res[0].Commit.String() {
		t.Fatalf("main is at %s, want %s", got, res[0].Commit)
	}
}

// TestApplyAlongPushesBothBranchesAtomically: a promotion and the state
// commit that starts it go out in one atomic push; when the state branch
// moved nothing is written (a conflict), when the target moved the
// promotion is re-applied and both land, and a server that offers no
// atomic push, or a writer without a shared store, writes nothing and says
// so (ErrNotTogether).
func TestApplyAlongPushesBothBranchesAtomically(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	remote, proxy := r.proxiedRemote(t)
	target := Target{Remote: remote, Branch: "main"}
	ctx := context.Background()
	newShared := func() *Writer {
		w := newTestWriter(t, WriterOptions{})
		w.ShareStore(remote.URL, memory.NewStorage())
		return w
	}
	swap := func(expected plumbing.Hash, note string) Swap {
		return Swap{Branch: "vectorflow/state", Expected: expected, Files: map[string][]byte{"note": []byte(note)}, Message: "state " + note}
	}

	w := newShared()
	proxy.Reset()
	res, state, err := w.ApplyAlong(ctx, target, promotionChange("p1", 1, lineEdit("settings.env", "a", "1")), swap(plumbing.ZeroHash, "one"))
	if err != nil {
		t.Fatal(err)
	}
	if got := proxy.Reset(); got[testutil.Push] != 1 {
		t.Errorf("ApplyAlong took %s, want one push", got)
	}
	if r.tip(t, "main") != res.Commit.String() || r.tip(t, "vectorflow/state") != state.String() {
		t.Fatalf("main at %s and state at %s, want %s and %s", r.tip(t, "main"), r.tip(t, "vectorflow/state"), res.Commit, state)
	}
	if got := r.show(t, "vectorflow/state", "note"); got != "one" {
		t.Fatalf("state note = %q", got)
	}

	// The state branch moved: a conflict, and main does not move either.
	mainBefore := r.tip(t, "main")
	_, _, err = w.ApplyAlong(ctx, target, promotionChange("p2", 2, lineEdit("settings.env", "b", "2")), swap(plumbing.ZeroHash, "stale"))
	var conflict *ConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, ErrConflict) {
		t.Fatalf("ApplyAlong on a moved state branch: %v, want a ConflictError", err)
	}
	if r.tip(t, "main") != mainBefore || r.tip(t, "vectorflow/state") != state.String() {
		t.Fatal("a refused ApplyAlong moved a branch")
	}

	// Another writer moves main: the promotion is re-applied on top.
	if _, err := newTestWriter(t, WriterOptions{}).Apply(ctx, Target{Remote: r.httpRemote(), Branch: "main"}, promotionChange("p3", 3, lineEdit("settings.env", "c", "3"))); err != nil {
		t.Fatal(err)
	}
	foreign := r.tip(t, "main")
	res, state2, err := w.ApplyAlong(ctx, target, promotionChange("p4", 4, lineEdit("settings.env", "d", "4")), swap(state, "two"))
	if err != nil {
		t.Fatal(err)
	}
	if r.tip(t, "main") != res.Commit.String() || r.tip(t, "vectorflow/state") != state2.String() {
		t.Fatalf("after the race main at %s and state at %s, want %s and %s", r.tip(t, "main"), r.tip(t, "vectorflow/state"), res.Commit, state2)
	}
	if _, err := testutil.GitE(r.bare, nil, "merge-base", "--is-ancestor", foreign, "main"); err != nil {
		t.Fatalf("the other writer's commit %s was overwritten", foreign)
	}
	r.checkNoForcePush(t, "main")
	r.checkNoForcePush(t, "vectorflow/state")

	// A change that fails writes nothing, the state included.
	failing := promotionChange("p5", 5, lineEdit("missing.env", "e", "5"))
	if _, _, err := w.ApplyAlong(ctx, target, failing, swap(state2, "three")); err == nil {
		t.Fatal("ApplyAlong with a failing edit succeeded")
	}
	if r.tip(t, "vectorflow/state") != state2.String() {
		t.Fatal("a failed change still moved the state branch")
	}

	// Without a shared store, or without atomic pushes: nothing written.
	if _, _, err := newTestWriter(t, WriterOptions{}).ApplyAlong(ctx, target, promotionChange("p6", 6, lineEdit("settings.env", "f", "6")), swap(state2, "four")); !errors.Is(err, ErrNotTogether) {
		t.Fatalf("ApplyAlong without a shared store: %v, want ErrNotTogether", err)
	}
	r.git(t, "config", "receive.advertiseAtomic", "false")
	if _, _, err := newShared().ApplyAlong(ctx, target, promotionChange("p6", 6, lineEdit("settings.env", "f", "6")), swap(state2, "four")); !errors.Is(err, ErrNotTogether) {
		t.Fatalf("ApplyAlong on a server without atomic pushes: %v, want ErrNotTogether", err)
	}
	if r.tip(t, "vectorflow/state") != state2.String() || r.tip(t, "main") != res.Commit.String() {
		t.Fatal("an ApplyAlong that could not push together moved a branch")
	}
}
