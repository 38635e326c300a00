package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRunnerPropagatesAcrossConfigRepositories: two config repositories
// share stages that live in a third (a Landscape with spec.repository).
// When one controller promotes into dev there, the other, whose config
// sources from dev, looks again at once, so the vector reaches test long
// before any poll (the interval is an hour).
func TestRunnerPropagatesAcrossConfigRepositories(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, quickstartStages(t), "main", "stages.git")
	stagesURL := srv.HTTPURL("stages.git")

	landscape := "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: shared\nspec:\n  repository:\n    url: " + stagesURL + "\n    branch: main\n"
	stage := func(name string) string {
		return "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name +
			"\nspec:\n  landscape: shared\n  path: apps/overlays/" + name + "\n"
	}
	builds := configRepo(t, latestToDevElsewhere(t, "shared", stagesURL, "main"))
	releases := configRepo(t, landscape+stage("dev")+stage("test")+`---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: dev-to-test
spec:
  source: {kind: Stage, name: dev, landscape: shared}
  target: {kind: Stage, name: test, landscape: shared}
  approval: {required: false}
`)
	srv.InitRepo(t, builds, "main", "builds.git")
	srv.InitRepo(t, releases, "main", "releases.git")

	w := signedWriter(t)
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	var controllers []*Controller
	for _, name := range []string{"releases.git", "builds.git"} {
		c, err := New(Options{URL: srv.HTTPURL(name), Branch: "main", Writer: w, Auth: auth})
		if err != nil {
			t.Fatal(err)
		}
		controllers = append(controllers, c)
	}

	ctx, cancel := context.WithCancel(context.Background())
	runner := NewRunner(time.Hour, logr.Discard(), controllers...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	testLog := func() string {
		return testutil.Git(t, t.TempDir(), nil, "--git-dir", srv.BarePath("stages.git"), "log", "--format=%B", "main", "--", "apps/overlays/test")
	}
	// Let both settle: test gets a promotion, then nothing moves for a while.
	waitFor(t, 20*time.Second, "test to get its first promotion", func() bool {
		return strings.Contains(testLog(), "Vectorflow-Source: Stage/shared/dev")
	})
	settled := srv.BarePath("stages.git")
	for last, quiet := "", 0; quiet < 10; time.Sleep(100 * time.Millisecond) {
		tip := testutil.Git(t, t.TempDir(), nil, "--git-dir", settled, "rev-parse", "main")
		if tip == last {
			quiet++
		} else {
			last, quiet = tip, 0
		}
	}

	// Now only builds is asked to look (as its push webhook would): its
	// promotion into dev must wake releases, idle for an hour otherwise.
	pushTemplateBump(t, srv, "builds.git", "vectorflow/config.yaml")
	if n := runner.Trigger(srv.HTTPURL("builds.git"), ""); n != 1 {
		t.Fatalf("the push to builds triggered %d controllers, want 1", n)
	}
	waitFor(t, 20*time.Second, "the new vector to reach test through releases' config", func() bool {
		return strings.Contains(firstPromotion(testLog()), "service-a 1.0.2 -> 1.0.3")
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pushTemplateBump moves service-a from 1.0.2 to 1.0.3 in the template
// file of repository name's main branch, as a person would with the git
// binary.
func pushTemplateBump(t *testing.T, srv *testutil.GitServer, name, template string) {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials(name), ".")
	file := filepath.Join(dir, filepath.FromSlash(template))
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bumped := strings.Replace(string(b), `version: "1.0.2"`, `version: "1.0.3"`, 1)
	if bumped == string(b) {
		t.Fatal(`the template has no service-a version "1.0.2"`)
	}
	if err := os.WriteFile(file, []byte(bumped), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "service-a 1.0.3")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "HEAD:main")
}

// firstPromotion is the newest commit message of a `git log --format=%B`.
func firstPromotion(log string) string {
	msg, _, _ := strings.Cut(log, "\npromote ")
	return msg
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "quickstart", "vectorflow", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quickstartStages is a copy of the quickstart without its configs: its
// overlays, the stages of a landscape in a repository of its own.
func quickstartStages(t *testing.T) string {
	t.Helper()
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	if err := os.RemoveAll(filepath.Join(dir, "vectorflow")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// configRepo is a directory holding only vectorflow/config.yaml.
func configRepo(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "vectorflow"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vectorflow", "config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
