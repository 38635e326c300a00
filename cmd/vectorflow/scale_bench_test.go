package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/bench"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// BenchmarkValidateChain and BenchmarkRunOnceChain run validate and a cold
// `run --once` in-process on a chain of VECTORFLOW_BENCH_STAGES stages
// (default 1000; VECTORFLOW_BENCH_SHAPE=apps for the other shape) with an
// armored approver key on every config, so
// -cpuprofile shows where a large repository's time goes (make bench
// times the same as processes).
func BenchmarkValidateChain(b *testing.B) {
	stages := benchEnvInt(b, "VECTORFLOW_BENCH_STAGES", 1000)
	_, dir := bench.WriteTemp(b, bench.Chain, stages, testutil.NewOpenPGPKey(b, "alice", "alice@example.com", nil).PublicArmored)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := scaleCLI("validate", dir); err != nil {
			b.Fatalf("validate: %v\n%s", err, out)
		}
	}
}

func BenchmarkRunOnceChain(b *testing.B) {
	stages := benchEnvInt(b, "VECTORFLOW_BENCH_STAGES", 1000)
	repo, err := bench.Generate(bench.Shape(benchEnv("VECTORFLOW_BENCH_SHAPE", "chain")), stages, testutil.NewOpenPGPKey(b, "alice", "alice@example.com", nil).PublicArmored, 0)
	if err != nil {
		b.Fatal(err)
	}
	srv := testutil.StartGitServer(b)
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signingKey := filepath.Join(b.TempDir(), "controller.asc")
	if err := os.WriteFile(signingKey, key.PrivateArmored, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv("VECTORFLOW_GIT_USERNAME", srv.Username)
	b.Setenv("VECTORFLOW_GIT_PASSWORD", srv.Password)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("chain-%d.git", i)
		url := benchRepository(b, srv, name, repo.Files)
		b.StartTimer()
		if out, err := scaleCLI("run", "--once", "--repo", url, "--signing-key", signingKey); err != nil {
			b.Fatalf("run --once: %v\n%s", err, out)
		}
	}
}

func scaleCLI(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}
