package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestPromotionRendersOrFails runs the quickstart on a git server with one
// change each and lets latest-to-dev-1 execute: it succeeds only when the
// built dev overlay then runs every component at its version, and otherwise
// fails with the reason and pushes nothing to main.
func TestPromotionRendersOrFails(t *testing.T) {
	const serviceA = "    - name: registry.example.com/acme/service-a\n      version: \"1.0.2\"\n"
	tests := []struct {
		name   string
		edits  [][3]string // {file, old, new} in the quickstart
		entry  string      // the dev overlay's entry for service-a after a success
		runs   string      // the image dev runs then; empty means registry.example.com/acme/service-a:1.0.2
		reason string      // "" means Succeeded
		parts  []string    // of the failure message
	}{{
		// The case: the component's name is not its image, and the
		// overlay pins that image by hand (it is not vectorflow's entry yet).
		name: "component name differs from its image",
		edits: [][3]string{
			{"vectorflow/template.yaml", serviceA, "    - name: service-a\n      image: registry.example.com/acme/service-a\n      version: \"1.0.2\"\n"},
			{"apps/overlays/dev/kustomization.yaml",
				"    vectorflow.dev/components: registry.example.com/acme/frontend,registry.example.com/acme/service-a,registry.example.com/acme/service-b\n", ""},
		},
		entry: "  - name: registry.example.com/acme/service-a\n    newTag: \"1.0.2\"\n",
	}, {
		// The placeholder layout: the base runs image service-a, and each
		// overlay says where it comes from with newName. The component's
		// image is that newName.
		name: "placeholder image in the base, newName in the overlays",
		edits: append([][3]string{
			{"vectorflow/template.yaml", serviceA, "    - name: service-a\n      image: registry.example.com/acme/service-a\n      version: \"1.0.2\"\n"},
			{"apps/base/service-a.yaml", "image: registry.example.com/acme/service-a:1.0.0\n", "image: service-a\n"},
		}, placeholderEntries("dev", "test", "prod")...),
		entry: "  - name: service-a\n    newName: registry.example.com/acme/service-a\n    newTag: \"1.0.2\"\n",
	}, {
		// Every stage pulls service-a from a mirror: it keeps doing so, and
		// the mirror's image at the new tag is what counts.
		name: "overlays pull from a mirror",
		edits: append([][3]string{
			{"vectorflow/template.yaml", serviceA, "    - name: service-a\n      image: registry.example.com/acme/service-a\n      version: \"1.0.2\"\n"},
		}, mirrorEntries("dev", "test", "prod")...),
		entry: "  - name: registry.example.com/acme/service-a\n    newName: mirror.example.com/acme/service-a\n    newTag: \"1.0.2\"\n",
		runs:  "mirror.example.com/acme/service-a:1.0.2",
	}, {
		name: "overlay no longer builds",
		edits: [][3]string{
			{"apps/overlays/dev/kustomization.yaml", "  - namespace.yaml\n", "  - namespace.yaml\n  - removed-by-someone.yaml\n"},
		},
		reason: v1alpha1.OverlayBuildFailedReason,
		parts:  []string{"removed-by-someone.yaml", "nothing was pushed"},
	}, {
		name: "component matches no container",
		edits: [][3]string{
			{"vectorflow/template.yaml", serviceA, serviceA + "    - name: registry.example.com/acme/service-c\n      version: \"3.0.0\"\n"},
		},
		reason: v1alpha1.PromotionNoEffectReason,
		parts: []string{"component registry.example.com/acme/service-c renders nowhere",
			"registry.example.com/acme/service-a:1.0.2", "nothing was pushed"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testutil.RequireGit(t)
			dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
			for _, e := range tc.edits {
				file, e := e[0], e[1:]
				p := filepath.Join(dir, filepath.FromSlash(file))
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(data), e[0]) {
					t.Fatalf("the quickstart's %s changed; update this test: no %q", file, e[0])
				}
				if err := os.WriteFile(p, []byte(strings.Replace(string(data), e[0], e[1], 1)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			srv := testutil.StartGitServer(t)
			srv.InitRepo(t, dir, "main", "acme.git")
			url := srv.HTTPURL("acme.git")
			mainTip := func() string {
				return strings.Fields(testutil.Git(t, t.TempDir(), nil, "ls-remote", srv.HTTPURLWithCredentials("acme.git"), "refs/heads/main") + " none")[0]
			}
			before := mainTip()

			w := signedWriter(t)
			auth := source.Auth{Username: srv.Username, Password: srv.Password}
			c, err := New(Options{URL: url, Branch: "main", Writer: w, Auth: func(string) source.Auth { return auth }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.RunUntilStable(context.Background(), 10); err != nil {
				t.Fatalf("the pass did not settle: %v", err)
			}
			repo, err := source.Open(url, auth)
			if err != nil {
				t.Fatal(err)
			}
			_, _, state, err := ReadState(context.Background(), repo, DefaultStateBranch)
			if err != nil {
				t.Fatal(err)
			}
			p := state.Promotions["latest-to-dev-1"]
			if p == nil {
				t.Fatalf("no latest-to-dev-1 on the state branch: %v", keys.Sorted(state.Promotions))
			}
			cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition)

			if tc.reason != "" {
				if got := reconcilers.DeriveState(p); got != v1alpha1.PromotionFailed || cond.Reason != tc.reason {
					t.Fatalf("latest-to-dev-1 is %s (%+v), want Failed with reason %s", got, cond, tc.reason)
				}
				for _, part := range tc.parts {
					if !strings.Contains(cond.Message, part) {
						t.Errorf("the failure message does not say %q:\n%s", part, cond.Message)
					}
				}
				t.Logf("%s: %s", cond.Reason, cond.Message)
				if after := mainTip(); after != before {
					t.Errorf("main moved from %s to %s although the promotion failed", before, after)
				}
				return
			}

			if got := reconcilers.DeriveState(p); got != v1alpha1.PromotionSucceeded {
				t.Fatalf("latest-to-dev-1 is %s (%+v), want Succeeded", got, cond)
			}
			clone := t.TempDir()
			testutil.Git(t, clone, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("acme.git"), ".")
			overlay, err := os.ReadFile(filepath.Join(clone, "apps", "overlays", "dev", "kustomization.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(overlay), "registry.example.com/acme/service-a\n"); n != 1 || !strings.Contains(string(overlay), tc.entry) {
				t.Errorf("dev's overlay does not have exactly one entry for service-a, this one:\n%s\noverlay:\n%s", tc.entry, overlay)
			}
			out, err := render.NewRenderer(render.Options{}).Build(repofs.DirTree(clone), "apps/overlays/dev")
			if err != nil {
				t.Fatal(err)
			}
			runs := tc.runs
			if runs == "" {
				runs = "registry.example.com/acme/service-a:1.0.2"
			}
			if !strings.Contains(string(out), "image: "+runs+"\n") {
				t.Errorf("dev does not run %s although latest-to-dev-1 Succeeded:\n%s", runs, overlay)
			}
		})
	}
}

// placeholderEntries make the stages' overlays say where the base's
// placeholder image service-a comes from.
func placeholderEntries(stages ...string) [][3]string {
	var out [][3]string
	for _, s := range stages {
		out = append(out, [3]string{"apps/overlays/" + s + "/kustomization.yaml",
			"  - name: registry.example.com/acme/service-a\n", "  - name: service-a\n    newName: registry.example.com/acme/service-a\n"})
	}
	return out
}

// mirrorEntries make the stages' overlays pull service-a from a mirror.
func mirrorEntries(stages ...string) [][3]string {
	var out [][3]string
	for _, s := range stages {
		out = append(out, [3]string{"apps/overlays/" + s + "/kustomization.yaml",
			"  - name: registry.example.com/acme/service-a\n", "  - name: registry.example.com/acme/service-a\n    newName: mirror.example.com/acme/service-a\n"})
	}
	return out
}
