package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/bench"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// BenchmarkPromotionPass10000 is the pass of a running run that makes one
// promotion in make bench's shapes at 10,000 stages (chain: one template,
// 10,000 stages; apps: 1,000 applications of 10 stages): a template
// bumped and pushed, the pass that fetches it, decides, and pushes the
// promotion with the state commit starting it. The pass after it, which
// records the result, is not timed: the promotion is on the server before
// it starts. It is what live-promote measures, without the webhook and
// the polling.
func BenchmarkPromotionPass10000(b *testing.B) {
	for _, shape := range []bench.Shape{bench.Chain, bench.Apps} {
		b.Run(string(shape), func(b *testing.B) { benchmarkPromotionPass(b, shape, 10000) })
	}
}

func benchmarkPromotionPass(b *testing.B, shape bench.Shape, stages int) {
	testutil.RequireGit(b)
	repo, dir := bench.WriteTemp(b, shape, stages, testutil.NewOpenPGPKey(b, "alice", "alice@example.com", nil).PublicArmored)
	f := &benchFixture{srv: testutil.StartGitServer(b)}
	f.srv.InitRepo(b, dir, "main", "apps.git")
	f.url = f.srv.HTTPURL("apps.git")
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@vectorflow.dev", nil)
	var err error
	if f.signer, err = gitwriter.NewSigner(key.PrivateArmored, nil); err != nil {
		b.Fatal(err)
	}
	f.work = b.TempDir()
	testutil.Git(b, f.work, nil, "clone", "-q", "--branch", "main", f.srv.HTTPURLWithCredentials("apps.git"), ".")

	ctx := context.Background()
	c, err := New(Options{URL: f.url, Branch: "main", Writer: f.writer(b), Auth: f.auth, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.RunUntilStable(ctx, 20); err != nil {
		b.Fatal(err)
	}
	template := filepath.Join(f.work, filepath.FromSlash(repo.Template))
	version := repo.Version
	bump := func(round int) {
		b.Helper()
		testutil.Git(b, f.work, nil, "pull", "-q", "--rebase", "origin", "main")
		old, err := os.ReadFile(template)
		if err != nil {
			b.Fatal(err)
		}
		next := fmt.Sprintf("2.0.%d", round)
		bumped, err := repo.Bump(old, version, next)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(template, bumped, 0o644); err != nil {
			b.Fatal(err)
		}
		testutil.Git(b, f.work, nil, "commit", "-qam", "bump to "+next)
		testutil.Git(b, f.work, nil, "push", "-q", "origin", "HEAD:main")
		version = next
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bump(i)
		b.StartTimer()
		// Labelled, so that a CPU profile of the benchmark shows the timed
		// passes alone: go tool pprof -tagfocus=pass=timed.
		var res PassResult
		var err error
		pprof.Do(ctx, pprof.Labels("pass", "timed"), func(ctx context.Context) { res, err = c.Pass(ctx) })
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Executed) != 1 {
			b.Fatalf("the bump to %s executed %v, want one promotion", version, res.Executed)
		}
		if res, err := c.Pass(ctx); err != nil || len(res.Executed) != 0 {
			b.Fatalf("the pass recording the promotion: executed %v, %v", res.Executed, err)
		}
		b.StartTimer()
	}
}
