package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestHoldPushesOnceAtFlush: while a remote is held, promotions, state
// commits and promotions along with state commits build on each other and
// reach nothing on the server; Flush pushes them all in one request.
func TestHoldPushesOnceAtFlush(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	remote, proxy := r.proxiedRemote(t)
	main := Target{Remote: remote, Branch: "main"}
	state := Target{Remote: remote, Branch: "vectorflow/state"}
	ctx := context.Background()
	mainBefore := r.tip(t, "main")

	w := newTestWriter(t, WriterOptions{})
	if err := w.Hold(remote.URL); !errors.Is(err, ErrCannotHold) {
		t.Fatalf("Hold without a shared store: %v, want ErrCannotHold", err)
	}
	// A branch written before the store was shared keeps its objects apart.
	early := newTestWriter(t, WriterOptions{})
	if _, err := early.History(ctx, main, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	early.ShareStore(remote.URL, memory.NewStorage())
	if err := early.Hold(remote.URL); !errors.Is(err, ErrCannotHold) {
		t.Fatalf("Hold with main in a store of its own: %v, want ErrCannotHold", err)
	}
	w.ShareStore(remote.URL, memory.NewStorage())
	if err := w.Hold(remote.URL); err != nil {
		t.Fatal(err)
	}
	one, err := w.CompareAndSwap(ctx, state, plumbing.ZeroHash, map[string][]byte{"note": []byte("one")}, "state one")
	if err != nil {
		t.Fatal(err)
	}
	res, two, err := w.ApplyAlong(ctx, main, promotionChange("p1", 1, lineEdit("settings.env", "a", "1")),
		Swap{Branch: state.Branch, Expected: one, Files: map[string][]byte{"note": []byte("two")}, Message: "state two"})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := w.Apply(ctx, main, promotionChange("p2", 2, lineEdit("settings.env", "b", "2")))
	if err != nil {
		t.Fatal(err)
	}
	three, err := w.CompareAndSwap(ctx, state, two, map[string][]byte{"note": []byte("three")}, "state three")
	if err != nil {
		t.Fatal(err)
	}
	if got := proxy.Reset(); got[testutil.Push] != 0 {
		t.Errorf("held writes made %s, want no push", got)
	}
	if r.tip(t, "main") != mainBefore || r.tip(t, "vectorflow/state") != "" {
		t.Fatal("a held write reached the server")
	}
	if tip, ok := w.Held(remote.URL, "main"); !ok || tip != applied[0].Commit {
		t.Fatalf("Held(main) = %s, %v; want %s", tip, ok, applied[0].Commit)
	}
	if h, err := w.History(ctx, main, applied[0].Commit); err != nil || len(h.Commits("p1")) != 1 || len(h.Commits("p2")) != 1 {
		t.Fatalf("the held history does not name both held promotions (%v)", err)
	}
	if _, err := w.PushBranch(ctx, remote, "main", PromoteBranchPrefix+"p9", promotionChange("p9", 9, lineEdit("settings.env", "z", "9"))); err == nil {
		t.Fatal("a pull-request branch was pushed on top of held commits")
	}

	proxy.Reset()
	if err := w.Flush(ctx, remote, state.Branch); err != nil {
		t.Fatal(err)
	}
	if got := proxy.Reset(); got[testutil.Push] != 1 {
		t.Errorf("Flush took %s, want one push", got)
	}
	// A pull-request branch is never held: the forge must see it.
	pr, err := w.PushBranch(ctx, remote, "main", PromoteBranchPrefix+"p9", promotionChange("p9", 9, lineEdit("settings.env", "z", "9")))
	if err != nil {
		t.Fatalf("a pull-request branch on a flushed base: %v", err)
	}
	if got := r.tip(t, PromoteBranchPrefix+"p9"); got != pr.Commit.String() {
		t.Fatalf("the pull-request branch is at %q on the server, want %s", got, pr.Commit)
	}
	if got := proxy.Reset(); got[testutil.Push] != 1 {
		t.Errorf("Flush took %s, want one push", got)
	}
	if r.tip(t, "main") != applied[0].Commit.String() || r.tip(t, "vectorflow/state") != three.String() {
		t.Fatalf("after the flush main at %s and state at %s, want %s and %s", r.tip(t, "main"), r.tip(t, "vectorflow/state"), applied[0].Commit, three)
	}
	if _, err := testutil.GitE(r.bare, nil, "merge-base", "--is-ancestor", res.Commit.String(), "main"); err != nil {
		t.Fatal("the first held promotion is not on main")
	}
	if got := r.show(t, "vectorflow/state", "note"); got != "three" {
		t.Fatalf("state note = %q, want three", got)
	}
	r.checkNoForcePush(t, "main")
	if err := w.Flush(ctx, remote, state.Branch); err != nil || proxy.Reset()[testutil.Push] != 0 {
		t.Fatalf("a flush with nothing held: %v, or it pushed", err)
	}
}

// TestFlushSendsVersionsAsDeltas: a flush of many held commits that each
// rewrite the same wide directory (a chain of automatic stages, each hop a
// state commit) sends each older version of that directory as a delta of
// the newer one, not whole, and the server takes the pack and holds every
// commit's files.
func TestFlushSendsVersionsAsDeltas(t *testing.T) {
	const width, hops = 2000, 60
	ws := newWideState(t, width, true)
	r, remote, proxy, state, w, tip := ws.r, ws.remote, ws.proxy, ws.state, ws.w, ws.tip
	ctx := context.Background()
	seeded := proxy.Pushed()
	proxy.Reset()
	var err error
	commits := []plumbing.Hash{tip}
	for hop := 1; hop <= hops; hop++ {
		// Each hop records the result of one stage and starts the next.
		files := map[string][]byte{
			wideName(hop):           fmt.Appendf(nil, "sequence: %d\nphase: Succeeded\n", hop),
			wideName(hop + width/2): fmt.Appendf(nil, "sequence: %d\nphase: Running\n", hop),
		}
		if tip, err = w.CompareAndSwap(ctx, state, tip, files, fmt.Sprintf("hop %d", hop)); err != nil {
			t.Fatal(err)
		}
		commits = append(commits, tip)
	}
	if err := w.Flush(ctx, remote, state.Branch); err != nil {
		t.Fatal(err)
	}
	// The seed sent the directory (and its files) once; each hop's version
	// sent whole would be a third of that again, 20 seeds in all. As
	// deltas, the newest version and one in gitpack.MaxDepth go whole.
	if pushed := proxy.Pushed(); pushed > 2*seeded {
		t.Errorf("the flush of %d hops sent %d bytes, the seed of the whole directory %d: want twice that at most", hops, pushed, seeded)
	}
	if got := r.tip(t, state.Branch); got != tip.String() {
		t.Fatalf("the server's state branch is at %s, want %s", got, tip)
	}
	testutil.Git(t, r.bare, nil, "fsck", "--strict", "--no-dangling")
	for hop, c := range commits {
		if hop == 0 {
			continue
		}
		if got, want := r.show(t, c.String(), wideName(hop)), fmt.Sprintf("sequence: %d\nphase: Succeeded\n", hop); got != want {
			t.Fatalf("hop %d: the server holds %s as %q, want %q", hop, wideName(hop), got, want)
		}
	}
}

// TestPushSendsAThinPack: a push that rewrites one file of a directory of
// 2,000 sends the directory as a delta of the version the server holds,
// as git pushes (a thin pack), not whole; a server that advertises no-thin
// gets it whole. The server's repository stays whole either way.
func TestPushSendsAThinPack(t *testing.T) {
	ws := newWideState(t, 2000, true)
	r, remote, proxy, state, w, tip := ws.r, ws.remote, ws.proxy, ws.state, ws.w, ws.tip
	ctx := context.Background()
	var err error
	hop := func(i int) int64 {
		t.Helper()
		proxy.Reset()
		if tip, err = w.CompareAndSwap(ctx, state, tip, map[string][]byte{wideName(i): fmt.Appendf(nil, "sequence: %d\n", i)}, "hop"); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx, remote, state.Branch); err != nil {
			t.Fatal(err)
		}
		if got := r.show(t, state.Branch, wideName(i)); got != fmt.Sprintf("sequence: %d\n", i) {
			t.Fatalf("the server holds %s as %q", wideName(i), got)
		}
		testutil.Git(t, r.bare, nil, "fsck", "--strict", "--no-dangling")
		return proxy.Pushed()
	}
	thin := hop(1)
	proxy.Advertise("no-thin")
	whole := hop(2)
	// The directory's tree is 2,000 entries of about 55 bytes, a third of
	// which deflates; as a delta of the server's, a few bytes.
	if whole < 50_000 {
		t.Errorf("the push to a server that says no-thin sent %d bytes, want the whole directory (over 50,000)", whole)
	}
	if thin > 4_000 {
		t.Errorf("the push sent %d bytes, want a thin pack of under 4,000 (%d whole)", thin, whole)
	}
}

// TestHTTPPushSendsThinPacksToAKnownReceiver: a single-branch push over
// HTTP reads no advertisement, so it sends whole objects to a remote it
// knows nothing of, and a thin pack once a push that read the remote's
// advertisement found it takes them; not once it says no-thin.
func TestHTTPPushSendsThinPacksToAKnownReceiver(t *testing.T) {
	ws := newWideState(t, 2000, false)
	r, remote, proxy, state, w, tip := ws.r, ws.remote, ws.proxy, ws.state, ws.w, ws.tip
	ctx := context.Background()
	var err error
	// write changes one file with a push of its own, or held and flushed
	// (an atomic push, which reads the advertisement), and returns the
	// bytes it sent.
	write := func(i int, flushed bool) int64 {
		t.Helper()
		proxy.Reset()
		if flushed {
			if err := w.Hold(remote.URL); err != nil {
				t.Fatal(err)
			}
		}
		if tip, err = w.CompareAndSwap(ctx, state, tip, map[string][]byte{wideName(i): fmt.Appendf(nil, "sequence: %d\n", i)}, "hop"); err != nil {
			t.Fatal(err)
		}
		if flushed {
			if err := w.Flush(ctx, remote, state.Branch); err != nil {
				t.Fatal(err)
			}
			w.Release(remote.URL)
		}
		if got := r.show(t, state.Branch, wideName(i)); got != fmt.Sprintf("sequence: %d\n", i) {
			t.Fatalf("the server holds %s as %q", wideName(i), got)
		}
		return proxy.Pushed()
	}
	const thinAtMost, wholeAtLeast = 4_000, 50_000
	if sent := write(1, false); sent < wholeAtLeast {
		t.Errorf("a push to a remote never asked sent %d bytes, want the directory whole (over %d)", sent, wholeAtLeast)
	}
	if sent := write(2, true); sent > thinAtMost {
		t.Errorf("the flush sent %d bytes, want a thin pack (under %d)", sent, thinAtMost)
	}
	if sent := write(3, false); sent > thinAtMost {
		t.Errorf("a push to a remote that took thin packs sent %d bytes, want a thin pack (under %d)", sent, thinAtMost)
	}
	// A branch another writer moved is no reason to stop.
	other := newTestWriter(t, WriterOptions{})
	moved, err := other.CompareAndSwap(ctx, state, tip, map[string][]byte{wideName(7): []byte("moved\n")}, "another writer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CompareAndSwap(ctx, state, tip, map[string][]byte{wideName(8): []byte("late\n")}, "late"); !errors.Is(err, ErrConflict) {
		t.Fatalf("a write on a moved branch: %v, want ErrConflict", err)
	}
	tip = moved
	if sent := write(6, false); sent > thinAtMost {
		t.Errorf("the push after a moved branch sent %d bytes, want a thin pack (under %d)", sent, thinAtMost)
	}
	// A refusal (here a hook's, once) makes the next push whole: the
	// remote may no longer take what it advertised.
	refuseOnce := filepath.Join(r.bare, "refuse-once")
	if err := os.WriteFile(refuseOnce, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hook := fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then rm %q; echo refused >&2; exit 1; fi\n", refuseOnce, refuseOnce)
	if err := os.WriteFile(filepath.Join(r.bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CompareAndSwap(ctx, state, tip, map[string][]byte{wideName(9): []byte("refused\n")}, "refused"); err == nil {
		t.Fatal("the hook did not refuse the push")
	}
	if sent := write(10, false); sent < wholeAtLeast {
		t.Errorf("the push after a refusal sent %d bytes, want the directory whole", sent)
	}
	proxy.Advertise("no-thin")
	if sent := write(4, true); sent < wholeAtLeast {
		t.Errorf("the flush to a remote that says no-thin sent %d bytes, want the directory whole", sent)
	}
	if sent := write(5, false); sent < wholeAtLeast {
		t.Errorf("a push to a remote that said no-thin sent %d bytes, want the directory whole", sent)
	}
	testutil.Git(t, r.bare, nil, "fsck", "--strict", "--no-dangling")
}

// TestFlushWithoutAtomicPushesSendsThinPacks: a flush to a server that
// offers no atomic push pushes one branch at a time, skipping the
// advertisement, and still sends thin packs: the refused atomic push read
// it.
func TestFlushWithoutAtomicPushesSendsThinPacks(t *testing.T) {
	ws := newWideState(t, 2000, false)
	testutil.Git(t, ws.r.bare, nil, "config", "receive.advertiseAtomic", "false")
	ctx := context.Background()
	w := newTestWriter(t, WriterOptions{}) // has read no advertisement
	w.ShareStore(ws.remote.URL, memory.NewStorage())
	if err := w.Hold(ws.remote.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CompareAndSwap(ctx, ws.state, ws.tip, map[string][]byte{wideName(1): []byte("sequence: 1\n")}, "hop"); err != nil {
		t.Fatal(err)
	}
	ws.proxy.Reset()
	if err := w.Flush(ctx, ws.remote, ws.state.Branch); err != nil {
		t.Fatal(err)
	}
	if got := ws.r.show(t, ws.state.Branch, wideName(1)); got != "sequence: 1\n" {
		t.Fatalf("the server holds %s as %q", wideName(1), got)
	}
	if sent := ws.proxy.Pushed(); sent > 4_000 {
		t.Errorf("the flush sent %d bytes, want a thin pack (under 4,000)", sent)
	}
	testutil.Git(t, ws.r.bare, nil, "fsck", "--strict", "--no-dangling")
}

// wideState is a server's state branch seeded with a directory of config
// statuses, written through a counting proxy by a writer that keeps its
// objects in a store of its own (held: with its pushes held, the seed
// flushed).
type wideState struct {
	r      *serverRepo
	remote Remote
	proxy  *testutil.CountingProxy
	state  Target
	w      *Writer
	tip    plumbing.Hash
}

func newWideState(t *testing.T, width int, held bool) wideState {
	t.Helper()
	ws := wideState{r: newServerRepo(t, fixtureDir), w: newTestWriter(t, WriterOptions{})}
	ws.remote, ws.proxy = ws.r.proxiedRemote(t)
	ws.state = Target{Remote: ws.remote, Branch: "vectorflow/state"}
	ws.w.ShareStore(ws.remote.URL, memory.NewStorage())
	ctx := context.Background()
	if held {
		if err := ws.w.Hold(ws.remote.URL); err != nil {
			t.Fatal(err)
		}
	}
	seed := map[string][]byte{}
	for i := range width {
		seed[wideName(i)] = fmt.Appendf(nil, "name: stage%04d-to-stage%04d\nsequence: 0\n", i, i+1)
	}
	var err error
	if ws.tip, err = ws.w.CompareAndSwap(ctx, ws.state, plumbing.ZeroHash, seed, "seed"); err != nil {
		t.Fatal(err)
	}
	if held {
		if err := ws.w.Flush(ctx, ws.remote, ws.state.Branch); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// wideName is the path of the i-th config status of a wideState.
func wideName(i int) string { return fmt.Sprintf("configs/stage%04d-to-stage%04d.yaml", i, i+1) }

// TestFlushRefusesAMovedBranch: a branch the remote moved while writes were
// held refuses the whole flush, both branches stay where they were, and
// after Drop the writer reads the remote again and writes on its new tip.
func TestFlushRefusesAMovedBranch(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	remote := r.httpRemote()
	main := Target{Remote: remote, Branch: "main"}
	state := Target{Remote: remote, Branch: "vectorflow/state"}
	ctx := context.Background()

	w := newTestWriter(t, WriterOptions{})
	w.ShareStore(remote.URL, memory.NewStorage())
	stateTip, err := w.CompareAndSwap(ctx, state, plumbing.ZeroHash, map[string][]byte{"note": []byte("zero")}, "state zero")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Hold(remote.URL); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.ApplyAlong(ctx, main, promotionChange("p1", 1, lineEdit("settings.env", "a", "1")),
		Swap{Branch: state.Branch, Expected: stateTip, Files: map[string][]byte{"note": []byte("one")}, Message: "state one"}); err != nil {
		t.Fatal(err)
	}
	// A person pushes to main meanwhile.
	if _, err := newTestWriter(t, WriterOptions{}).Apply(ctx, main, promotionChange("other", 7, lineEdit("settings.env", "o", "7"))); err != nil {
		t.Fatal(err)
	}
	foreign := r.tip(t, "main")

	err = w.Flush(ctx, remote, state.Branch)
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Branch != "main" {
		t.Fatalf("Flush over a moved main: %v, want a ConflictError on main", err)
	}
	if r.tip(t, "main") != foreign || r.tip(t, "vectorflow/state") != stateTip.String() {
		t.Fatal("a refused flush moved a branch")
	}
	if err := w.Drop(ctx, remote.URL); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Held(remote.URL, "main"); ok {
		t.Fatal("main is still held after Drop")
	}
	h, err := w.History(ctx, main, plumbing.ZeroHash)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Commits("p1")) != 0 || len(h.Commits("other")) != 1 {
		t.Fatalf("after Drop the history names p1 %d times and other %d times, want 0 and 1", len(h.Commits("p1")), len(h.Commits("other")))
	}
	if _, err := w.Apply(ctx, main, promotionChange("p1", 1, lineEdit("settings.env", "a", "1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.GitE(r.bare, nil, "merge-base", "--is-ancestor", foreign, "main"); err != nil {
		t.Fatal("the person's commit was overwritten")
	}
	r.checkNoForcePush(t, "main")
}
