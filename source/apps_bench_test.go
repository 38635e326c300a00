package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/bench"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// BenchmarkLoadChangedApps10000 is the load of a pass after one template
// bump in make bench's apps shape at 10,000 stages (1,000 applications of
// 10 stages, each application's template, stages and configs in a file of
// its own): the load of every promotion's pass in a running run, the
// Loader's caches warm.
func BenchmarkLoadChangedApps10000(b *testing.B) {
	repo, dir := bench.WriteTemp(b, bench.Apps, 10000, testutil.NewOpenPGPKey(b, "alice", "alice@example.com", nil).PublicArmored)
	testutil.Git(b, dir, nil, "init", "-q", "-b", fixtureBranch)
	testutil.Git(b, dir, nil, "add", "-A")
	testutil.Git(b, dir, nil, "commit", "-qm", "x")
	commits := []string{strings.TrimSpace(testutil.Git(b, dir, nil, "rev-parse", "HEAD"))}
	data, err := os.ReadFile(filepath.Join(dir, repo.Template))
	if err != nil {
		b.Fatal(err)
	}
	bumped, err := repo.Bump(data, repo.Version, "2.0.0")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, repo.Template), bumped, 0o644); err != nil {
		b.Fatal(err)
	}
	testutil.Git(b, dir, nil, "commit", "-qam", "bump")
	commits = append(commits, strings.TrimSpace(testutil.Git(b, dir, nil, "rev-parse", "HEAD")))
	benchLoads(b, dir, commits, repo.Stages, true)
}
