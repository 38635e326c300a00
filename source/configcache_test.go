package source

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestConfigCacheFollowsLinkedFiles: a config file that is a symbolic link
// to a file outside the config directory is read through the link, so a
// change of the linked file changes the snapshot, although the config
// directory's own tree is unchanged.
func TestConfigCacheFollowsLinkedFiles(t *testing.T) {
	sameAndNewLoader(t, func(t *testing.T, restart bool) {
		dir := goodFixtureWithLink(t, "vectorflow/landscapes.yaml", "shared/landscapes.yaml", "../shared/landscapes.yaml")
		first, next, _ := reloadAfter(t, dir, restart, nil, func() {
			writeFile(t, dir, "shared/landscapes.yaml", "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: qa\n")
			testutil.Git(t, dir, nil, "commit", "-qam", "qa")
		})
		if first.Landscapes["qa"] != nil || first.Landscapes["dev"] == nil {
			t.Fatalf("landscapes before the change: %v", first.Landscapes)
		}
		if next.Landscapes["qa"] == nil || next.Landscapes["dev"] != nil {
			t.Errorf("after the linked file changed, landscapes %v, want only qa: the decode of the old file was reused", keys.Sorted(next.Landscapes))
		}
	})
}

// commitFixture copies a fixture into a new Git repository.
func commitFixture(t *testing.T, fixture string) string {
	t.Helper()
	dir := testutil.CopyDir(t, fixture)
	commitDir(t, dir)
	return dir
}

// commitDir makes dir a Git repository whose fixtureBranch holds all of it.
func commitDir(t testing.TB, dir string) {
	t.Helper()
	testutil.Git(t, dir, nil, "init", "-q", "-b", fixtureBranch)
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-qm", "config")
}

// reloadAfter loads dir with a Loader on a fresh cache directory, calls
// change, and loads dir again: by the same Loader, or, with restart, by a
// new one on the same cache directory, as a new process would. read loads
// with a Loader; nil is Load of fixtureBranch. It returns both snapshots
// and the Loader that read the second.
func reloadAfter(t *testing.T, dir string, restart bool, read func(*Loader) (*Snapshot, error), change func()) (first, next *Snapshot, second *Loader) {
	t.Helper()
	if read == nil {
		read = func(l *Loader) (*Snapshot, error) { return l.Load(context.Background(), dir, fixtureBranch) }
	}
	cacheDir := t.TempDir()
	newLoader := func() *Loader {
		return NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), CacheDir: cacheDir})
	}
	second = newLoader()
	first, err := read(second)
	if err != nil {
		t.Fatal(err)
	}
	change()
	if restart {
		second = newLoader()
	}
	if next, err = read(second); err != nil {
		t.Fatal(err)
	}
	return first, next, second
}

// sameAndNewLoader runs test twice: restart false keeps one Loader
// throughout (its memory), true makes a new one on the same cache
// directory for the second load (the disk, as a new process).
func sameAndNewLoader(t *testing.T, test func(t *testing.T, restart bool)) {
	for _, restart := range []bool{false, true} {
		name := "in memory"
		if restart {
			name = "on disk, a new loader"
		}
		t.Run(name, func(t *testing.T) { test(t, restart) })
	}
}

// TestConfigCacheReusedByNewLoader: a Loader made later (as by a new
// process) takes the decode of an unchanged config directory from disk,
// objects and problems exactly as a decode gives them, for plain files, a
// plain kustomization and a kustomized directory.
func TestConfigCacheReusedByNewLoader(t *testing.T) {
	plainKustomization := func(dir string) {
		writeFile(t, dir, "vectorflow/kustomization.yaml", "resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml]\n")
	}
	kustomized := func(dir string) {
		writeFile(t, dir, "vectorflow/kustomization.yaml", "resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml]\ncommonAnnotations: {team: a}\n")
	}
	for _, tt := range []struct {
		name, fixture string
		change        func(dir string)
	}{
		{name: "good", fixture: "testdata/good"},
		{name: "broken", fixture: "testdata/broken"},
		{name: "plain kustomization", fixture: "testdata/good", change: plainKustomization},
		{name: "kustomized", fixture: "testdata/good", change: kustomized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.CopyDir(t, tt.fixture)
			if tt.change != nil {
				tt.change(dir)
			}
			commitDir(t, dir)
			want, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, fixtureBranch)
			if err != nil {
				t.Fatal(err)
			}
			cacheDir := t.TempDir()
			load := func() (*Snapshot, int, int) {
				l := NewLoader(Options{Renderer: render.NewRenderer(render.Options{CacheDir: cacheDir}), CacheDir: cacheDir})
				snap, err := l.Load(context.Background(), dir, fixtureBranch)
				if err != nil {
					t.Fatal(err)
				}
				return snap, l.diskHits, l.filesDecoded
			}
			if _, hits, _ := load(); hits != 0 {
				t.Fatalf("%d disk hits in an empty cache", hits)
			}
			got, hits, decoded := load()
			if hits == 0 || decoded != 0 {
				t.Errorf("the second loader found %d decodes on disk and decoded %d files, want every decode found", hits, decoded)
			}
			if diff := cmp.Diff(want.Objects, got.Objects); diff != "" {
				t.Errorf("objects, decoded (-) and cached (+):\n%s", diff)
			}
			if diff := cmp.Diff(want.Problems, got.Problems); diff != "" {
				t.Errorf("problems, decoded (-) and cached (+):\n%s", diff)
			}
			if diff := cmp.Diff(stageIndex(want), stageIndex(got)); diff != "" {
				t.Errorf("stages, decoded (-) and cached (+):\n%s", diff)
			}
		})
	}
}

// TestConfigCacheKeys: another config path, other limits or a plain
// directory on disk never take a stored decode; a damaged entry is a miss.
func TestConfigCacheKeys(t *testing.T) {
	dir := commitFixture(t, "testdata/good")
	cacheDir := t.TempDir()
	load := func(opts Options, url string) (*Snapshot, int) {
		t.Helper()
		opts.Renderer, opts.CacheDir = render.NewRenderer(render.Options{}), cacheDir
		l := NewLoader(opts)
		snap, err := l.Load(context.Background(), url, fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		return snap, l.diskHits
	}
	load(Options{}, dir)
	if _, hits := load(Options{}, dir); hits != 4 {
		t.Fatalf("the same options: %d disk hits, want one per config file (4)", hits)
	}
	small, hits := load(Options{Limits: repofs.Limits{MaxFileSize: 100}}, dir)
	if hits != 0 || len(small.Problems) == 0 {
		t.Errorf("a 100-byte file limit: %d disk hits and problems %v, want a decode that refuses the files", hits, small.Problems)
	}
	if _, hits := load(Options{}, testutil.CopyDir(t, "testdata/good")); hits != 0 {
		t.Errorf("a plain directory: %d disk hits, want none (its files may change while read)", hits)
	}

	var entries []string
	_ = filepath.WalkDir(filepath.Join(cacheDir, "configs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			entries = append(entries, p)
		}
		return nil
	})
	if len(entries) != 5 {
		t.Fatalf("entries %v, want a decode per config file (a 100-byte limit refuses every file) and the stage vectors", entries)
	}
	for _, e := range entries {
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-2] ^= 1
		if err := os.WriteFile(e, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	snap, hits := load(Options{}, dir)
	if hits != 0 || len(snap.Problems) != 0 || len(snap.Objects) != len(goodObjects) {
		t.Errorf("a damaged entry: %d disk hits, problems %v, %d objects; want a decode", hits, snap.Problems, len(snap.Objects))
	}
}

// TestVectorCacheFollowsLinkedKustomization: a stage overlay whose
// kustomization file is a link to a file outside the overlay has the
// vector of that file, after it changes too (the overlay's own hash does
// not change); a new Loader reads the vectors of unchanged overlays from
// disk; a plain directory, read twice, is followed the same way.
func TestVectorCacheFollowsLinkedKustomization(t *testing.T) {
	for _, variant := range []string{"in memory", "on disk, a new loader", "a plain directory"} {
		restart, plain := variant == "on disk, a new loader", variant == "a plain directory"
		t.Run(variant, func(t *testing.T) {
			// From the overlay's directory: ../../../shared/dev.yaml.
			dir := goodFixtureWithLink(t, "apps/overlays/dev/kustomization.yaml", "shared/dev.yaml", "../../../shared/dev.yaml")
			var read func(*Loader) (*Snapshot, error)
			if plain {
				read = func(l *Loader) (*Snapshot, error) { return l.LoadDir(context.Background(), dir) }
			}
			first, next, loader := reloadAfter(t, dir, restart, read, func() {
				replaceInFile(t, dir, "shared/dev.yaml", "app:2026.7.27-dev", "app:2026.8.1")
				testutil.Git(t, dir, nil, "commit", "-qam", "new vector")
			})
			if got := first.StageIndex["dev/dev"].Vector.Vector; got != "app:2026.7.27-dev" {
				t.Fatalf("dev's vector before the change: %q", got)
			}
			if got := next.StageIndex["dev/dev"].Vector.Vector; got != "app:2026.8.1" {
				t.Errorf("dev's vector after the linked file changed: %q, want app:2026.8.1: the old reading was reused", got)
			}
			if restart && loader.vectorsRead != 1 {
				t.Errorf("the new loader read %d overlays, want only the changed one", loader.vectorsRead)
			}
		})
	}
}

// TestRestartedLoaderOpensNoUnchangedOverlay: a new Loader finds the
// kustomization file of every unchanged overlay on disk, by the overlay's
// tree hash, instead of reading each overlay's directory (10,000 tree
// decodes at 10,000 stages); an overlay that changed is read again, and
// the stages resolve as a fresh load resolves them.
func TestRestartedLoaderOpensNoUnchangedOverlay(t *testing.T) {
	dir := commitFixture(t, "testdata/good")
	cacheDir := t.TempDir()
	load := func() (*Snapshot, int) {
		t.Helper()
		loader := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), CacheDir: cacheDir})
		snap, err := loader.Load(context.Background(), dir, fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		return snap, loader.overlaysOpened
	}
	first, opened := load()
	if opened != len(first.StageIndex) || opened == 0 {
		t.Fatalf("the first load opened %d overlays of %d stages", opened, len(first.StageIndex))
	}
	again, opened := load()
	if opened != 0 {
		t.Errorf("a new loader opened %d unchanged overlays, want none", opened)
	}
	if diff := cmp.Diff(stageVectors(first), stageVectors(again)); diff != "" {
		t.Errorf("stages from the remembered kustomization files differ (-fresh +remembered):\n%s", diff)
	}

	replaceInFile(t, dir, "apps/overlays/dev/kustomization.yaml", "2026.7.27-dev", "2026.8.1")
	testutil.Git(t, dir, nil, "commit", "-qam", "dev moves on")
	changed, opened := load()
	if opened != 1 {
		t.Errorf("after one overlay changed, a new loader opened %d overlays, want 1", opened)
	}
	if got := changed.StageIndex["dev/dev"].Vector.Vector; got != "app:2026.8.1" {
		t.Errorf("dev's vector after its overlay changed: %q, want app:2026.8.1", got)
	}
}

// TestRememberedKustomizationSeesLinkTargetAppear: an overlay holding a
// second kustomization file that is a link to a file not there yet reads
// as its first one; once the link's target appears (the overlay's own hash
// unchanged), the overlay holds two and says so, in the same loader and in
// a new one.
func TestRememberedKustomizationSeesLinkTargetAppear(t *testing.T) {
	sameAndNewLoader(t, func(t *testing.T, restart bool) {
		dir := commitFixture(t, "testdata/good")
		// From the overlay's directory: ../../../shared/dev.yml.
		if err := os.Symlink("../../../shared/dev.yml", filepath.Join(dir, "apps/overlays/dev/kustomization.yml")); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, nil, "add", ".")
		testutil.Git(t, dir, nil, "commit", "-qm", "a link to a file not there yet")
		first, next, _ := reloadAfter(t, dir, restart, nil, func() {
			writeFile(t, dir, "shared/dev.yml", "resources: [../apps/base]\n")
			testutil.Git(t, dir, nil, "add", ".")
			testutil.Git(t, dir, nil, "commit", "-qm", "the link's target")
		})
		if _, ok := first.StageIndex["dev/dev"]; !ok {
			t.Fatalf("dev does not resolve while its link leads nowhere: %v", first.Problems)
		}
		if _, ok := next.StageIndex["dev/dev"]; ok || !slices.ContainsFunc(next.Problems, func(p Problem) bool {
			return p.Name == "dev" && strings.Contains(p.Reason, "has both")
		}) {
			t.Errorf("dev still resolves once its overlay holds two kustomization files; problems %v", next.Problems)
		}
	})
}

// stageVectors is each resolved stage's overlay, its hash and its vector.
func stageVectors(s *Snapshot) map[string]StageRef {
	out := map[string]StageRef{}
	for k, ref := range s.StageIndex {
		out[k] = StageRef{Overlay: ref.Overlay, OverlayHash: ref.OverlayHash, Vector: ref.Vector}
	}
	return out
}

// goodFixtureWithLink is testdata/good committed on fixtureBranch, with file
// moved to moved and a symbolic link to target left in its place.
func goodFixtureWithLink(t *testing.T, file, moved, target string) string {
	t.Helper()
	dir := testutil.CopyDir(t, "testdata/good")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, moved)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, file), filepath.Join(dir, moved)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
	commitDir(t, dir)
	return dir
}

// TestConfigDecodesOnlyChangedFiles: after one config file changes, a load
// decodes that file alone and takes every other file's decode from the last
// load, in memory and, for a new loader, from disk; the snapshot is the one
// a fresh decode gives.
func TestConfigDecodesOnlyChangedFiles(t *testing.T) {
	plainKustomization := func(dir string) {
		writeFile(t, dir, "vectorflow/kustomization.yaml", "resources: [landscapes.yaml, stages.yaml, templates.yaml, configs.yaml]\n")
	}
	for _, layout := range []struct {
		name   string
		change func(dir string)
	}{{name: "files"}, {name: "plain kustomization", change: plainKustomization}} {
		t.Run(layout.name, func(t *testing.T) {
			sameAndNewLoader(t, func(t *testing.T, restart bool) {
				dir := testutil.CopyDir(t, "testdata/good")
				if layout.change != nil {
					layout.change(dir)
				}
				commitDir(t, dir)
				decoded := 0 // by the last read
				read := func(l *Loader) (*Snapshot, error) {
					before := l.filesDecoded
					snap, err := l.Load(context.Background(), dir, fixtureBranch)
					decoded = l.filesDecoded - before
					return snap, err
				}
				_, got, _ := reloadAfter(t, dir, restart, read, func() {
					replaceInFile(t, dir, "vectorflow/templates.yaml", "version: 1.4.x", "version: 1.5.x")
					testutil.Git(t, dir, nil, "commit", "-qam", "service-b 1.5")
				})
				if decoded != 1 {
					t.Errorf("the load after one file changed decoded %d files, want 1", decoded)
				}
				want, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{})}).Load(context.Background(), dir, fixtureBranch)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.Objects, got.Objects); diff != "" {
					t.Errorf("objects, decoded (-) and reused (+):\n%s", diff)
				}
				if diff := cmp.Diff(want.Problems, got.Problems); diff != "" {
					t.Errorf("problems, decoded (-) and reused (+):\n%s", diff)
				}
			})
		})
	}
}

// TestReadBudgetRunsOutAtOneFile: config files decode on every core, yet a
// repository over --max-repository-size is refused at the same file on
// every load, the first in the files' order that the budget cannot hold,
// and every file after it: as reads one after the other would refuse them.
func TestReadBudgetRunsOutAtOneFile(t *testing.T) {
	dir := testutil.CopyDir(t, "testdata/good")
	const extra = 200
	padding := "# " + strings.Repeat("x", 1000) + "\n"
	var size int64
	for i := range extra {
		name := fmt.Sprintf("vectorflow/padding-%03d.yaml", i)
		writeFile(t, dir, name, padding)
		size += int64(len(padding))
	}
	// What the rest of the load reads, measured: the budget then runs
	// out about halfway through the padding files.
	var used int64
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, "padding-") {
			info, err := d.Info()
			if err == nil {
				used += info.Size()
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	limits := repofs.Limits{MaxRepositorySize: used + size/2}
	var first []string
	for run := range 30 {
		snap, err := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), Limits: limits}).LoadDir(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		var refused []string
		for _, p := range snap.Problems {
			if strings.Contains(p.Reason, "--max-repository-size") && strings.Contains(p.File, "padding-") {
				refused = append(refused, p.File)
			}
		}
		if len(refused) == 0 || len(refused) == extra {
			t.Fatalf("load %d refused %d of %d padding files, want some but not all: %v", run, len(refused), extra, snap.Problems)
		}
		// Every file from the first refused on is refused.
		from := extra - len(refused)
		for i, f := range refused {
			if want := fmt.Sprintf("vectorflow/padding-%03d.yaml", from+i); f != want {
				t.Fatalf("load %d refused %v, want the files from %s on", run, refused, fmt.Sprintf("vectorflow/padding-%03d.yaml", from))
			}
		}
		if run == 0 {
			first = refused
		} else if !slices.Equal(refused, first) {
			t.Fatalf("load %d refused %d files from %s, load 0 %d from %s", run, len(refused), refused[0], len(first), first[0])
		}
	}
}

// TestLoaderSavesVectorsOnceAMinute: a loader writes the stage vectors of
// its first load to disk at once, then those of later loads at most once a
// minute (each write is the whole set: a running run loads a new commit
// after every promotion); SaveCaches writes what waits, and a new loader
// then reads no unchanged overlay.
func TestLoaderSavesVectorsOnceAMinute(t *testing.T) {
	dir := commitFixture(t, "testdata/good")
	cacheDir := t.TempDir()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	newLoader := func() *Loader {
		l := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), CacheDir: cacheDir})
		l.disk.now = func() time.Time { return now }
		return l
	}
	load := func(l *Loader) *Snapshot {
		t.Helper()
		snap, err := l.Load(context.Background(), dir, fixtureBranch)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	bump := func(to string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, "apps/overlays/dev/kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`app:[0-9][0-9.a-z-]*`)
		writeFile(t, dir, "apps/overlays/dev/kustomization.yaml", re.ReplaceAllString(string(data), "app:"+to))
		testutil.Git(t, dir, nil, "commit", "-qam", "dev moves to "+to)
	}
	vectorsOnDisk := func() []byte {
		t.Helper()
		data, err := os.ReadFile(newLoader().disk.vectorsFile(dir + "#" + fixtureBranch))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}

	running := newLoader()
	load(running)
	first := vectorsOnDisk()
	bump("2026.8.1")
	if got := load(running).StageIndex["dev/dev"].Vector.Vector; got != "app:2026.8.1" {
		t.Fatalf("dev's vector after its overlay changed: %q", got)
	}
	if !bytes.Equal(vectorsOnDisk(), first) {
		t.Error("a load within a minute of the last write wrote the vectors again")
	}
	now = now.Add(time.Minute)
	bump("2026.8.2")
	load(running)
	written := vectorsOnDisk()
	if bytes.Equal(written, first) {
		t.Error("a load a minute after the last write did not write the vectors")
	}
	bump("2026.8.3")
	load(running)
	running.SaveCaches()
	if bytes.Equal(vectorsOnDisk(), written) {
		t.Error("SaveCaches did not write the vectors a load left waiting")
	}

	restarted := newLoader()
	if got := load(restarted).StageIndex["dev/dev"].Vector.Vector; got != "app:2026.8.3" {
		t.Errorf("dev's vector in a new loader: %q, want app:2026.8.3", got)
	}
	if restarted.vectorsRead != 0 {
		t.Errorf("a new loader read %d overlays, want none: SaveCaches wrote them all", restarted.vectorsRead)
	}
}

// TestLoaderSavesVectorsInBackground: with SaveInBackground, loads go on
// while their vectors are written, and SaveCaches waits for every write:
// a new loader then reads no overlay of the last commit. Run with -race,
// it checks that a write and the loads after it share their memory safely.
func TestLoaderSavesVectorsInBackground(t *testing.T) {
	dir := commitFixture(t, "testdata/good")
	cacheDir := t.TempDir()
	var clock atomic.Int64 // the writes read it too
	clock.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Unix())
	running := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), CacheDir: cacheDir, SaveInBackground: true})
	running.disk.now = func() time.Time { return time.Unix(clock.Load(), 0) }
	overlay := filepath.Join(dir, "apps/overlays/dev/kustomization.yaml")
	re := regexp.MustCompile(`app:[0-9][0-9.a-z-]*`)
	for i := range 4 {
		if i > 0 {
			data, err := os.ReadFile(overlay)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "apps/overlays/dev/kustomization.yaml", re.ReplaceAllString(string(data), fmt.Sprintf("app:2026.9.%d", i)))
			testutil.Git(t, dir, nil, "commit", "-qam", "dev moves on")
			clock.Add(60) // a minute on: every load writes
		}
		if _, err := running.Load(context.Background(), dir, fixtureBranch); err != nil {
			t.Fatal(err)
		}
	}
	running.SaveCaches()
	select {
	case <-running.saving:
	default:
		t.Fatal("SaveCaches returned before the background writes ended")
	}

	restarted := NewLoader(Options{Renderer: render.NewRenderer(render.Options{}), CacheDir: cacheDir})
	snap, err := restarted.Load(context.Background(), dir, fixtureBranch)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.StageIndex["dev/dev"].Vector.Vector; got != "app:2026.9.3" {
		t.Errorf("dev's vector in a new loader: %q, want app:2026.9.3", got)
	}
	if restarted.vectorsRead != 0 {
		t.Errorf("a new loader read %d overlays, want none: the background writes were waited for", restarted.vectorsRead)
	}
}
