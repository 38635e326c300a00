package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/demo"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestRunOnceCarriesAChangeThroughADeepChain: one `run --once` carries
// the template's vector through 150 automatic stages to the last one
// (there were at most 100 passes, about 50 hops: "did not settle after
// 100 passes"), and a later template change too.
func TestRunOnceCarriesAChangeThroughADeepChain(t *testing.T) {
	const stages = 150
	srv, url, signingKey := serveChain(t, stages)
	bare := srv.BarePath("chain.git")
	last := "main:apps/overlays/dev150/kustomization.yaml"

	if out, err := scaleCLI("run", "--once", "--repo", url, "--signing-key", signingKey); err != nil {
		t.Fatalf("the first run --once: %v\n%s", err, tail(out, 3000))
	}
	if got := testutil.Git(t, bare, nil, "show", last); !strings.Contains(got, `newTag: "1.0.0"`) {
		t.Fatalf("after one run --once, dev%d's overlay does not run the template's 1.0.0:\n%s", stages, got)
	}

	bumpChainApp(t, srv, "1.0.0", "2.0.0")
	if out, err := scaleCLI("run", "--once", "--repo", url, "--signing-key", signingKey); err != nil {
		t.Fatalf("run --once after the template change: %v\n%s", err, tail(out, 3000))
	}
	if got := testutil.Git(t, bare, nil, "show", last); !strings.Contains(got, `newTag: "2.0.0"`) {
		t.Fatalf("after one run --once, dev%d's overlay does not run the changed template's 2.0.0:\n%s", stages, got)
	}
}

// serveChain serves chainRepository(stages) as chain.git, with the
// server's credentials in the environment, and returns the server, its
// URL and the controller's signing key file.
func serveChain(t *testing.T, stages int) (srv *testutil.GitServer, url, signingKey string) {
	t.Helper()
	isolateCredentials(t)
	srv = testutil.StartGitServer(t)
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, chainRepository(stages)); err != nil {
		t.Fatal(err)
	}
	srv.InitRepo(t, dir, "main", "chain.git")
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signingKey = writeFile(t, t.TempDir(), "controller.asc", key.PrivateArmored)
	t.Setenv("VECTORFLOW_GIT_USERNAME", srv.Username)
	t.Setenv("VECTORFLOW_GIT_PASSWORD", srv.Password)
	os.Unsetenv("VECTORFLOW_SIGNING_PASSPHRASE")
	return srv, srv.HTTPURL("chain.git"), signingKey
}

// bumpChainApp is a person changing the chain template's app from one
// version to another and pushing it.
func bumpChainApp(t *testing.T, srv *testutil.GitServer, from, to string) {
	t.Helper()
	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("chain.git"), ".")
	template := filepath.Join(work, "vectorflow", "template.yaml")
	b := readFile(t, template)
	bumped := strings.Replace(b, "acme/app\n      version: \""+from+"\"", "acme/app\n      version: \""+to+"\"", 1)
	if bumped == b {
		t.Fatalf("template.yaml has no app at %s:\n%s", from, b)
	}
	writeFile(t, filepath.Dir(template), "template.yaml", []byte(bumped))
	testutil.Git(t, work, nil, "commit", "-qam", "app "+to)
	testutil.Git(t, work, nil, "push", "-q", "origin", "main")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
