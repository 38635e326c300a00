package source

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// BenchmarkLoadSnapshot1000 loads a repository of 10 landscapes, 1,000
// stages (each with its overlay) and 1,000 promotion configs, fetched into
// memory from a local Git repository. cold is a fresh Loader each time;
// warm reloads the unchanged repository with the Loader's caches (the
// target is under 200 ms).
func BenchmarkLoadSnapshot1000(b *testing.B) {
	dir := writeLargeRepository(b, 10, 100)
	commitDir(b, dir)
	ctx := context.Background()
	check := func(b *testing.B, s *Snapshot) {
		if len(s.Problems) > 0 || len(s.StageIndex) != 1000 || len(s.Configs) != 1000 {
			b.Fatalf("%d problems (first %v), %d stages, %d configs", len(s.Problems), s.Problems[0], len(s.StageIndex), len(s.Configs))
		}
	}

	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			s, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(ctx, dir, fixtureBranch)
			if err != nil {
				b.Fatal(err)
			}
			check(b, s)
		}
	})
	b.Run("warm", func(b *testing.B) {
		loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
		if _, err := loader.Load(ctx, dir, fixtureBranch); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			s, err := loader.Load(ctx, dir, fixtureBranch)
			if err != nil {
				b.Fatal(err)
			}
			check(b, s)
		}
	})
}

// BenchmarkLoadChangedSnapshot1000 is the load of a pass after a commit
// that changed one file (the template, as a person's bump does) of the
// 1,000-stage repository: every load reads a commit the last one did not,
// with the Loader's caches warm, as each promotion's pass does.
func BenchmarkLoadChangedSnapshot1000(b *testing.B) {
	for _, readOnly := range []bool{false, true} {
		b.Run(map[bool]string{false: "copy", true: "read-only"}[readOnly], func(b *testing.B) { benchmarkLoadChanged(b, readOnly) })
	}
}

func benchmarkLoadChanged(b *testing.B, readOnly bool) {
	dir := writeLargeRepository(b, 10, 100)
	commitDir(b, dir)
	commits := []string{strings.TrimSpace(testutil.Git(b, dir, nil, "rev-parse", "HEAD"))}
	template := filepath.Join(dir, "vectorflow", "templates.yaml")
	data, err := os.ReadFile(template)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(template, []byte(strings.Replace(string(data), "version: 1.x", "version: 2.x", 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	testutil.Git(b, dir, nil, "commit", "-qam", "bump")
	commits = append(commits, strings.TrimSpace(testutil.Git(b, dir, nil, "rev-parse", "HEAD")))
	benchLoads(b, dir, commits, 1000, readOnly)
}

// benchLoads times loads of dir's fixtureBranch moved to each of two
// commits in turn, each a commit the load before did not read, the
// Loader's caches warm: what each promotion's pass in a running run loads.
func benchLoads(b *testing.B, dir string, commits []string, stages int, readOnly bool) {
	ctx := context.Background()
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), ReadOnlySnapshots: readOnly})
	load := func(i int) {
		b.StopTimer()
		testutil.Git(b, dir, nil, "update-ref", "refs/heads/"+fixtureBranch, commits[i%2])
		b.StartTimer()
		s, err := loader.Load(ctx, dir, fixtureBranch)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Problems) > 0 || len(s.StageIndex) != stages || s.Commit != commits[i%2] {
			b.Fatalf("%d problems, %d stages, commit %s, want %s: %v", len(s.Problems), len(s.StageIndex), s.Commit, commits[i%2], s.Problems)
		}
	}
	load(0)
	load(1)
	b.ResetTimer()
	for i := range b.N {
		load(i)
	}
}

// writeLargeRepository writes landscapes × stagesPer stages, each promoted
// from the one before it (the first from a template), with their overlays.
func writeLargeRepository(b testing.TB, landscapes, stagesPer int) string {
	dir := b.TempDir()
	var ls, stages, configs strings.Builder
	templates := "apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: app\nspec:\n  components:\n    - name: ghcr.io/acme/service-a\n      version: 1.x\n"
	for l := range landscapes {
		land := fmt.Sprintf("land-%02d", l)
		fmt.Fprintf(&ls, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: %s\nspec:\n  path: overlays/%s\n", land, land)
		for s := range stagesPer {
			stage := fmt.Sprintf("stage-%03d", s)
			fmt.Fprintf(&stages, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n  landscape: %s\n  path: %s\n", stage, land, stage)
			source := "kind: VectorTemplate\n    name: app"
			if s > 0 {
				source = fmt.Sprintf("kind: Stage\n    name: stage-%03d\n    landscape: %s", s-1, land)
				// A Stage source waits for an approval: someone must be able to give it.
				source += "\n  approval:\n    approvers:\n      - name: alice\n        publicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBIKmQETi40xtnnFdhUcbxbea0XwaqKrvfMa/IPBVZrx alice@example.com"
			}
			fmt.Fprintf(&configs, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: %s-%s\nspec:\n  source:\n    %s\n  target:\n    kind: Stage\n    name: %s\n    landscape: %s\n  ttlAfterFinished: 12h\n",
				land, stage, source, stage, land)
			overlay := filepath.Join(dir, "overlays", land, stage)
			if err := os.MkdirAll(overlay, 0o755); err != nil {
				b.Fatal(err)
			}
			kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  annotations:\n    vectorflow.dev/vector: app:1.%d.%d\nresources:\n  - ../../../base\nimages:\n  - name: ghcr.io/acme/service-a\n    newTag: \"1.%d.%d\"\n", l, s, l, s)
			if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	files := map[string]string{
		"vectorflow/landscapes.yaml": ls.String(),
		"vectorflow/stages.yaml":     stages.String(),
		"vectorflow/configs.yaml":    configs.String(),
		"vectorflow/templates.yaml":  templates,
		"base/kustomization.yaml":    "resources: []\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkLoadKustomizedConfig1000 loads the 1,000-stage repository with
// its config directory composed by vectorflow/kustomization.yaml, the
// quickstart's layout: "plain" lists the files and is read file by file,
// "built" adds an (empty) transformation, so kustomize builds it. Side by
// side, their ratio is what reading plain kustomizations saves.
func BenchmarkLoadKustomizedConfig1000(b *testing.B) {
	const files = "resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml]\n"
	for _, bc := range []struct{ name, kustomization string }{
		{"plain", files},
		{"built", files + "commonAnnotations: {}\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// One landscape: kustomize refuses two Stages of one name,
			// even in different Landscapes.
			dir := writeLargeRepository(b, 1, 1000)
			if err := os.WriteFile(filepath.Join(dir, "vectorflow", "kustomization.yaml"), []byte(bc.kustomization), 0o644); err != nil {
				b.Fatal(err)
			}
			commitDir(b, dir)
			for b.Loop() {
				s, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, fixtureBranch)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Problems) > 0 || len(s.Configs) != 1000 {
					b.Fatalf("%d problems (%v), %d configs", len(s.Problems), s.Problems, len(s.Configs))
				}
			}
		})
	}
}

// refusingBuilder refuses every build, as kustomize refuses a broken overlay:
// what BuildStages then costs is reporting the problems.
type refusingBuilder struct{}

func (refusingBuilder) Build(_ repofs.Tree, dir string) ([]byte, error) {
	return nil, fmt.Errorf("build %s: refused", dir)
}

func (r refusingBuilder) BuildContext(_ context.Context, tree repofs.Tree, dir string) ([]byte, error) {
	return r.Build(tree, dir)
}

func (r refusingBuilder) BuildReads(_ context.Context, tree repofs.Tree, dir string) ([]byte, []string, error) {
	out, err := r.Build(tree, dir)
	return out, nil, err
}

func (r refusingBuilder) BuildWithOrigins(_ context.Context, tree repofs.Tree, dir string) ([]byte, error) {
	return r.Build(tree, dir)
}

// BenchmarkBuildProblems reports a problem for every stage of 1,000 and of
// 4,000 whose overlay does not build: the cost per stage stays the same
// (each problem names its Stage's file from an index, not a scan).
func BenchmarkBuildProblems(b *testing.B) {
	for _, landscapes := range []int{10, 40} {
		b.Run(fmt.Sprintf("%d", landscapes*100), func(b *testing.B) {
			dir := writeLargeRepository(b, landscapes, 100)
			snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).LoadDir(context.Background(), dir)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				problems, err := BuildStages(context.Background(), snap, refusingBuilder{})
				if err != nil {
					b.Fatal(err)
				}
				if len(problems) != landscapes*100 {
					b.Fatalf("%d problems, want one per stage", len(problems))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(landscapes*100), "ns/stage")
		})
	}
}

// BenchmarkConfigConflicts checks the 1,000 configs of the loaded
// 1,000-stage repository together (cycles, shared targets), as every load
// and every decision of a new snapshot does, stages compared by overlay.
func BenchmarkConfigConflicts(b *testing.B) {
	dir := writeLargeRepository(b, 10, 100)
	commitDir(b, dir)
	s, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		b.Fatal(err)
	}
	configs := make([]*v1alpha1.VectorPromotionConfig, 0, len(s.Configs))
	for _, c := range s.Configs {
		configs = append(configs, c)
	}
	b.ReportAllocs()
	for b.Loop() {
		if conflicts := v1alpha1.ValidateConfigsAt(configs, nil, s.OverlayOf); len(conflicts) != 0 {
			b.Fatalf("%d configs conflict", len(conflicts))
		}
	}
}
