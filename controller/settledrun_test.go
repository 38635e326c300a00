package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRestartedRunLooksAgainAtWhatMoved: a run --once that starts where an
// earlier one settled skips the load only while nothing that run read
// moved. A state branch someone else wrote is judged (and refused), a
// landscape repository's new commit is read and promoted, a registry is
// asked again, and a controller someone watches (an observer) loads.
func TestRestartedRunLooksAgainAtWhatMoved(t *testing.T) {
	ctx := context.Background()
	settled := func(o *Options) { o.Settings = "--flags A" }

	t.Run("the state branch, in a commit nobody trusted", func(t *testing.T) {
		srv, _, newController := cachedQuickstart(t)
		if _, err := newController(settled).RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
		forgeStatePromotion(t, srv.HTTPURLWithCredentials("config.git"))

		restarted := newController(settled)
		if _, err := restarted.RunUntilStable(ctx, 10); !errors.Is(err, ErrUntrustedState) {
			t.Errorf("restarted over a state branch someone else wrote: %v, want %v", err, ErrUntrustedState)
		}
	})

	t.Run("a landscape's repository", func(t *testing.T) {
		srv := testutil.StartGitServer(t)
		srv.InitRepo(t, quickstartStages(t), "main", "stages.git")
		srv.InitRepo(t, configRepo(t, latestToDevElsewhere(t, "shared", srv.HTTPURL("stages.git"), "main")), "main", "builds.git")
		auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
		newController := restartedRuns(t, Options{URL: srv.HTTPURL("builds.git"), Branch: "main", Auth: auth})
		if _, err := newController().RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if again := newController(); runSettled(t, again) || again.loads != 0 {
			t.Errorf("restarted with nothing moved: %d loads, %d decisions; want none", again.loads, again.decisions)
		}

		// Someone sets dev's frontend by hand in the stages' repository.
		dir := t.TempDir()
		testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("stages.git"), ".")
		overlay := filepath.Join(dir, "apps", "overlays", "dev", "kustomization.yaml")
		data, err := os.ReadFile(overlay)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(data), `newTag: "1.2.0"`, `newTag: "0.9.0"`, 1)
		if edited == string(data) {
			t.Fatalf("dev's overlay sets no frontend 1.2.0:\n%s", data)
		}
		if err := os.WriteFile(overlay, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, nil, "commit", "-qam", "frontend 0.9.0 by hand")
		testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:main")

		if moved := newController(); !runSettled(t, moved) {
			t.Errorf("restarted after dev's overlay moved: %d loads, %d decisions; want the overlay read and decided on", moved.loads, moved.decisions)
		}
	})

	t.Run("the registry", func(t *testing.T) {
		f := newDiscoveryRepo(t, "")
		f.push(t, "acme/frontend", "1.2.0")
		f.push(t, "acme/service-a", "1.0.2")
		f.push(t, "acme/service-b", "1.0.0")
		newController := restartedRuns(t, Options{URL: f.url, Branch: "main", Auth: f.auth, Resolver: f.resolver})
		if _, err := newController().RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
		first := f.latestVector(t)
		f.push(t, "acme/service-a", "1.0.3")
		f.advance(2 * discoveryTTL)
		if _, err := newController().RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if got := f.latestVector(t); got.Ref() == first.Ref() {
			t.Errorf("restarted after the registry got service-a 1.0.3: the latest vector is still %s", first.Ref())
		}
	})

	t.Run("an observer", func(t *testing.T) {
		_, _, newController := cachedQuickstart(t)
		if _, err := newController(settled).RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
		var observed []Observed
		watched := newController(settled, func(o *Options) { o.Observe = func(ob Observed) { observed = append(observed, ob) } })
		if _, err := watched.RunUntilStable(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if len(observed) == 0 || observed[len(observed)-1].Snapshot == nil {
			t.Errorf("a restarted run with an observer handed it %d passes, the last without a snapshot; want what it read", len(observed))
		}
	})
}

// restartedRuns makes controllers as run --once makes them, each a new
// process over one cache directory, with the flags and signing key of the
// one before.
func restartedRuns(t *testing.T, o Options) func() *Controller {
	o.CacheDir, o.HoldWrites, o.Settings = t.TempDir(), true, "--flags A"
	writer := oneKeyWriters(t)
	return func() *Controller {
		o.Writer = writer()
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// forgeStatePromotion rewrites a promotion on the state branch of the
// repository at url (with credentials) in an unsigned commit, as someone
// with push access could.
func forgeStatePromotion(t *testing.T, url string) {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", DefaultStateBranch, url, ".")
	file := filepath.Join(dir, "promotions", "latest-to-dev", "latest-to-dev-1.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), "state: Succeeded", "state: Failed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "nothing to see here")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:"+DefaultStateBranch)
}

// runSettled runs c until stable and says whether it loaded and decided.
func runSettled(t *testing.T, c *Controller) bool {
	t.Helper()
	if _, err := c.RunUntilStable(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	return c.loads > 0 && c.decisions > 0
}
