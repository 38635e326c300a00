package source

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// goodObjects are the objects of testdata/good, in snapshot order.
var goodObjects = []string{
	"vectorflow/landscapes.yaml Landscape/dev",
	"vectorflow/landscapes.yaml Landscape/prod",
	"vectorflow/stages.yaml Stage/dev",
	"vectorflow/stages.yaml Stage/test",
	"vectorflow/stages.yaml Stage/prod",
	"vectorflow/templates.yaml VectorTemplate/app",
	"vectorflow/templates.yaml VectorTemplate/platform",
	"vectorflow/configs.yaml VectorPromotionConfig/dev-to-test",
	"vectorflow/configs.yaml VectorPromotionConfig/latest-to-dev",
	"vectorflow/configs.yaml VectorPromotionConfig/test-to-prod",
}

// goodStages are the stage overlays of testdata/good with the vectors
// their kustomization files hold; each builds on apps/base.
func goodStages(url, branch, commit string) map[string]StageRef {
	ref := func(landscape, name, overlay, vector string, tags ...string) StageRef {
		base, _ := filepath.Rel(overlay, "apps/base")
		images := []v1alpha1.VectorComponent{{Name: "ghcr.io/acme/service-a", Tag: tags[0]}}
		if len(tags) > 1 {
			images = append(images, v1alpha1.VectorComponent{Name: "ghcr.io/acme/service-b", Tag: tags[1]})
		}
		return StageRef{Landscape: landscape, Name: name, URL: url, Branch: branch, Commit: commit, Overlay: overlay,
			Vector: overlays.StageVector{Vector: vector, Images: images, BuildsOn: []string{filepath.ToSlash(base)}}}
	}
	return map[string]StageRef{
		"dev/dev":   ref("dev", "dev", "apps/overlays/dev", "app:2026.7.27-dev", "1.4.2", "1.4.0"),
		"dev/test":  ref("dev", "test", "apps/overlays/test", "app:2026.7.27-test", "1.3.0", "1.4.0"),
		"prod/prod": ref("prod", "prod", "environments/prod", "", "1.2.0"),
	}
}

// TestLoadGood loads the fixture as a plain directory and from a real git
// server: both give every object, every stage's overlay and vector, and no
// problem; every overlay builds.
func TestLoadGood(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	commit := strings.TrimSpace(testutil.Git(t, srv.BarePath("config"), nil, "rev-parse", fixtureBranch))
	auth := Auth{Username: srv.Username, Password: srv.Password}

	tests := []struct {
		name, url, branch, wantBranch, wantCommit string
	}{
		{name: "plain directory", url: "testdata/good", branch: "ignored"},
		{name: "HTTP", url: srv.HTTPURL("config"), branch: fixtureBranch, wantBranch: fixtureBranch, wantCommit: commit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), Auth: func(string) Auth { return auth }})
			snap, err := loader.Load(context.Background(), tt.url, tt.branch)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Branch != tt.wantBranch || snap.Commit != tt.wantCommit {
				t.Errorf("branch, commit = %q, %q, want %q, %q", snap.Branch, snap.Commit, tt.wantBranch, tt.wantCommit)
			}
			if diff := cmp.Diff([]Problem(nil), snap.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(goodObjects, objectList(snap)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(goodStages(tt.url, tt.wantBranch, tt.wantCommit), stageIndex(snap)); diff != "" {
				t.Errorf("stage index (-want +got):\n%s", diff)
			}
			if got := snap.Configs["dev-to-test"]; got == nil || got.KeepLastPromotions() != 5 || !got.RequireApproval() {
				t.Errorf("config dev-to-test not decoded and defaulted: %+v", got)
			}
			if got := snap.Templates["app"].Spec.Base.Kind; got != v1alpha1.VectorTemplateKind {
				t.Errorf("template app base kind = %q, want the default %q", got, v1alpha1.VectorTemplateKind)
			}
			if diff := cmp.Diff([]Problem(nil), mustBuildStages(t, snap, render.NewRenderer(render.Options{}))); diff != "" {
				t.Errorf("build problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadBroken loads a copy of the fixture with one fault of each kind:
// each is reported at its file, object and field, and the good objects
// still load.
func TestLoadBroken(t *testing.T) {
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), "testdata/broken", "")
	if err != nil {
		t.Fatal(err)
	}
	const faults = "vectorflow/faults.yaml"
	want := []Problem{
		{File: faults, Kind: "Pipeline", Name: "release", Field: "kind", Reason: `unknown kind "Pipeline": use one of Landscape, Stage, VectorTemplate, VectorPromotionConfig, StageVersionUsage`},
		{File: faults, Kind: "Stage", Name: "escape", Field: "spec.path", Reason: `Invalid value: "../../etc": must stay inside the landscape root: it climbs out with ..`},
		{File: faults, Kind: "Stage", Name: "ghost", Field: "spec.path", Reason: `overlay "apps/overlays/ghost" does not exist in testdata/broken`},
		{File: faults, Kind: "Stage", Name: "old-api", Field: "apiVersion", Reason: `must be vectorflow.dev/v1alpha1, not "vectorflow.dev/v1beta1"`},
		{File: faults, Kind: "Stage", Name: "orphan", Field: "spec.landscape", Reason: `Landscape "qa" not found: define it in vectorflow or fix the name`},
		{File: faults, Kind: "Stage", Name: "typo", Field: "spec.overlay", Reason: "unknown field"},
		{File: faults, Kind: "VectorPromotionConfig", Name: "bad-ttl", Field: "spec.ttlAfterFinished", Reason: `invalid duration "1 day": use a Go duration such as 30m, 24h or 1h30m`},
		{File: faults, Kind: "VectorPromotionConfig", Name: "from-missing-template", Field: "spec.source.name", Reason: `VectorTemplate "nightly" not found`},
		{File: faults, Kind: "VectorPromotionConfig", Name: "to-missing-landscape", Field: "spec.target.landscape", Reason: `Landscape "production" not found`},
		{File: faults, Kind: "VectorPromotionConfig", Name: "to-missing-stage", Field: "spec.target.name", Reason: `Stage "staging" not found in landscape "dev"`},
		{File: faults, Kind: "VectorTemplate", Name: "dangling", Field: "spec.base.name", Reason: `VectorTemplate "nowhere" not found`},
		{File: faults, Kind: "VectorTemplate", Name: "loop-a", Field: "spec.base.name", Reason: "base chain forms a cycle: loop-a → loop-b → loop-a; one template must have no base"},
		{File: faults, Kind: "VectorTemplate", Name: "loop-b", Field: "spec.base.name", Reason: "base chain forms a cycle: loop-b → loop-a → loop-b; one template must have no base"},
		{File: "vectorflow/malformed.yaml", Reason: "malformed YAML in document 1: yaml: line 4: did not find expected ',' or ']'"},
		{File: "vectorflow/team-b.yaml", Kind: "Landscape", Name: "dev", Field: "metadata.name", Reason: `duplicate Landscape "dev": already defined in vectorflow/landscapes.yaml; rename or remove one`},
	}
	if diff := cmp.Diff(want, snap.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	// Every good object still loads, next to the faulty ones that decode.
	got := map[string]bool{}
	for _, o := range objectList(snap) {
		got[o] = true
	}
	for _, o := range goodObjects {
		if !got[o] {
			t.Errorf("good object %s did not load", o)
		}
	}
	if diff := cmp.Diff(goodStages("testdata/broken", "", "")["dev/dev"], stageIndex(snap)["dev/dev"]); diff != "" {
		t.Errorf("stage dev/dev (-want +got):\n%s", diff)
	}
	if snap.Landscapes["dev"].Spec.Path != "" {
		t.Errorf("the duplicate Landscape dev replaced the first one: %+v", snap.Landscapes["dev"].Spec)
	}

	const prefix = `overlay "apps/overlays/broken" does not build: `
	build := mustBuildStages(t, snap, render.NewRenderer(render.Options{}))
	for i, p := range build {
		if rest, ok := strings.CutPrefix(p.Reason, prefix); ok && strings.Contains(rest, "missing-service.yaml") {
			build[i].Reason = prefix + "..."
		}
	}
	wantBuild := []Problem{{File: faults, Kind: "Stage", Name: "broken", Field: "spec.path", Reason: prefix + "..."}}
	if diff := cmp.Diff(wantBuild, build); diff != "" {
		t.Errorf("build problems (-want +got):\n%s", diff)
	}
}

// TestLoadKustomizedConfig renders a config directory that holds a
// kustomization file instead of reading its files one by one: a patch in
// the kustomization shows in the loaded object.
func TestLoadKustomizedConfig(t *testing.T) {
	dir := testutil.CopyDir(t, "testdata/good")
	writeFile(t, dir, "vectorflow/kustomization.yaml", `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml, ../shared]
patches:
  - target: {kind: VectorPromotionConfig, name: dev-to-test}
    patch: |
      - op: replace
        path: /spec/keepLastPromotions
        value: 3
`)
	if err := os.Mkdir(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "shared/kustomization.yaml", "resources: [templates.yaml]\n")
	writeFile(t, dir, "shared/templates.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: shared\n")
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	snap, err := loader.Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Problem(nil), snap.Problems); diff != "" {
		t.Fatalf("problems (-want +got):\n%s", diff)
	}
	if got := len(snap.Objects); got != len(goodObjects)+1 {
		t.Errorf("loaded %d objects, want %d", got, len(goodObjects))
	}
	if got := snap.Configs["dev-to-test"].KeepLastPromotions(); got != 3 {
		t.Errorf("keepLastPromotions = %d, want the patched 3", got)
	}
	if o, _ := snap.Object(v1alpha1.StageKind, "dev/dev"); o.File != "vectorflow/stages.yaml" {
		t.Errorf("rendered object file = %q, want the file that holds it", o.File)
	}
	if o, _ := snap.Object(v1alpha1.VectorTemplateKind, "shared"); o.File != "shared/templates.yaml" {
		t.Errorf("object of a base: file = %q, want the base's file", o.File)
	}
	if a := snap.Stages["dev/dev"].GetAnnotations(); a[repofs.OriginAnnotation] != "" {
		t.Errorf("the origin annotation stayed on the object: %v", a)
	}

	// A change outside the config directory, in a base it renders, shows
	// on reload: the decode cache must not be keyed by the directory alone.
	writeFile(t, dir, "shared/templates.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: shared-v2\n")
	again, err := loader.Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if again.Templates["shared-v2"] == nil || again.Templates["shared"] != nil {
		t.Errorf("reload after a base changed: templates %v, want shared-v2 instead of shared", slices.Sorted(maps.Keys(again.Templates)))
	}
}

// writeProdLandscape makes the config in dir put the prod landscape in
// the repository at url, branch release, directory environments.
func writeProdLandscape(t *testing.T, dir, url string) {
	t.Helper()
	writeFile(t, dir, "vectorflow/landscapes.yaml", `apiVersion: vectorflow.dev/v1alpha1
kind: Landscape
metadata:
  name: dev
---
apiVersion: vectorflow.dev/v1alpha1
kind: Landscape
metadata:
  name: prod
spec:
  repository:
    url: `+url+`
    branch: release
  path: environments
`)
}

// serveConfigWithProd serves the good fixture as repository "config",
// whose prod landscape lives on branch release of repository "prod".
func serveConfigWithProd(t *testing.T) *testutil.GitServer {
	t.Helper()
	srv := testutil.StartGitServer(t)
	config := testutil.CopyDir(t, "testdata/good")
	writeProdLandscape(t, config, srv.BarePath("prod"))
	srv.InitRepo(t, config, fixtureBranch, "config")
	srv.InitRepo(t, "testdata/good", "release", "prod")
	return srv
}

// TestLoadCrossRepositoryLandscape puts the prod landscape in a second
// repository: its stage resolves there, at that repository's commit.
func TestLoadCrossRepositoryLandscape(t *testing.T) {
	srv := testutil.StartGitServer(t)
	config := testutil.CopyDir(t, "testdata/good")
	writeProdLandscape(t, config, srv.HTTPURL("prod"))
	if err := os.RemoveAll(filepath.Join(config, "environments")); err != nil {
		t.Fatal(err)
	}
	srv.InitRepo(t, config, fixtureBranch, "config")
	srv.InitRepo(t, "testdata/good", "release", "prod")
	prodCommit := strings.TrimSpace(testutil.Git(t, srv.BarePath("prod"), nil, "rev-parse", "release"))

	auth := Auth{Username: srv.Username, Password: srv.Password}
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), Auth: func(string) Auth { return auth }}).Load(context.Background(), srv.HTTPURL("config"), fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Problem(nil), snap.Problems); diff != "" {
		t.Fatalf("problems (-want +got):\n%s", diff)
	}
	want := goodStages(srv.HTTPURL("prod"), "release", prodCommit)["prod/prod"]
	if diff := cmp.Diff(want, stageIndex(snap)["prod/prod"]); diff != "" {
		t.Errorf("stage prod/prod (-want +got):\n%s", diff)
	}
}

// TestLoadFollowsNewCommits reloads after a commit that changes one overlay
// and one config: the caches keyed by tree hash must not serve stale data.
func TestLoadFollowsNewCommits(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	url := srv.BarePath("config")
	first, err := loader.Load(context.Background(), url, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	again, err := loader.Load(context.Background(), url, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stageIndex(first), stageIndex(again)); diff != "" {
		t.Errorf("reload of an unchanged repository differs (-first +again):\n%s", diff)
	}
	// A caller changing its snapshot does not change the next one.
	first.Configs["dev-to-test"].Status.Sequence = 99

	pushCommit(t, srv, "config", "apps/overlays/test/kustomization.yaml", "  - name: ghcr.io/acme/service-c\n    newTag: \"2.0.0\"\n")
	pushCommit(t, srv, "config", "vectorflow/landscapes.yaml", "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: qa\n")
	next, err := loader.Load(context.Background(), url, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if next.Commit == first.Commit {
		t.Fatal("the reload did not see the new commits")
	}
	if got := next.StageIndex["dev/test"].Vector.Images; len(got) != 3 || got[2].Tag != "2.0.0" {
		t.Errorf("dev/test images after the commit = %+v, want service-c 2.0.0 appended", got)
	}
	if next.StageIndex["dev/dev"].OverlayHash != first.StageIndex["dev/dev"].OverlayHash {
		t.Error("the unchanged dev overlay changed hash")
	}
	if next.Landscapes["qa"] == nil {
		t.Error("the new Landscape qa is missing")
	}
	if got := next.Configs["dev-to-test"].Status.Sequence; got != 0 {
		t.Errorf("a change to an earlier snapshot leaked into the next: sequence %d", got)
	}
}

func objectList(s *Snapshot) []string {
	var out []string
	for _, o := range s.Objects {
		out = append(out, o.File+" "+o.Kind+"/"+o.Name)
	}
	return out
}

// stageIndex is the snapshot's stage index without the trees and hashes,
// which are not comparable values.
func stageIndex(s *Snapshot) map[string]StageRef {
	out := map[string]StageRef{}
	for k, v := range s.StageIndex {
		if v.Tree == nil || v.OverlayHash == "" {
			continue // reported as missing below by the diff
		}
		v.Tree, v.OverlayHash = nil, ""
		out[k] = v
	}
	return out
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceInFile rewrites the file name under dir with every old replaced
// by new; the file must hold old.
func replaceInFile(t *testing.T, dir, name, old, new string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not hold %q", name, old)
	}
	writeFile(t, dir, name, strings.ReplaceAll(string(data), old, new))
}

// TestLoadLandscapeProblems checks a landscape whose root or repository
// cannot be read is reported on the landscape's own field.
func TestLoadLandscapeProblems(t *testing.T) {
	dir := testutil.CopyDir(t, "testdata/good")
	missing := filepath.Join(t.TempDir(), "missing")
	writeFile(t, dir, "vectorflow/landscapes.yaml", `apiVersion: vectorflow.dev/v1alpha1
kind: Landscape
metadata:
  name: dev
spec:
  path: nowhere
---
apiVersion: vectorflow.dev/v1alpha1
kind: Landscape
metadata:
  name: prod
spec:
  repository:
    url: `+missing+`
`)
	snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	const file = "vectorflow/landscapes.yaml"
	want := []Problem{
		{File: file, Kind: "Landscape", Name: "dev", Field: "spec.path", Reason: `directory "nowhere" does not exist in ` + dir},
		{File: file, Kind: "Landscape", Name: "prod", Field: "spec.repository.url",
			Reason: "cannot read the landscape repository: read " + missing + ": stat " + missing + ": no such file or directory"},
	}
	if diff := cmp.Diff(want, snap.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if len(snap.StageIndex) != 0 {
		t.Errorf("stages of unreadable landscapes were indexed: %v", snap.StageIndex)
	}
}

// TestSnapshotReadDuringLoad reads an earlier snapshot's overlays while the
// same Loader fetches a new commit into the shared store (run with -race).
func TestSnapshotReadDuringLoad(t *testing.T) {
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, "testdata/good", fixtureBranch, "config")
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	url := srv.BarePath("config")
	first, err := loader.Load(context.Background(), url, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	pushCommit(t, srv, "config", "apps/base/deployment.yaml", "# new\n")
	done := make(chan error)
	go func() {
		_, err := loader.Load(context.Background(), url, fixtureBranch)
		done <- err
	}()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
			if _, err := overlays.ReadStageVector(first.Tree, "apps/overlays/dev"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustBuildStages(t *testing.T, snap *Snapshot, r *render.Renderer) []Problem {
	t.Helper()
	problems, err := BuildStages(context.Background(), snap, r)
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// TestLoadReusesUnchangedSnapshot: a load of the commit the loader just
// loaded, with every landscape repository at the commit it was, reuses the
// last resolution (a running run's idle pass), as a snapshot of its own,
// reading through the new load's trees; a new commit in a landscape's own
// repository is resolved afresh.
func TestLoadReusesUnchangedSnapshot(t *testing.T) {
	srv := serveConfigWithProd(t)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})})
	load := func() *Snapshot {
		t.Helper()
		snap, err := loader.Load(context.Background(), srv.BarePath("config"), fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	first := load()
	if len(first.Problems) > 0 {
		t.Fatalf("problems: %v", first.Problems)
	}
	second := load()
	if loader.snapshotsReused != 1 {
		t.Errorf("the second load of an unchanged repository reused %d snapshots, want 1", loader.snapshotsReused)
	}
	if diff := cmp.Diff(stageIndex(first), stageIndex(second)); diff != "" {
		t.Errorf("the reused snapshot differs (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(first.Objects, second.Objects); diff != "" {
		t.Errorf("the reused snapshot's objects differ (-first +second):\n%s", diff)
	}
	for key, ref := range second.StageIndex {
		if ref.Tree == first.StageIndex[key].Tree {
			t.Errorf("stage %s of the reused snapshot reads through the last load's tree, whose read budget is spent", key)
		}
		if ref.URL == second.URL && ref.Tree != second.Tree {
			t.Errorf("stage %s of the config repository reads through another tree than the snapshot's", key)
		}
	}
	first.Configs["dev-to-test"].Spec.Approval.Approvers = nil
	second.Configs["dev-to-test"].Spec.Approval.Approvers = nil
	second.Stages["dev/dev"].Spec.Path = "elsewhere"
	if third := load(); cmp.Diff(stageIndex(first), stageIndex(third)) != "" ||
		len(third.Configs["dev-to-test"].Spec.Approval.Approvers) == 0 ||
		third.Stages["dev/dev"].Spec.Path == "elsewhere" {
		t.Error("a caller changing its snapshot changed the next one")
	}

	// A new overlay vector in the landscape's own repository.
	work := t.TempDir()
	testutil.Git(t, "", nil, "clone", "-q", "--branch", "release", srv.BarePath("prod"), work)
	overlay := filepath.Join(work, "environments/prod/kustomization.yaml")
	data, err := os.ReadFile(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, []byte(strings.Replace(string(data), `newTag: "1.2.0"`, `newTag: "1.3.0"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, work, nil, "commit", "-qam", "prod 1.3.0")
	testutil.Git(t, work, nil, "push", "-q", "origin", "release")
	reused := loader.snapshotsReused
	fourth := load()
	if loader.snapshotsReused != reused {
		t.Error("a load after the landscape repository moved reused the last snapshot")
	}
	if got := fourth.StageIndex["prod/prod"].Vector.Images[0].Tag; got != "1.3.0" {
		t.Errorf("prod's vector after its repository moved has service-a at %q, want 1.3.0", got)
	}
}

// TestReadOnlySnapshots: with ReadOnlySnapshots a load hands out the
// snapshot the loader keeps, not a copy (a reuse too, its stages reading
// through the new load's trees), and in a test binary the next load
// panics, naming what changed, when a caller changed one it was handed.
func TestReadOnlySnapshots(t *testing.T) {
	srv := serveConfigWithProd(t)
	loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), ReadOnlySnapshots: true})
	loader.checkSnapshots = true // checked under go test -bench too
	load := func() (snap *Snapshot, panicked string) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				panicked = fmt.Sprint(r)
			}
		}()
		snap, err := loader.Load(context.Background(), srv.BarePath("config"), fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		return snap, ""
	}
	first, _ := load()
	second, _ := load()
	if loader.snapshotsReused != 1 {
		t.Fatalf("the second load reused %d snapshots, want 1", loader.snapshotsReused)
	}
	if first.Configs["dev-to-test"] != second.Configs["dev-to-test"] {
		t.Error("the second load handed out a copy of dev-to-test, not the loader's own")
	}
	for key, ref := range second.StageIndex {
		if ref.Tree == first.StageIndex[key].Tree {
			t.Errorf("stage %s of the reused snapshot reads through the last load's tree, whose read budget is spent", key)
		}
	}
	second.Problems = append(second.Problems, Problem{Reason: "the caller's own"}) // a slice of its own
	if _, panicked := load(); panicked != "" {
		t.Fatalf("a load after an append to a handed-out slice panicked: %s", panicked)
	}

	second.Stages["dev/dev"].Spec.Path = "elsewhere"
	_, panicked := load()
	if !strings.Contains(panicked, "changed after a load handed it out read-only") || !strings.Contains(panicked, "Stage/dev") {
		t.Fatalf("a load after a caller changed a stage: panic %q, want one naming Stage/dev", panicked)
	}
}
