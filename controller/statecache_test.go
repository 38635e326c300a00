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

// TestRestartedControllerReusesTheCacheDirectory: a controller made later
// (as by a new run --once) over the same cache directory finds the
// settled repository settled, writing nothing, and takes the state
// branch's objects from the cache instead of decoding them; with the
// cache deleted it answers the same.
func TestRestartedControllerReusesTheCacheDirectory(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, filepath.Join("..", "examples", "quickstart"), "main", "config.git")
	signer, err := gitwriter.NewSigner(testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil).PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	cacheDir := t.TempDir()
	newController := func() *Controller {
		c, err := New(Options{URL: srv.HTTPURL("config.git"), Branch: "main", Writer: w, Auth: auth, CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	first, err := newController().RunUntilStable(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !first[0].Changed() {
		t.Fatal("the first run wrote nothing: the fixture tests nothing")
	}
	memos, _ := filepath.Glob(filepath.Join(cacheDir, "configs", "state-*"))
	if len(memos) != 1 {
		t.Fatalf("state memos in the cache: %v, want one", memos)
	}

	for _, name := range []string{"restarted", "restarted with the cache deleted"} {
		if strings.Contains(name, "deleted") {
			if err := os.RemoveAll(cacheDir); err != nil {
				t.Fatal(err)
			}
		}
		c := newController()
		passes, err := c.RunUntilStable(ctx, 10)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(passes) != 1 || passes[0].Changed() {
			t.Errorf("%s: %d passes, first %+v; want one that writes nothing", name, len(passes), passes[0])
		}
		if name == "restarted" && c.codec.Changed() {
			t.Errorf("%s: the state branch was decoded again, not taken from the cache", name)
		}
	}
}
