package gitwriter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestApplyKeepsToTheTargetsHistory writes promotions of one config to a
// real git server and replays older ones, as a rewound or deleted state
// branch would: the branch's own history refuses them, names the commit
// that decides it, and the branch does not move.
func TestApplyKeepsToTheTargetsHistory(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	target := Target{Remote: r.httpRemote(), Branch: "main"}
	ctx := context.Background()
	apply := func(w *Writer, ch Change) (Result, error) {
		res, err := w.Apply(ctx, target, ch)
		if err != nil {
			return Result{}, err
		}
		return res[0], nil
	}
	w := newTestWriter(t, WriterOptions{})
	if _, err := apply(w, configChange("shop-to-prod", "shop-to-prod-2", 2, lineEdit("settings.env", "release", "v2"))); err != nil {
		t.Fatal(err)
	}
	third, err := apply(w, configChange("shop-to-prod", "shop-to-prod-3", 3, lineEdit("settings.env", "release", "v3")))
	if err != nil {
		t.Fatal(err)
	}
	tip := r.tip(t, "main")

	// A fresh writer (another process) reads the history from the server.
	fresh := newTestWriter(t, WriterOptions{})
	_, err = apply(fresh, configChange("shop-to-prod", "shop-to-prod-2", 2, lineEdit("settings.env", "release", "v2")))
	var herr *HistoryError
	if !errors.As(err, &herr) || !herr.Superseded() || herr.Entry.Promotion != "shop-to-prod-3" || herr.Entry.Commit != third.Commit {
		t.Fatalf("replaying shop-to-prod-2 after -3: %v, want SupersededInTarget naming shop-to-prod-3 at %s", err, third.Commit)
	}
	if !strings.Contains(err.Error(), "branch main of "+target.Remote.URL) {
		t.Errorf("the error does not name the branch: %v", err)
	}

	// The same name with another vector (sequences restarted after a
	// reset): refused, never taken as already applied.
	reused := configChange("shop-to-prod", "shop-to-prod-3", 3, lineEdit("settings.env", "release", "v3"))
	message := reused.Message
	reused.Message = func(d []FileDiff) string {
		return strings.Replace(message(d), "Vectorflow-Vector: shop:shop-to-prod-3", "Vectorflow-Vector: shop:other", 1)
	}
	_, err = apply(fresh, reused)
	if !errors.As(err, &herr) || herr.Reason != v1alpha1.PromotionIdentityReusedReason || herr.Entry.Commit != third.Commit {
		t.Fatalf("shop-to-prod-3 with another vector: %v, want PromotionIdentityReused at %s", err, third.Commit)
	}
	if got := r.tip(t, "main"); got != tip {
		t.Fatalf("main moved to %s on a refused promotion", got)
	}

	// The same promotion and vector, the overlay unchanged: already there.
	again, err := apply(fresh, configChange("shop-to-prod", "shop-to-prod-3", 3, lineEdit("settings.env", "release", "v3")))
	if err != nil || !again.Existing || again.Commit != third.Commit {
		t.Fatalf("shop-to-prod-3 again = %+v, %v; want Existing at %s", again, err, third.Commit)
	}

	// A person reverted the overlay: the commit is in the history but the
	// overlay no longer says it, so the promotion writes it again.
	pushForeign(t, cloneRepo(t, r), "settings.env", "# settings\nrelease=v1\n")
	redo, err := apply(fresh, configChange("shop-to-prod", "shop-to-prod-3", 3, lineEdit("settings.env", "release", "v3")))
	if err != nil || redo.Existing || redo.AlreadyApplied || redo.Commit.String() != r.tip(t, "main") {
		t.Fatalf("shop-to-prod-3 after a revert = %+v, %v; want a new commit at main's tip", redo, err)
	}
	if got := r.show(t, "main", "settings.env"); !strings.Contains(got, "release=v3\n") {
		t.Errorf("settings.env:\n%s", got)
	}
	r.checkNoForcePush(t, "main")
}

// TestPushWhoseAnswerWasLost: the server applies a push and goes away
// before it answers. The writer does not call that refused: Apply and
// CompareAndSwap say the push is uncertain, and once the server is back
// the promotion's commit is found on the branch (Existing) and the state
// commit is the branch's tip.
func TestPushWhoseAnswerWasLost(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	proxy := testutil.StartLostAnswerProxy(t, r.g)
	remote := r.httpRemote()
	remote.URL = proxy.URL(r.name)
	ctx := context.Background()
	w := newTestWriter(t, WriterOptions{})
	change := func() Change {
		return configChange("shop-to-prod", "shop-to-prod-1", 1, lineEdit("settings.env", "release", "v1"))
	}

	proxy.LoseNextPush("refs/heads/main")
	_, err := w.Apply(ctx, Target{Remote: remote, Branch: "main"}, change())
	var uncertain *UncertainPushError
	var refused *RemoteError
	if !errors.As(err, &uncertain) || errors.As(err, &refused) {
		t.Fatalf("Apply whose answer was lost: %v; want an UncertainPushError, not a RemoteError", err)
	}
	landed := r.tip(t, "main")
	if got := r.promotions(t, "main"); got["shop-to-prod-1"] != 1 {
		t.Fatalf("the push did not reach the server: promotions on main %v", got)
	}
	proxy.Restore()
	res, err := w.Apply(ctx, Target{Remote: remote, Branch: "main"}, change())
	if err != nil || len(res) != 1 || !res[0].Existing || res[0].Commit.String() != landed {
		t.Fatalf("Apply after the server is back = %+v, %v; want Existing at %s", res, err, landed)
	}

	proxy.LoseNextPush("refs/heads/vectorflow/state")
	state := Target{Remote: remote, Branch: "vectorflow/state"}
	_, err = w.CompareAndSwap(ctx, state, plumbing.ZeroHash, map[string][]byte{"promotions/a.yaml": []byte("a\n")}, "state\n")
	if !errors.As(err, &uncertain) || errors.Is(err, ErrConflict) {
		t.Fatalf("CompareAndSwap whose answer was lost: %v; want an UncertainPushError, not a conflict", err)
	}
	proxy.Restore()
	tip, files, err := w.Read(ctx, state, "")
	if err != nil || tip.String() != r.tip(t, "vectorflow/state") || string(files["promotions/a.yaml"]) != "a\n" {
		t.Fatalf("Read after the server is back: %s %v %v", tip, files, err)
	}
	if proxy.Dropped() < 2 {
		t.Errorf("the proxy lost %d answers, want at least the two pushes", proxy.Dropped())
	}
}
