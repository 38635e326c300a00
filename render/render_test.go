package render

import (
	"errors"
	"os/exec"
	"path"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

const fixtureRepo = "testdata/repo"

var fixtureDirs = []string{
	"apps/overlays/dev",     // images, namePrefix, components, patch file, configMapGenerator merge
	"apps/overlays/prod",    // several resources, CRD + custom resources, namespace, replicas, digest
	"apps/overlays/staging", // kustomization.yml, secretGenerator, nameSuffix, tag@digest
	"apps/base",
	"apps/crds",
}

// TestBuildMatchesKustomizeCLI compares every fixture with the real
// kustomize CLI, through a disk tree and a commit in an in-memory repository.
func TestBuildMatchesKustomizeCLI(t *testing.T) {
	trees := map[string]repofs.Tree{"repofs.DirTree": repofs.DirTree(fixtureRepo), "repofs.GitTree": commitDir(t, fixtureRepo)}
	for _, dir := range fixtureDirs {
		want := testutil.KustomizeBuild(t, filepath.Join(fixtureRepo, dir))
		buildsLikeCLI(t, trees, dir, want)
	}
}

// buildsLikeCLI renders dir of every tree and compares it with want, the
// kustomize CLI's output.
func buildsLikeCLI(t *testing.T, trees map[string]repofs.Tree, dir string, want []byte) {
	t.Helper()
	for name, tree := range trees {
		t.Run(name+"/"+dir, func(t *testing.T) {
			got, err := NewRenderer(Options{}).Build(tree, dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Build(%s) differs from kustomize build (-cli +render):\n%s", dir, diff)
			}
		})
	}
}

// TestBuildMatchesKustomizeCLIQuickstart renders the example repository's overlays.
func TestBuildMatchesKustomizeCLIQuickstart(t *testing.T) {
	root := filepath.Join("..", "examples", "quickstart")
	overlays, err := filepath.Glob(filepath.Join(root, "apps", "overlays", "*"))
	if err != nil || len(overlays) == 0 {
		t.Fatalf("examples/quickstart has no apps/overlays/*: %v", err)
	}
	trees := map[string]repofs.Tree{"repofs.DirTree": repofs.DirTree(root), "repofs.GitTree": commitDir(t, root)}
	for _, overlay := range overlays {
		dir := path.Join("apps", "overlays", filepath.Base(overlay))
		want := testutil.KustomizeBuild(t, overlay)
		buildsLikeCLI(t, trees, dir, want)
		// kubectl's embedded kustomize is what many users run; where it is
		// installed, it must agree too.
		if kubectl, err := exec.LookPath("kubectl"); err == nil {
			t.Run("kubectl/"+dir, func(t *testing.T) {
				out, err := exec.Command(kubectl, "kustomize", overlay).Output()
				if err != nil {
					t.Fatalf("kubectl kustomize %s: %v", overlay, err)
				}
				got, err := NewRenderer(Options{}).Build(trees["repofs.GitTree"], dir)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(out), string(got)); diff != "" {
					t.Errorf("Build(%s) differs from kubectl kustomize (-kubectl +render):\n%s", dir, diff)
				}
			})
		}
	}
}

// TestBuildFollowsLinksInsideTheRepository: a base reached through a
// symlink that stays in the repository renders like the CLI renders it.
func TestBuildFollowsLinksInsideTheRepository(t *testing.T) {
	dir, trees := bothTrees(t, map[string]file{
		"base/kustomization.yaml":    {content: "resources:\n- cm.yaml\n"},
		"base/cm.yaml":               {content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n"},
		"overlay/kustomization.yaml": {content: "resources:\n- linked\nnamePrefix: x-\n"},
		"overlay/linked":             {link: "../base"},
	})
	want := testutil.KustomizeBuild(t, filepath.Join(dir, "overlay"))
	for name, tree := range trees {
		t.Run(name, func(t *testing.T) {
			got, err := NewRenderer(Options{}).Build(tree, "overlay")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("(-cli +render):\n%s", diff)
			}
		})
	}
}

func TestBuildRefusesEscapes(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	tests := []struct {
		name  string
		files map[string]file
		want  repofs.EscapeError
	}{{
		name:  "base above the root",
		files: map[string]file{"apps/dev/kustomization.yaml": {content: "resources:\n- ../../../..\n"}},
		want:  repofs.EscapeError{Dir: "apps/dev", File: "apps/dev/kustomization.yaml", Ref: "../../../..", Kind: repofs.ErrOutsideRoot},
	}, {
		name: "patch file above the root, in a base",
		files: map[string]file{
			"apps/dev/kustomization.yaml":  {content: "resources:\n- ../base\n"},
			"apps/base/kustomization.yaml": {content: "resources:\n- cm.yaml\npatches:\n- path: ../../../etc/patch.yaml\n"},
			"apps/base/cm.yaml":            {content: cm},
		},
		want: repofs.EscapeError{Dir: "apps/dev", File: "apps/base/kustomization.yaml", Ref: "../../../etc/patch.yaml", Kind: repofs.ErrOutsideRoot},
	}, {
		name:  "generator file above the root",
		files: map[string]file{"dev/kustomization.yaml": {content: "configMapGenerator:\n- name: x\n  files:\n  - key=../../secret\n"}},
		want:  repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "../../secret", Kind: repofs.ErrOutsideRoot},
	}, {
		name:  "absolute resource",
		files: map[string]file{"dev/kustomization.yaml": {content: "resources:\n- /etc/passwd\n"}},
		want:  repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "/etc/passwd", Kind: repofs.ErrAbsolutePath},
	}, {
		name:  "absolute component",
		files: map[string]file{"dev/kustomization.yaml": {content: "components:\n- /srv/components/x\n"}},
		want:  repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "/srv/components/x", Kind: repofs.ErrAbsolutePath},
	}, {
		name: "resource file linked to an absolute path",
		files: map[string]file{
			"dev/kustomization.yaml": {content: "resources:\n- cm.yaml\n"},
			"dev/cm.yaml":            {link: "/etc/hostname"},
		},
		want: repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "dev/cm.yaml", Target: "/etc/hostname", Kind: repofs.ErrSymlinkEscape},
	}, {
		name: "base directory linked above the root",
		files: map[string]file{
			"dev/kustomization.yaml": {content: "resources:\n- base\n"},
			"dev/base":               {link: "../../outside"},
		},
		want: repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "dev/base", Target: "../../outside", Kind: repofs.ErrSymlinkEscape},
	}, {
		name:  "remote git base",
		files: map[string]file{"dev/kustomization.yaml": {content: "resources:\n- github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6\n"}},
		want:  repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6", Kind: repofs.ErrRemoteBase},
	}, {
		name: "remote http resource in a base",
		files: map[string]file{
			"dev/kustomization.yaml":  {content: "resources:\n- ../base\n"},
			"base/kustomization.yaml": {content: "resources:\n- https://example.com/manifests/app.yaml\n"},
		},
		want: repofs.EscapeError{Dir: "dev", File: "base/kustomization.yaml", Ref: "https://example.com/manifests/app.yaml", Kind: repofs.ErrRemoteBase},
	}, {
		name:  "scp-style remote component",
		files: map[string]file{"dev/kustomization.yaml": {content: "components:\n- git@gitlab.example.com:team/repo.git//comp\n"}},
		want:  repofs.EscapeError{Dir: "dev", File: "dev/kustomization.yaml", Ref: "git@gitlab.example.com:team/repo.git//comp", Kind: repofs.ErrRemoteBase},
	}}
	for _, tt := range tests {
		_, trees := bothTrees(t, tt.files)
		for treeName, tree := range trees {
			t.Run(tt.name+"/"+treeName, func(t *testing.T) {
				out, err := NewRenderer(Options{}).Build(tree, tt.want.Dir)
				var got *repofs.EscapeError
				if !errors.As(err, &got) {
					t.Fatalf("Build = %q, %v; want an *repofs.EscapeError", out, err)
				}
				if diff := cmp.Diff(tt.want, *got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				if !errors.Is(err, tt.want.Kind) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.want.Kind)
				}
			})
		}
	}
}

func TestBuildRefusesDirOutsideTheRoot(t *testing.T) {
	tree := repofs.DirTree(fixtureRepo)
	for dir, kind := range map[string]error{"../repo/apps/base": repofs.ErrOutsideRoot, "/apps/base": repofs.ErrAbsolutePath} {
		if _, err := NewRenderer(Options{}).Build(tree, dir); !errors.Is(err, kind) {
			t.Errorf("Build(%q) = %v, want %v", dir, err, kind)
		}
	}
}

func TestBuildErrorsNameDirAndFile(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]file
		dir      string
		wantFile string
	}{{
		name:     "malformed kustomization",
		files:    map[string]file{"dev/kustomization.yaml": {content: "resources: [a\n"}},
		dir:      "dev",
		wantFile: "dev/kustomization.yaml",
	}, {
		name: "malformed resource in a base",
		files: map[string]file{
			"dev/kustomization.yaml":  {content: "resources:\n- ../base\n"},
			"base/kustomization.yaml": {content: "resources:\n- cm.yaml\n"},
			"base/cm.yaml":            {content: "kind: ConfigMap\nmetadata: [\n"},
		},
		dir:      "dev",
		wantFile: "base/cm.yaml",
	}, {
		name:  "no kustomization",
		files: map[string]file{"dev/readme.md": {content: "hi\n"}},
		dir:   "dev",
	}, {
		name:     "missing resource",
		files:    map[string]file{"dev/kustomization.yaml": {content: "resources:\n- gone.yaml\n"}},
		dir:      "dev",
		wantFile: "dev/kustomization.yaml",
	}}
	for _, tt := range tests {
		_, trees := bothTrees(t, tt.files)
		for treeName, tree := range trees {
			t.Run(tt.name+"/"+treeName, func(t *testing.T) {
				_, err := NewRenderer(Options{}).Build(tree, tt.dir)
				var be *repofs.BuildError
				if !errors.As(err, &be) {
					t.Fatalf("Build = %v, want a *repofs.BuildError", err)
				}
				if be.Dir != tt.dir || be.File != tt.wantFile {
					t.Errorf("BuildError{Dir: %q, File: %q}, want {%q, %q}: %v", be.Dir, be.File, tt.dir, tt.wantFile, err)
				}
			})
		}
	}
}
