package render

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestBuildAllowsRemoteBasesWhenAsked clones a real (local, file://) git
// repository as a remote base, and never caches the result: the remote
// content is not part of the tree.
func TestBuildAllowsRemoteBasesWhenAsked(t *testing.T) {
	remote := writeFiles(t, map[string]file{
		"base/kustomization.yaml": {content: "resources:\n- cm.yaml\n"},
		"base/cm.yaml":            {content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote\ndata:\n  a: b\n"},
	})
	testutil.Git(t, remote, nil, "init", "-q", "-b", "main")
	testutil.Git(t, remote, nil, "add", ".")
	testutil.Git(t, remote, nil, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base")
	url := "file://" + filepath.ToSlash(remote) + "//base?ref=main"
	dir, trees := bothTrees(t, map[string]file{
		"dev/kustomization.yaml": {content: "resources:\n- " + url + "\nnamePrefix: dev-\n"},
	})
	want := testutil.KustomizeBuild(t, filepath.Join(dir, "dev"))
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			r := NewRenderer(Options{AllowRemoteBases: true})
			for range 2 {
				got, err := r.Build(tree, "dev")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("(-cli +render):\n%s", diff)
				}
			}
			if s := r.Stats(); s.Hits != 0 || s.Entries != 0 {
				t.Errorf("a build with a remote base was cached: %+v", s)
			}
		})
	}
}
