package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestOnePromotionRoundTrips counts the HTTP requests of one template
// promotion made the way `run --once` makes it: a fresh controller with a
// fresh writer runs passes until nothing changes. On a real network each
// request is a round trip, so they are the cost of a promotion: fetch the
// config and state branches once, push once, and look once more to see
// that nothing moved.
func TestOnePromotionRoundTrips(t *testing.T) {
	t.Run("atomic", func(t *testing.T) { onePromotionRoundTrips(t, true, false) })
	// Without atomic pushes the state commit and the promotion go out
	// apart, the state first: never a promotion without its record.
	t.Run("without atomic pushes", func(t *testing.T) { onePromotionRoundTrips(t, false, false) })
	// Holding the writes until the run settles (run --once): one fetch,
	// one push of everything.
	t.Run("held", func(t *testing.T) { onePromotionRoundTrips(t, true, true) })
	t.Run("held without atomic pushes", func(t *testing.T) { onePromotionRoundTrips(t, false, true) })
}

func onePromotionRoundTrips(t *testing.T, atomic, held bool) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart")), "main", "acme.git")
	if !atomic {
		testutil.Git(t, srv.BarePath("acme.git"), nil, "config", "receive.advertiseAtomic", "false")
	}
	proxy := testutil.StartCountingProxy(t, srv)
	url := proxy.URL("acme.git")
	signer, err := gitwriter.NewSigner(testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil).PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	runOnce := func() []PassResult {
		t.Helper()
		w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{URL: url, Branch: "main", Writer: w, HoldWrites: held, Auth: func(string) source.Auth {
			return source.Auth{Username: srv.Username, Password: srv.Password}
		}})
		if err != nil {
			t.Fatal(err)
		}
		passes, err := c.RunUntilStable(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		return passes
	}
	runOnce() // the first run records the stages and promotes the first vector
	bumpQuickstartTemplate(t, srv, "acme.git", `version: "1.0.2"`, `version: "1.0.3"`)

	proxy.Reset()
	passes := runOnce()
	counts := proxy.Reset()
	var executed []string
	for _, p := range passes {
		executed = append(executed, p.Executed...)
	}
	if len(executed) != 1 {
		t.Fatalf("the bump executed %v, want one promotion", executed)
	}
	overlay := testutil.Git(t, "", nil, "--git-dir", srv.BarePath("acme.git"), "show", "main:apps/overlays/dev/kustomization.yaml")
	if !strings.Contains(overlay, "1.0.3") {
		t.Fatalf("dev's overlay does not hold service-a 1.0.3:\n%s", overlay)
	}
	t.Logf("one promotion in %d passes: %s", len(passes), counts)
	// Each pass fetches the config and state branches in one request (an
	// advertisement, and a pack only when something new is there: the
	// writer's commits are in the store already); the promotion goes out
	// with the state commit starting it in one atomic push, and the state
	// commit recording its result in another.
	total, pushes := 7, 2
	switch {
	case held && atomic:
		// One push of the promotion with both state commits; the passes
		// after the first read what the run wrote, without a request.
		total, pushes = 4, 1
	case held:
		total, pushes = 5, 2 // the promotion, then the state that records it
	case !atomic:
		total, pushes = 8, 3 // and the advertisement that says so, once
	}
	if counts.Total() > total || counts[testutil.Fetch] > 1 || counts[testutil.Push] > pushes {
		t.Errorf("one promotion took %s; want at most %d requests, 1 fetch and %d pushes", counts, total, pushes)
	}
}

// bumpQuickstartTemplate changes the template of repository name as a
// person would, with the git binary.
func bumpQuickstartTemplate(t *testing.T, srv *testutil.GitServer, name, from, to string) {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials(name), ".")
	file := filepath.Join(dir, "vectorflow", "template.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bumped := strings.Replace(string(b), from, to, 1)
	if bumped == string(b) {
		t.Fatalf("the template has no %s", from)
	}
	if err := os.WriteFile(file, []byte(bumped), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "bump "+to)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:main")
}
