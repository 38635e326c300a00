package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

func cacheFixture() map[string]file {
	return map[string]file{
		"README.md":                             {content: "v1\n"},
		"apps/base/kustomization.yaml":          {content: "resources:\n- deploy.yaml\n"},
		"apps/base/deploy.yaml":                 {content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"},
		"apps/overlays/dev/kustomization.yaml":  {content: "resources:\n- ../../base\nnamePrefix: dev-\n"},
		"apps/overlays/prod/kustomization.yaml": {content: "resources:\n- ../../base\nnamePrefix: prod-\n"},
	}
}

// TestCache walks one overlay through a series of repository changes; each
// step says whether the build must be answered from the cache.
func TestCache(t *testing.T) {
	dir := writeFiles(t, cacheFixture())
	edit := func(name, content string) func(t *testing.T) {
		return func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name    string
		change  func(t *testing.T)
		git     bool // build a fresh commit of dir, else dir itself
		wantHit bool
	}{
		{name: "first build", git: true},
		{name: "same commit again", git: true, change: func(*testing.T) {}, wantHit: true},
		{name: "new commit, unrelated file changed", git: true, change: edit("README.md", "v2\n"), wantHit: true},
		{name: "new commit, other overlay changed", git: true, change: edit("apps/overlays/prod/kustomization.yaml", "resources:\n- ../../base\nnamePrefix: production-\n"), wantHit: true},
		{name: "the folder with the same content", wantHit: true},
		{name: "base changed", git: true, change: edit("apps/base/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 5\n")},
		{name: "base changed, folder", wantHit: true},
		{name: "base changed back", git: true, change: edit("apps/base/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"), wantHit: true},
		{name: "overlay changed", git: true, change: edit("apps/overlays/dev/kustomization.yaml", "resources:\n- ../../base\nnamePrefix: development-\n")},
	}
	r := NewRenderer(Options{})
	var tree repofs.Tree
	for _, step := range steps {
		if step.change != nil {
			step.change(t)
		}
		tree = repofs.DirTree(dir)
		if step.git {
			tree = commitDir(t, dir)
		}
		before := r.Stats()
		got, err := r.Build(tree, "apps/overlays/dev")
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		after := r.Stats()
		if hit := after.Hits == before.Hits+1; hit != step.wantHit {
			t.Errorf("%s: cache hit = %v, want %v (stats %+v -> %+v)", step.name, hit, step.wantHit, before, after)
		}
		want := testutil.KustomizeBuild(t, filepath.Join(dir, "apps/overlays/dev"))
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: output differs from kustomize build (-cli +render):\n%s", step.name, diff)
		}
	}
}

// TestCacheSeesNewKustomizationFile: a second kustomization file next to
// the first changes the build (kustomize refuses two) although no file the
// build read has changed.
func TestCacheSeesNewKustomizationFile(t *testing.T) {
	files := cacheFixture()
	r := NewRenderer(Options{})
	if _, err := r.Build(commitDir(t, writeFiles(t, files)), "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	files["apps/base/kustomization.yml"] = file{content: "resources: []\n"}
	_, err := r.Build(commitDir(t, writeFiles(t, files)), "apps/overlays/dev")
	var be *repofs.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Build with two kustomization files in the base = %v, want a *BuildError", err)
	}
	if got := r.Stats(); got.Hits != 0 || got.Misses != 2 {
		t.Errorf("Stats = %+v, want 0 hits, 2 misses", got)
	}
}

func TestCacheBoundEvictsLeastRecentlyUsed(t *testing.T) {
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	dev, err := NewRenderer(Options{}).Build(tree, "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	// Room for one rendering only.
	r := NewRenderer(Options{CacheBytes: int64(len(dev)) + 1024})
	for _, dir := range []string{"apps/overlays/dev", "apps/overlays/prod", "apps/overlays/prod", "apps/overlays/dev"} {
		if _, err := r.Build(tree, dir); err != nil {
			t.Fatal(err)
		}
	}
	got := r.Stats()
	want := Stats{Hits: 1, Misses: 3, Entries: 1, Bytes: got.Bytes}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
	if got.Bytes > int64(len(dev))+1024 {
		t.Errorf("cache holds %d bytes, bound %d", got.Bytes, len(dev)+1024)
	}
}

// TestBuildConcurrent shares one Renderer between goroutines (run with -race).
func TestBuildConcurrent(t *testing.T) {
	tree := commitDir(t, fixtureRepo)
	r := NewRenderer(Options{})
	want := map[string][]byte{}
	for _, dir := range fixtureDirs {
		want[dir] = testutil.KustomizeBuild(t, filepath.Join(fixtureRepo, dir))
	}
	errs := make(chan error, 4*len(fixtureDirs))
	for range 4 {
		for _, dir := range fixtureDirs {
			go func() {
				got, err := r.Build(tree, dir)
				if err == nil && string(got) != string(want[dir]) {
					err = errors.New(dir + ": output differs from kustomize build")
				}
				errs <- err
			}()
		}
	}
	for range 4 * len(fixtureDirs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestCacheKeepsAFailureUntilWhatItReadChanges: a build that fails fails
// again for the same reads, so asking again answers from the cache (a
// controller asks on every pass) until a file it read, or looked for,
// changes.
func TestCacheKeepsAFailureUntilWhatItReadChanges(t *testing.T) {
	files := cacheFixture()
	files["apps/overlays/dev/kustomization.yaml"] = file{content: "resources:\n- ../../base\n- extra.yaml\n"}
	r := NewRenderer(Options{})
	build := func(step string, wantHit, wantErr bool) {
		t.Helper()
		before := r.Stats()
		_, err := r.Build(commitDir(t, writeFiles(t, files)), "apps/overlays/dev")
		var be *repofs.BuildError
		if wantErr != errors.As(err, &be) {
			t.Fatalf("%s: Build = %v, want a *BuildError: %v", step, err, wantErr)
		}
		if wantErr && !strings.Contains(err.Error(), "extra.yaml") {
			t.Errorf("%s: %v does not name the missing file", step, err)
		}
		if hit := r.Stats().Hits == before.Hits+1; hit != wantHit {
			t.Errorf("%s: cache hit = %v, want %v", step, hit, wantHit)
		}
	}
	build("first build", false, true)
	build("again", true, true)
	files["README.md"] = file{content: "v2\n"}
	build("an unrelated file changed", true, true)
	files["apps/overlays/dev/extra.yaml"] = file{content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"}
	build("the missing file added", false, false)
}

// failingTree fails every read of one file as a broken store would: not
// "no such file", so nothing the build read explains the failure.
type failingTree struct {
	repofs.Tree
	name string
}

func (t failingTree) ReadFile(name string) ([]byte, error) {
	if name == t.name {
		return nil, errors.New("object store: unexpected EOF")
	}
	return t.Tree.ReadFile(name)
}

// TestCacheForgetsAFailureTheStoreCaused: a build that failed because the
// tree could not answer is built again next time.
func TestCacheForgetsAFailureTheStoreCaused(t *testing.T) {
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	r := NewRenderer(Options{})
	if _, err := r.Build(failingTree{Tree: tree, name: "apps/base/deploy.yaml"}, "apps/overlays/dev"); err == nil {
		t.Fatal("Build over a failing store succeeded")
	}
	if _, err := r.Build(tree, "apps/overlays/dev"); err != nil {
		t.Fatalf("Build once the store answers = %v, want the rendering", err)
	}
}

// TestImagesReadsACachedRenderingOnce: Images answers what overlays.Images
// reads from Build's output, and an unchanged overlay's images are read
// once, whatever tree object asks.
func TestImagesReadsACachedRenderingOnce(t *testing.T) {
	files := cacheFixture()
	files["apps/base/deploy.yaml"] = file{content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/app:1.0.0\n"}
	dir := writeFiles(t, files)
	r := NewRenderer(Options{})
	out, err := NewRenderer(Options{}).Build(commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	want, err := overlays.Images(out)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Images(context.Background(), commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("Images (-overlays.Images +got):\n%s", diff)
	}
	again, err := r.Images(context.Background(), commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || &first[0] != &again[0] {
		t.Errorf("Images read the same rendering twice: %p, %p", first, again)
	}
}

// TestImagesOutlastTheOutputs: the images of an overlay are remembered
// apart from its output, so a controller that checks every overlay on
// every pass does not build again the overlays whose outputs the cache
// had no room for; a change to what the build read is still seen.
func TestImagesOutlastTheOutputs(t *testing.T) {
	files := cacheFixture()
	files["apps/base/deploy.yaml"] = file{content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/app:1.0.0\n"}
	r := NewRenderer(Options{CacheBytes: 1}) // no room for any output
	images := func(step string) []overlays.RenderedImage {
		t.Helper()
		got, err := r.Images(context.Background(), commitDir(t, writeFiles(t, files)), "apps/overlays/dev")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return got
	}
	images("first")
	images("again")
	if got := r.Stats(); got.Misses != 1 || got.Entries != 0 {
		t.Errorf("Stats = %+v, want one build and no output kept", got)
	}
	files["apps/base/deploy.yaml"] = file{content: strings.Replace(files["apps/base/deploy.yaml"].content, "app:1.0.0", "app:2.0.0", 1)}
	if got := images("base changed"); len(got) != 1 || got[0].Image != "registry.example.com/app:2.0.0" {
		t.Errorf("after the base changed: %+v, want the app at 2.0.0", got)
	}
}

// TestImagesAllAnswersAsImages: each overlay's answer is at its index, a
// failure too.
func TestImagesAllAnswersAsImages(t *testing.T) {
	files := cacheFixture()
	files["apps/overlays/broken/kustomization.yaml"] = file{content: "resources:\n- missing.yaml\n"}
	files["apps/base/deploy.yaml"] = file{content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/app:1.0.0\n"}
	files["apps/overlays/prod/kustomization.yaml"] = file{content: "resources:\n- ../../base\nimages:\n- name: registry.example.com/app\n  newTag: 2.0.0\n"}
	tree := commitDir(t, writeFiles(t, files))
	dirs := []Overlay{{tree, "apps/overlays/dev"}, {tree, "apps/overlays/broken"}, {tree, "apps/overlays/prod"}}
	r := NewRenderer(Options{})
	got, errs := r.ImagesAll(context.Background(), dirs)
	for i, d := range dirs {
		want, wantErr := NewRenderer(Options{}).Images(context.Background(), d.Tree, d.Dir)
		if (errs[i] == nil) != (wantErr == nil) || !cmp.Equal(want, got[i]) {
			t.Errorf("%s: ImagesAll gave %+v, %v; Images gives %+v, %v", d.Dir, got[i], errs[i], want, wantErr)
		}
	}
	if errs[1] == nil || len(got[0]) != 1 || len(got[2]) != 1 || got[2][0].Image != "registry.example.com/app:2.0.0" {
		t.Errorf("ImagesAll = %+v, %v; want dev's and prod's images, and the broken overlay's failure", got, errs)
	}
}

// countingTree counts the names a lookup asks the tree about.
type countingTree struct {
	repofs.Tree
	asked *[]string
}

func (t countingTree) Stat(name string) (fs.FileInfo, error) {
	*t.asked = append(*t.asked, "stat "+name)
	return t.Tree.Stat(name)
}

func (t countingTree) Hash(name string) (string, error) {
	*t.asked = append(*t.asked, "hash "+name)
	return t.Tree.Hash(name)
}

func (t countingTree) ReadDir(name string) ([]fs.DirEntry, error) {
	*t.asked = append(*t.asked, "readdir "+name)
	return t.Tree.ReadDir(name)
}

// TestCacheChecksADirectoryByItsHash: a rendering is looked up on every
// pass, so once its dependencies held in a commit, a directory whose every
// entry the build read (or looked for) is checked by its tree hash alone,
// and what is not a dependency (a file added beside them) still costs no
// build.
func TestCacheChecksADirectoryByItsHash(t *testing.T) {
	files := cacheFixture()
	r := NewRenderer(Options{})
	const dev = "apps/overlays/dev"
	lookup := func(step string, wantHit bool) []string {
		t.Helper()
		var asked []string
		tree := &memoTree{Tree: countingTree{Tree: commitDir(t, writeFiles(t, files)), asked: &asked}}
		if _, hit := r.cache.lookup(tree, dev); hit != wantHit {
			t.Fatalf("%s: hit = %v, want %v", step, hit, wantHit)
		}
		return asked
	}
	if _, err := r.Build(commitDir(t, writeFiles(t, files)), dev); err != nil {
		t.Fatal(err)
	}
	files["README.md"] = file{content: "v2\n"}
	lookup("an unrelated file changed", true)
	files["README.md"] = file{content: "v3\n"}
	asked := lookup("the same again", true)
	if diff := cmp.Diff([]string{"hash apps/base", "hash apps/overlays/dev"}, asked); diff != "" {
		t.Errorf("a lookup where the directories are unchanged asks (-want +got):\n%s", diff)
	}
	files["apps/base/NOTES.md"] = file{content: "not read by the build\n"}
	lookup("a file beside the base's", true)
	files["apps/base/deploy.yaml"] = file{content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 3\n"}
	lookup("a file the base reads changed", false)
}

// TestCacheChecksWhatALinkInADirectoryPointsAt: a directory holding a link
// is not checked by its hash, which names only the link's target: a change
// to what the link points at is a change to the build. Here the overlay's
// kustomization file is a link, as teams share one between overlays.
func TestCacheChecksWhatALinkInADirectoryPointsAt(t *testing.T) {
	files := cacheFixture()
	files["apps/kustomizations/dev.yaml"] = file{content: "resources:\n- ../../base\nnamePrefix: dev-\n"}
	files["apps/overlays/dev/kustomization.yaml"] = file{link: "../../kustomizations/dev.yaml"}
	r := NewRenderer(Options{})
	for i, step := range []struct {
		name     string
		change   func()
		wantHit  bool
		wantName string
	}{
		{name: "first build", wantName: "dev-app"},
		{name: "an unrelated file changed", change: func() { files["README.md"] = file{content: "v2\n"} }, wantHit: true, wantName: "dev-app"},
		{name: "again", change: func() { files["README.md"] = file{content: "v3\n"} }, wantHit: true, wantName: "dev-app"},
		{name: "the linked file changed", change: func() {
			files["apps/kustomizations/dev.yaml"] = file{content: "resources:\n- ../../base\nnamePrefix: development-\n"}
		}, wantName: "development-app"},
	} {
		if step.change != nil {
			step.change()
		}
		dir := writeFiles(t, files)
		before := r.Stats()
		got, err := r.Build(commitDir(t, dir), "apps/overlays/dev")
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if hit := r.Stats().Hits == before.Hits+1; hit != step.wantHit {
			t.Errorf("step %d, %s: cache hit = %v, want %v", i, step.name, hit, step.wantHit)
		}
		// (The kustomize CLI refuses a kustomization file linked from
		// outside its directory; Flux's builds, without load restrictions,
		// take it, as the renderer does.)
		if !strings.Contains(string(got), "name: "+step.wantName+"\n") {
			t.Errorf("%s: the render names no %s:\n%s", step.name, step.wantName, got)
		}
	}
}

// TestChecksAnswerAsTheDeps changes a small repository at random, commit
// after commit, and requires a rendering's checks, made in earlier
// commits, to answer every lookup as its dependencies do: a directory's
// hash must never vouch for what it does not hold (a link's target), and
// never refuse what they accept.
func TestChecksAnswerAsTheDeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	names := []string{"o/kustomization.yaml", "o/patch.yaml", "b/kustomization.yaml", "b/app.yaml", "b/sub/x.yaml", "s/shared.yaml"}
	targets := []string{"../s/shared.yaml", "../s/shared.yaml", "app.yaml", "../b/app.yaml", "nothing-here"}
	// What a build of o on b reads, looks for and stats, as buildFS records it.
	read := []string{"o/kustomization.yaml", "o/patch.yaml", "b/kustomization.yaml", "b/app.yaml"}
	absent := []string{"o/Kustomization", "o/kustomization.yml", "b/Kustomization", "b/kustomization.yml"}
	files := map[string]file{}
	for _, n := range read {
		files[n] = file{content: n + " v0\n"}
	}
	files["s/shared.yaml"] = file{content: "shared v0\n"}
	depsOf := func(tree repofs.Tree) ([]dep, bool) {
		var deps []dep
		for _, d := range []string{"o", "b"} {
			if info, err := tree.Stat(d); err != nil || !info.IsDir() {
				return nil, false
			}
			deps = append(deps, dep{name: d, kind: depDir})
		}
		for _, n := range read {
			h, err := tree.Hash(n)
			if err != nil {
				return nil, false
			}
			deps = append(deps, dep{name: n, kind: depHash, hash: h})
		}
		for _, n := range absent {
			if _, err := tree.Stat(n); !errors.Is(err, fs.ErrNotExist) {
				return nil, false
			}
			deps = append(deps, dep{name: n, kind: depAbsent})
		}
		slices.SortFunc(deps, func(a, b dep) int { return strings.Compare(a.name, b.name) })
		return deps, true
	}
	var renderings []*rendering
	for step := range 600 {
		n := names[rng.IntN(len(names))]
		switch rng.IntN(5) {
		case 0:
			files[n] = file{content: fmt.Sprintf("%s v%d\n", n, step)}
		case 1:
			files[n] = file{link: targets[rng.IntN(len(targets))]}
		case 2:
			delete(files, n)
		case 3:
			files["s/shared.yaml"] = file{content: fmt.Sprintf("shared v%d\n", step)}
		default: // the same files in a new commit: lookups that hold make checks
		}
		tree := commitDir(t, writeFiles(t, files))
		for i, r := range renderings {
			if got, want := r.holds(tree), depsHold(tree, r.deps); got != want {
				t.Fatalf("step %d, rendering %d: holds = %v, the deps say %v (files %v)", step, i, got, want, files)
			}
		}
		if deps, ok := depsOf(tree); ok {
			renderings = append(renderings, newRendering("o", deps, nil))
			if len(renderings) > 20 {
				renderings = renderings[1:]
			}
		}
	}
	for _, r := range renderings {
		if checks := r.checks.Load(); checks != nil && slices.ContainsFunc(*checks, func(d dep) bool { return d.kind == depTree }) {
			return
		}
	}
	t.Fatal("no rendering was checked by a directory's hash")
}
