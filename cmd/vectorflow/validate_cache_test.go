package main

import (
	"path/filepath"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestValidateWritesItsRenderings: validate holds back the render cache's
// writes while the overlays build, and has written them when it returns,
// for the next process.
func TestValidateWritesItsRenderings(t *testing.T) {
	isolateCredentials(t)
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, goodFixture, "main", "config")
	cacheDir := t.TempDir()
	if out, err := runValidate(t, "--repo", srv.HTTPURLWithCredentials("config"), "--cache-dir", cacheDir); err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	buckets, err := filepath.Glob(filepath.Join(cacheDir, "renders", "*.bucket"))
	if err != nil {
		t.Fatal(err)
	}
	if len(buckets) == 0 {
		t.Errorf("validate returned with no rendering written under %s", filepath.Join(cacheDir, "renders"))
	}
}
