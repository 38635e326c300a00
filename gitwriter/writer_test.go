package gitwriter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh/knownhosts"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

func TestApplyOverHTTPAndSSH(t *testing.T) {
	for _, transport := range []string{"http", "ssh"} {
		t.Run(transport, func(t *testing.T) {
			r := newServerRepo(t, fixtureDir)
			remote := r.httpRemote()
			if transport == "ssh" {
				remote = r.sshRemote(t)
			}
			target := Target{Remote: remote, Branch: "main"}
			w := newTestWriter(t, WriterOptions{})
			ctx := context.Background()

			first, err := w.Apply(ctx, target, promotionChange("shop-to-prod-1", 1, lineEdit("settings.env", "release", "v1")))
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			tip := r.tip(t, "main")
			if diff := cmp.Diff([]Result{{ID: "shop-to-prod-1", Commit: plumbing.NewHash(tip)}}, first); diff != "" {
				t.Errorf("first Apply (-want +got):\n%s", diff)
			}
			if got := r.show(t, "main", "settings.env"); !strings.Contains(got, "release=v1\n") || !strings.HasPrefix(got, "# settings") {
				t.Errorf("settings.env after the promotion:\n%s", got)
			}
			if diff := cmp.Diff(map[string]int{"shop-to-prod-1": 1}, r.promotions(t, "main")); diff != "" {
				t.Errorf("promotions on main (-want +got):\n%s", diff)
			}

			// The same promotion again: the commit already on the branch is
			// the answer, even though the edit would now change nothing.
			again, err := w.Apply(ctx, target, promotionChange("shop-to-prod-1", 1, lineEdit("settings.env", "release", "v1")))
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if diff := cmp.Diff([]Result{{ID: "shop-to-prod-1", Commit: plumbing.NewHash(tip), Existing: true}}, again); diff != "" {
				t.Errorf("second Apply (-want +got):\n%s", diff)
			}
			// Another promotion whose edit is already true: no empty commit.
			same, err := w.Apply(ctx, target, promotionChange("shop-to-prod-2", 2, lineEdit("settings.env", "release", "v1")))
			if err != nil {
				t.Fatalf("third Apply: %v", err)
			}
			if diff := cmp.Diff([]Result{{ID: "shop-to-prod-2", Commit: plumbing.NewHash(tip), AlreadyApplied: true}}, same); diff != "" {
				t.Errorf("already-applied Apply (-want +got):\n%s", diff)
			}
			if got := r.tip(t, "main"); got != tip {
				t.Errorf("main moved to %s, want it left at %s", got, tip)
			}
			r.checkNoForcePush(t, "main")
		})
	}
}

func TestApplyBatchIsOnePush(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	w := newTestWriter(t, WriterOptions{})
	before := r.tip(t, "main")
	res, err := w.Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"},
		promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1")),
		promotionChange("p-2", 2, lineEdit("settings.env", "release", "v2")),
		promotionChange("p-3", 3, lineEdit("settings.env", "extra", "yes")),
		promotionChange("p-3", 3, lineEdit("settings.env", "extra", "yes")),
	)
	if err != nil {
		t.Fatal(err)
	}
	// One commit per change, chained in order, the duplicate found in the
	// batch itself.
	log := strings.Fields(r.git(t, "rev-list", "--reverse", before+"..main"))
	if len(log) != 3 {
		t.Fatalf("want 3 new commits, got %d", len(log))
	}
	want := []Result{
		{ID: "p-1", Commit: plumbing.NewHash(log[0])},
		{ID: "p-2", Commit: plumbing.NewHash(log[1])},
		{ID: "p-3", Commit: plumbing.NewHash(log[2])},
		{ID: "p-3", Commit: plumbing.NewHash(log[2]), Existing: true},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if got := r.show(t, "main", "settings.env"); !strings.HasSuffix(got, "release=v2\nextra=yes\n") {
		t.Errorf("settings.env:\n%s", got)
	}
	if n := len(r.refUpdates(t, "main")); n != 1 {
		t.Errorf("main was updated by %d pushes, want 1", n)
	}
}

// TestApplyRetriesOnMovedBranch moves the branch with the real git binary
// between the writer's fetch and its push (from inside the message
// function), the race every busy repository has.
func TestApplyRetriesOnMovedBranch(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	clone := cloneRepo(t, r)
	var calls int
	var foreign []string
	change := promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1"))
	message := change.Message
	change.Message = func(d []FileDiff) string {
		calls++
		if calls == 1 {
			foreign = append(foreign, pushForeign(t, clone, "settings.env", "other=x\n"))
		}
		return message(d)
	}
	res, err := newTestWriter(t, WriterOptions{}).Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"}, change)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the change was built %d times, want 2 (once per attempt)", calls)
	}
	tip := r.tip(t, "main")
	if res[0].Commit.String() != tip {
		t.Errorf("result commit %s is not the tip %s", res[0].Commit, tip)
	}
	if parent := r.git(t, "rev-parse", "main^"); parent != foreign[0] {
		t.Errorf("the promotion's parent is %s, want the foreign commit %s", parent, foreign[0])
	}
	// The semantic edit was re-applied: the foreign line survives next to ours.
	if got := r.show(t, "main", "settings.env"); !strings.Contains(got, "release=v1\n") || !strings.Contains(got, "other=x\n") {
		t.Errorf("settings.env lost a write:\n%s", got)
	}
	r.checkNoForcePush(t, "main")
}

func TestApplyRetriesExhausted(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	clone := cloneRepo(t, r)
	n := 0
	change := promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1"))
	message := change.Message
	change.Message = func(d []FileDiff) string {
		n++
		pushForeign(t, clone, fmt.Sprintf("foreign/%d.txt", n), "x\n")
		return message(d)
	}
	_, err := newTestWriter(t, WriterOptions{MaxAttempts: 3}).Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"}, change)
	var exhausted *RetriesExhaustedError
	if !errors.As(err, &exhausted) || exhausted.Attempts != 3 || exhausted.Branch != "main" {
		t.Fatalf("want RetriesExhaustedError after 3 attempts, got %v", err)
	}
	if got := r.promotions(t, "main"); len(got) != 0 {
		t.Errorf("promotions landed although every push lost: %v", got)
	}
	if got := r.tip(t, "main"); got != strings.TrimSpace(testutil.Git(t, clone, nil, "rev-parse", "HEAD")) {
		t.Errorf("main is at %s, not at the other writer's last commit", got)
	}
}

func TestApplyBadInput(t *testing.T) {
	good := func() Change { return promotionChange("p-ok", 1, lineEdit("settings.env", "release", "v1")) }
	overlay := func(id, path string) Change {
		return PromotionChange(path, "eu", "dev", "shop:2", []v1alpha1.VectorComponent{{Name: "service-a", Tag: "1.4.2"}},
			Trailers{Promotion: id, Sequence: 2, Vector: "shop:2", Source: "VectorTemplate/shop", Target: "Stage/dev"})
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, r *serverRepo) Remote
		changes []Change
		check   func(t *testing.T, err error)
	}{{
		name:    "missing overlay",
		changes: []Change{good(), overlay("p-bad", "apps/overlays/qa/kustomization.yaml")},
		check: func(t *testing.T, err error) {
			var e *EditError
			if !errors.As(err, &e) || e.Path != "apps/overlays/qa/kustomization.yaml" || e.Change != "p-bad" ||
				!strings.Contains(err.Error(), "does not exist") {
				t.Errorf("want an EditError naming the missing overlay, got %v", err)
			}
		},
	}, {
		name:    "overlay does not parse",
		changes: []Change{overlay("p-bad", "apps/overlays/broken/kustomization.yaml")},
		check: func(t *testing.T, err error) {
			var e *EditError
			if !errors.As(err, &e) || e.Path != "apps/overlays/broken/kustomization.yaml" {
				t.Errorf("want an EditError naming the broken overlay, got %v", err)
			}
		},
	}, {
		name:    "message without the promotion trailer",
		changes: []Change{{ID: "p-x", Message: func([]FileDiff) string { return "no trailers\n" }, Files: []FileEdit{lineEdit("settings.env", "a", "b")}}},
		check: func(t *testing.T, err error) {
			var e *EditError
			if !errors.As(err, &e) || !strings.Contains(err.Error(), "Vectorflow-Promotion: p-x") {
				t.Errorf("want an EditError asking for the trailer, got %v", err)
			}
		},
	}, {
		name: "wrong password",
		setup: func(t *testing.T, r *serverRepo) Remote {
			return Remote{URL: r.g.HTTPURL(r.name), Auth: &http.BasicAuth{Username: r.g.Username, Password: "wrong"}}
		},
		changes: []Change{good()},
		check: func(t *testing.T, err error) {
			var e *RemoteError
			if !errors.As(err, &e) || e.Op != "fetch" || e.Branch != "main" ||
				!(errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)) {
				t.Errorf("want a RemoteError wrapping an auth error, got %v", err)
			}
		},
	}, {
		name: "a server hook refuses",
		setup: func(t *testing.T, r *serverRepo) Remote {
			writeHook(t, r.bare, "pre-receive", "echo 'policy: the release freeze is on' >&2\nexit 1\n")
			// Over SSH, because the test server's HTTP side mixes hook
			// output into the protocol stream.
			return r.sshRemote(t)
		},
		changes: []Change{good()},
		check: func(t *testing.T, err error) {
			var e *RemoteError
			if !errors.As(err, &e) || e.Op != "push" || !strings.Contains(err.Error(), "pre-receive hook declined") {
				t.Errorf("want a RemoteError for the refused push, got %v", err)
			}
		},
	}, {
		name: "a server hook refuses, hook output garbling the HTTP stream",
		setup: func(t *testing.T, r *serverRepo) Remote {
			writeHook(t, r.bare, "pre-receive", "echo 'policy: the release freeze is on' >&2\nexit 1\n")
			return r.httpRemote()
		},
		changes: []Change{good()},
		check: func(t *testing.T, err error) {
			var e *RemoteError
			if !errors.As(err, &e) || e.Op != "push" {
				t.Errorf("want a RemoteError for the refused push, got %v", err)
			}
		},
	}, {
		name: "unknown SSH host key",
		setup: func(t *testing.T, r *serverRepo) Remote {
			rm := r.sshRemote(t)
			host := strings.Fields(string(r.g.KnownHosts))[0]
			kh := filepath.Join(t.TempDir(), "known_hosts")
			other := testutil.NewSSHKey(t, nil)
			if err := os.WriteFile(kh, []byte(host+" "+other.AuthorizedKey+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cb, err := knownhosts.New(kh)
			if err != nil {
				t.Fatal(err)
			}
			rm.Auth.(*gitssh.PublicKeys).HostKeyCallback = cb
			return rm
		},
		changes: []Change{good()},
		check: func(t *testing.T, err error) {
			var e *RemoteError
			if !errors.As(err, &e) || e.Op != "fetch" || !strings.Contains(err.Error(), "key mismatch") {
				t.Errorf("want a RemoteError for the host key, got %v", err)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newServerRepo(t, fixtureDir)
			remote := r.httpRemote()
			if tt.setup != nil {
				remote = tt.setup(t, r)
			}
			before := r.tip(t, "main")
			res, err := newTestWriter(t, WriterOptions{}).Apply(context.Background(), Target{Remote: remote, Branch: "main"}, tt.changes...)
			if err == nil {
				t.Fatalf("Apply succeeded: %v", res)
			}
			tt.check(t, err)
			if after := r.tip(t, "main"); after != before {
				t.Errorf("main moved from %s to %s on a failed Apply", before, after)
			}
		})
	}
}

func TestPushBranch(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	clone := cloneRepo(t, r)
	remote := r.httpRemote()
	w := newTestWriter(t, WriterOptions{})
	ctx := context.Background()
	const branch = "vectorflow/promote/shop-to-prod-4"
	change := func() Change { return promotionChange("shop-to-prod-4", 4, lineEdit("settings.env", "release", "v4")) }

	first, err := w.PushBranch(ctx, remote, "main", branch, change())
	if err != nil {
		t.Fatal(err)
	}
	if first.Existing || first.AlreadyApplied || first.Commit.String() != r.tip(t, branch) {
		t.Fatalf("first PushBranch = %+v, branch at %s", first, r.tip(t, branch))
	}
	if got := r.git(t, "rev-parse", branch+"^"); got != r.tip(t, "main") {
		t.Errorf("the promotion branch is not on top of main: parent %s", got)
	}

	// The base moves on: the branch still holds the promotion, no churn.
	pushForeign(t, clone, "foreign.txt", "x\n")
	again, err := w.PushBranch(ctx, remote, "main", branch, change())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{ID: "shop-to-prod-4", Commit: first.Commit, Existing: true}, again); diff != "" {
		t.Errorf("PushBranch again (-want +got):\n%s", diff)
	}

	// The pull request was closed and the branch deleted: it is re-made on
	// the current base.
	r.git(t, "update-ref", "-d", "refs/heads/"+branch)
	remade, err := w.PushBranch(ctx, remote, "main", branch, change())
	if err != nil {
		t.Fatal(err)
	}
	if remade.Existing || remade.Commit == first.Commit || remade.Commit.String() != r.tip(t, branch) {
		t.Errorf("re-made PushBranch = %+v, branch at %s", remade, r.tip(t, branch))
	}
	if got := r.git(t, "rev-parse", branch+"^"); got != r.tip(t, "main") {
		t.Errorf("the re-made branch is not on top of the new main: parent %s", got)
	}

	// Someone pushed another change to the promotion branch: it is re-made
	// (force-updated, the one place that is allowed).
	testutil.Git(t, clone, nil, "fetch", "-q", "origin", branch)
	testutil.Git(t, clone, nil, "checkout", "-q", "-B", "promo", "FETCH_HEAD")
	pushForeignTo(t, clone, branch, "settings.env", "release=tampered\n")
	testutil.Git(t, clone, nil, "checkout", "-q", "main")
	fixed, err := w.PushBranch(ctx, remote, "main", branch, change())
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Existing || !strings.Contains(r.show(t, branch, "settings.env"), "release=v4\n") {
		t.Errorf("tampered branch not re-made: %+v\n%s", fixed, r.show(t, branch, "settings.env"))
	}

	// The pull request was merged: base holds the promotion, nothing to push.
	testutil.Git(t, clone, nil, "fetch", "-q", "origin", branch)
	testutil.Git(t, clone, nil, "merge", "-q", "--no-edit", "FETCH_HEAD")
	testutil.Git(t, clone, nil, "push", "-q", "origin", "HEAD:main")
	merged, err := w.PushBranch(ctx, remote, "main", branch, change())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{ID: "shop-to-prod-4", Commit: fixed.Commit, Existing: true}, merged); diff != "" {
		t.Errorf("PushBranch after merge (-want +got):\n%s", diff)
	}

	if _, err := w.PushBranch(ctx, remote, "main", "main", change()); err == nil {
		t.Errorf("PushBranch to main must be refused: it may force-update")
	}
	r.checkNoForcePush(t, "main")
}

func TestCompareAndSwap(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	w := newTestWriter(t, WriterOptions{})
	ctx := context.Background()
	state := Target{Remote: r.httpRemote(), Branch: "vectorflow/state"}

	tip, files, err := w.Read(ctx, state, "")
	if err != nil || !tip.IsZero() || len(files) != 0 {
		t.Fatalf("Read of a missing branch = %s, %v, %v", tip, files, err)
	}
	created, err := w.CompareAndSwap(ctx, state, plumbing.ZeroHash, map[string][]byte{
		"promotions/shop-to-prod-1.yaml": []byte("kind: VectorPromotion\n"),
		"vectors/shop-1.yaml":            []byte("kind: Vector\n"),
	}, "state: create\n")
	if err != nil {
		t.Fatal(err)
	}
	if created.String() != r.tip(t, "vectorflow/state") {
		t.Fatalf("CAS returned %s, branch at %s", created, r.tip(t, "vectorflow/state"))
	}
	if got := r.git(t, "rev-list", "--count", "vectorflow/state"); got != "1" {
		t.Errorf("the state branch has %s commits, want 1 (an orphan, not main's history)", got)
	}

	// Stale expectations lose and write nothing.
	for _, stale := range []plumbing.Hash{plumbing.ZeroHash, plumbing.NewHash(r.tip(t, "main"))} {
		_, err := w.CompareAndSwap(ctx, state, stale, map[string][]byte{"x.yaml": []byte("x\n")}, "state: stale\n")
		var ce *ConflictError
		if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) || ce.Actual != created {
			t.Errorf("CAS expecting %s: want ErrConflict naming the tip %s, got %v", stale, created, err)
		}
	}

	next, err := w.CompareAndSwap(ctx, state, created, map[string][]byte{
		"promotions/shop-to-prod-1.yaml": []byte("kind: VectorPromotion\nstatus: {}\n"),
		"vectors/shop-1.yaml":            nil,
	}, "state: update\n")
	if err != nil {
		t.Fatal(err)
	}
	tip, files, err = w.Read(ctx, state, "")
	if err != nil {
		t.Fatal(err)
	}
	if tip != next {
		t.Errorf("Read tip %s, want %s", tip, next)
	}
	want := map[string][]byte{"promotions/shop-to-prod-1.yaml": []byte("kind: VectorPromotion\nstatus: {}\n")}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("state files (-want +got):\n%s", diff)
	}
	if got := r.git(t, "rev-parse", "vectorflow/state^"); got != created.String() {
		t.Errorf("the update's parent is %s, want %s", got, created)
	}

	// Someone else writes between our read and our swap.
	other := newTestWriter(t, WriterOptions{})
	if _, err := other.CompareAndSwap(ctx, state, next, map[string][]byte{"approvals/a.yaml": []byte("a\n")}, "approve\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CompareAndSwap(ctx, state, next, map[string][]byte{"x.yaml": []byte("x\n")}, "late\n"); !errors.Is(err, ErrConflict) {
		t.Errorf("want ErrConflict after another writer moved the branch, got %v", err)
	}
	r.checkNoForcePush(t, "vectorflow/state")
}

func TestSignedCommitsVerifyWithGit(t *testing.T) {
	pgp := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@example.com", []byte("pgp-pass"))
	sshKey := testutil.NewSSHKey(t, []byte("ssh-pass"))
	tests := []struct {
		name       string
		key, pass  []byte
		env        func(t *testing.T) []string
		gitConfig  func(t *testing.T) []string
		wantOutput string
	}{{
		name: "openpgp", key: pgp.PrivateArmored, pass: pgp.Passphrase,
		env:        func(t *testing.T) []string { return testutil.GPGHome(t, pgp) },
		gitConfig:  func(t *testing.T) []string { return nil },
		wantOutput: "Good signature",
	}, {
		name: "ssh", key: sshKey.PrivatePEM, pass: sshKey.Passphrase,
		env: func(t *testing.T) []string { return nil },
		gitConfig: func(t *testing.T) []string {
			return []string{"gpg.format=ssh", "gpg.ssh.allowedSignersFile=" + testutil.SSHAllowedSigners(t, "vectorflow@example.com", sshKey)}
		},
		wantOutput: `Good "git" signature`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signer, err := NewSigner(tt.key, tt.pass)
			if err != nil {
				t.Fatal(err)
			}
			r := newServerRepo(t, fixtureDir)
			w := newTestWriter(t, WriterOptions{Signer: signer})
			if _, err := w.Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"},
				promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1")),
				promotionChange("p-2", 2, lineEdit("settings.env", "release", "v2"))); err != nil {
				t.Fatal(err)
			}
			for _, rev := range []string{"main", "main^"} {
				out, err := testutil.GitVerifyCommit(r.bare, tt.env(t), tt.gitConfig(t), rev)
				if err != nil || !strings.Contains(out, tt.wantOutput) {
					t.Errorf("git verify-commit %s: %v\n%s", rev, err, out)
				}
			}
		})
	}
}

func TestSigningFailureIsTyped(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	before := r.tip(t, "main")
	w := newTestWriter(t, WriterOptions{Signer: failingSigner{}})
	_, err := w.Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"},
		promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1")))
	var se *SignError
	if !errors.As(err, &se) || se.Change != "p-1" {
		t.Fatalf("want a SignError for p-1, got %v", err)
	}
	if r.tip(t, "main") != before {
		t.Errorf("main moved although signing failed")
	}
}

// failingSigner stands in for a key the signing backend refuses: the one
// fake here, because a real signer cannot be made to fail on demand.
type failingSigner struct{}

func (failingSigner) Sign(io.Reader) ([]byte, error) {
	return nil, errors.New("private key is locked")
}

// TestConcurrentWriters runs the git binary pushing unrelated commits to
// main in a tight loop while 50 promotions go through one Writer.
func TestConcurrentWriters(t *testing.T) {
	t.Run("50 overlays, concurrent callers", func(t *testing.T) {
		fixture := fixtureWithOverlays(t, 50)
		r := newServerRepo(t, fixture)
		w := newTestWriter(t, WriterOptions{MaxAttempts: 100, Backoff: smallJitter})
		target := Target{Remote: r.httpRemote(), Branch: "main"}
		stop := startForeignPusher(t, r)
		var wg sync.WaitGroup
		errs := make([]error, 50)
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Staggered, so some calls coalesce and some race alone.
				time.Sleep(time.Duration(i) * 15 * time.Millisecond)
				// One config per overlay, as one config has one target.
				_, errs[i] = w.Apply(context.Background(), target,
					configChange(fmt.Sprintf("svc-%02d", i), fmt.Sprintf("p-%02d", i), int64(i), lineEdit(overlayFile(i), "version", fmt.Sprint(i))))
			}()
		}
		wg.Wait()
		foreign := stop()
		for i, err := range errs {
			if err != nil {
				t.Errorf("promotion %d: %v", i, err)
			}
		}
		checkConcurrentOutcome(t, r, 50, foreign)
		for i := range 50 {
			if got := r.show(t, "main", overlayFile(i)); !strings.Contains(got, fmt.Sprintf("version=%d\n", i)) {
				t.Errorf("%s:\n%s", overlayFile(i), got)
			}
		}
	})
	t.Run("50 vectors to one overlay, in order", func(t *testing.T) {
		r := newServerRepo(t, fixtureDir)
		w := newTestWriter(t, WriterOptions{MaxAttempts: 100, Backoff: smallJitter})
		target := Target{Remote: r.httpRemote(), Branch: "main"}
		stop := startForeignPusher(t, r)
		const path = "apps/overlays/prod/kustomization.yaml"
		for i := range 50 {
			tag := fmt.Sprintf("1.%d.0", i)
			change := PromotionChange(path, "eu", "prod", fmt.Sprintf("shop:%d", i),
				[]v1alpha1.VectorComponent{{Name: "service-a", Image: "registry.example.com/service-a", Tag: tag}},
				Trailers{Promotion: fmt.Sprintf("p-%02d", i), Sequence: int64(i), Vector: fmt.Sprintf("shop:%d", i), Source: "Stage/dev", Target: "Stage/prod"})
			if _, err := w.Apply(context.Background(), target, change); err != nil {
				t.Fatalf("promotion %d: %v", i, err)
			}
		}
		foreign := stop()
		checkConcurrentOutcome(t, r, 50, foreign)
		got := r.show(t, "main", path)
		if !strings.Contains(got, `newTag: "1.49.0"`) && !strings.Contains(got, "newTag: 1.49.0") {
			t.Errorf("the overlay does not hold the last vector:\n%s", got)
		}
		if !strings.Contains(got, "# the stage overlay vectorflow promotes into") {
			t.Errorf("the overlay lost its comment:\n%s", got)
		}
	})
}

func checkConcurrentOutcome(t *testing.T, r *serverRepo, n int, foreign []string) {
	t.Helper()
	want := map[string]int{}
	for i := range n {
		want[fmt.Sprintf("p-%02d", i)] = 1
	}
	if diff := cmp.Diff(want, r.promotions(t, "main")); diff != "" {
		t.Errorf("promotions on main, each must land exactly once (-want +got):\n%s", diff)
	}
	if len(foreign) == 0 {
		t.Errorf("the other writer pushed nothing: the test raced no one")
	}
	final := r.tip(t, "main")
	for _, sha := range foreign {
		if _, err := testutil.GitE(r.bare, nil, "merge-base", "--is-ancestor", sha, final); err != nil {
			t.Errorf("foreign commit %s was lost: not an ancestor of %s", sha, final)
		}
	}
	r.checkNoForcePush(t, "main")
	t.Logf("%d foreign commits interleaved with %d promotions", len(foreign), n)
}

// startForeignPusher starts two other writers pushing unrelated commits to
// main in tight loops until the returned stop is called: the git binary
// (commit, push, pull --rebase on rejection, as a person does) and a second,
// independent go-git Writer, fast enough to win races against the first.
// stop returns every commit they pushed.
func startForeignPusher(t *testing.T, r *serverRepo) (stop func() []string) {
	clone := cloneRepo(t, r)
	other := newTestWriter(t, WriterOptions{MaxAttempts: 1000, Backoff: smallJitter})
	target := Target{Remote: r.httpRemote(), Branch: "main"}
	done := make(chan struct{})
	var (
		mu     sync.Mutex
		pushed []string
		errs   []error
		wg     sync.WaitGroup
	)
	record := func(sha string, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return false
		}
		pushed = append(pushed, sha)
		return true
	}
	loop := func(push func(n int) (string, error)) {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			if !record(push(n)) {
				return
			}
		}
	}
	wg.Add(2)
	go loop(func(n int) (string, error) {
		return foreignCommitAndPush(clone, "main", fmt.Sprintf("foreign/git-%d.txt", n), "x\n")
	})
	go loop(func(n int) (string, error) {
		// A breath between commits: pushing from a warm cache with no
		// pause, this writer wins every race on two shared cores and
		// starves the one under test, which a real neighbour does not.
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
		res, err := other.Apply(context.Background(), target, Change{
			Message: func([]FileDiff) string { return fmt.Sprintf("foreign go-git %d\n", n) },
			Files:   []FileEdit{SetFile(fmt.Sprintf("foreign/go-%d.txt", n), []byte("x\n"))},
		})
		if err != nil {
			return "", err
		}
		return res[0].Commit.String(), nil
	})
	return func() []string {
		close(done)
		wg.Wait()
		for _, err := range errs {
			t.Errorf("another writer failed: %v", err)
		}
		return pushed
	}
}

// foreignCommitAndPush commits a file and pushes it like a person would:
// on rejection, pull --rebase and push again. It returns the pushed commit.
func foreignCommitAndPush(clone, branch, path, content string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(filepath.Join(clone, path)), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(clone, path), []byte(content), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "foreign " + path}} {
		if _, err := testutil.GitE(clone, nil, args...); err != nil {
			return "", err
		}
	}
	for attempt := 0; ; attempt++ {
		_, err := testutil.GitE(clone, nil, "push", "-q", "origin", "HEAD:"+branch)
		if err == nil {
			break
		}
		if attempt == 100 {
			return "", err
		}
		if _, err := testutil.GitE(clone, nil, "pull", "-q", "--rebase", "origin", branch); err != nil {
			return "", err
		}
	}
	out, err := testutil.GitE(clone, nil, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

func pushForeign(t *testing.T, clone, path, content string) string {
	t.Helper()
	return pushForeignTo(t, clone, "main", path, content)
}

func pushForeignTo(t *testing.T, clone, branch, path, content string) string {
	t.Helper()
	if branch == "main" {
		testutil.Git(t, clone, nil, "pull", "-q", "--rebase", "origin", "main")
	}
	if path == "settings.env" && branch == "main" {
		old, err := os.ReadFile(filepath.Join(clone, path))
		if err != nil {
			t.Fatal(err)
		}
		content = string(old) + content
	}
	sha, err := foreignCommitAndPush(clone, branch, path, content)
	if err != nil {
		t.Fatalf("foreign push: %v", err)
	}
	return sha
}

func cloneRepo(t *testing.T, r *serverRepo) string {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", r.g.HTTPURLWithCredentials(r.name), ".")
	return dir
}

func fixtureWithOverlays(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixtureDir)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := filepath.Join(dir, overlayFile(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("version=none\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func overlayFile(i int) string { return fmt.Sprintf("apps/overlays/svc-%02d/settings.env", i) }

// smallJitter waits 1ms to 30ms before every retry.
var smallJitter = wait.Backoff{Duration: time.Millisecond, Jitter: 29}
