package render

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/cachefile"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestDiskCacheReusedByNewRenderer: a Renderer made later (as by a new
// process) over the same cache directory answers from disk without running
// kustomize, byte for byte what a build gives, and a changed base is a miss.
func TestDiskCacheReusedByNewRenderer(t *testing.T) {
	cacheDir := t.TempDir()
	dir := writeFiles(t, cacheFixture())
	first := NewRenderer(Options{CacheDir: cacheDir})
	want, err := first.Build(commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	wantOrigins, err := first.BuildWithOrigins(t.Context(), commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}

	second := NewRenderer(Options{CacheDir: cacheDir})
	for _, tree := range []struct {
		name string
		tree func() []byte
	}{
		{"the same content, as a new commit", func() []byte { out, _ := second.Build(commitDir(t, dir), "apps/overlays/dev"); return out }},
		{"the same content, as a folder", func() []byte { out, _ := second.Build(repofs.DirTree(dir), "apps/overlays/dev"); return out }},
	} {
		if diff := cmp.Diff(string(want), string(tree.tree())); diff != "" {
			t.Errorf("%s: (-built +cached)\n%s", tree.name, diff)
		}
	}
	got, err := second.BuildWithOrigins(t.Context(), commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantOrigins), string(got)); diff != "" {
		t.Errorf("with origins: (-built +cached)\n%s", diff)
	}
	if s := second.Stats(); s.Misses != 0 || s.DiskHits != 2 || s.Hits != 3 {
		t.Errorf("second renderer: %+v, want 3 hits (2 from disk) and no build", s)
	}

	// A base file changed: the rendering on disk no longer holds.
	if err := os.WriteFile(filepath.Join(dir, "apps/base/deploy.yaml"),
		[]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := NewRenderer(Options{CacheDir: cacheDir})
	out, err := third.Build(commitDir(t, dir), "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "replicas: 7") {
		t.Errorf("after the base changed, got the old rendering:\n%s", out)
	}
	if s := third.Stats(); s.Misses != 1 || s.Hits != 0 {
		t.Errorf("after the base changed: %+v, want one build", s)
	}
	// Both renderings are now on disk: each is found in its own tree.
	fourth := NewRenderer(Options{CacheDir: cacheDir})
	if out, _ := fourth.Build(commitDir(t, dir), "apps/overlays/dev"); !strings.Contains(string(out), "replicas: 7") {
		t.Errorf("the new rendering:\n%s", out)
	}
	if s := fourth.Stats(); s.DiskHits != 1 || s.Misses != 0 {
		t.Errorf("fourth renderer: %+v, want a disk hit", s)
	}
}

// TestDiskCacheOptionsAreKeys: a Renderer with other limits does not
// take another's renderings (a smaller limit may refuse the build).
func TestDiskCacheOptionsAreKeys(t *testing.T) {
	cacheDir := t.TempDir()
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	if _, err := NewRenderer(Options{CacheDir: cacheDir}).Build(tree, "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	small := NewRenderer(Options{CacheDir: cacheDir})
	small.opts.Limits.MaxFileSize = 10
	small.cache.disk = newDiskCache(cacheDir, small.opts)
	if _, err := small.Build(tree, "apps/overlays/dev"); err == nil {
		t.Errorf("a build over a 10-byte file limit succeeded: it took a rendering made under other limits")
	}
}

// TestDiskCacheDamagedEntryIsAMiss: an entry cut short, overwritten with
// garbage or emptied is a miss and is built again, never an error or a
// wrong rendering.
func TestDiskCacheDamagedEntryIsAMiss(t *testing.T) {
	damage := map[string]func(data []byte) []byte{
		"truncated":        func(data []byte) []byte { return data[:len(data)/2] },
		"empty":            func([]byte) []byte { return nil },
		"garbage":          func(data []byte) []byte { return []byte(strings.Repeat("\xff", len(data))) },
		"one byte flipped": func(data []byte) []byte { data[len(data)-3] ^= 1; return data },
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			cacheDir := t.TempDir()
			tree := commitDir(t, writeFiles(t, cacheFixture()))
			want, err := NewRenderer(Options{CacheDir: cacheDir}).Build(tree, "apps/overlays/dev")
			if err != nil {
				t.Fatal(err)
			}
			files := entryFiles(t, cacheDir)
			if len(files) != 1 {
				t.Fatalf("entries on disk: %v, want one", files)
			}
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files[0], f(data), 0o600); err != nil {
				t.Fatal(err)
			}
			r := NewRenderer(Options{CacheDir: cacheDir})
			got, err := r.Build(tree, "apps/overlays/dev")
			if err != nil {
				t.Fatalf("a damaged entry made the build fail: %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if s := r.Stats(); s.Misses != 1 || s.Hits != 0 {
				t.Errorf("%+v, want a miss", s)
			}
		})
	}
}

// TestDiskCacheConcurrentWriters: renderers sharing one cache directory,
// building and reading at once, all get the right output and leave whole
// entries only.
func TestDiskCacheConcurrentWriters(t *testing.T) {
	cacheDir := t.TempDir()
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	want := map[string]string{}
	for _, dir := range []string{"apps/overlays/dev", "apps/overlays/prod"} {
		out, err := NewRenderer(Options{}).Build(tree, dir)
		if err != nil {
			t.Fatal(err)
		}
		want[dir] = string(out)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRenderer(Options{CacheDir: cacheDir})
			for j := 0; j < 4; j++ {
				for dir, w := range want {
					out, err := r.Build(tree, dir)
					if err != nil || string(out) != w {
						errs <- dir + ": wrong rendering or error"
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	files := entryFiles(t, cacheDir)
	if len(files) != 2 {
		t.Errorf("entries on disk: %v, want one per overlay", files)
	}
	r := NewRenderer(Options{CacheDir: cacheDir})
	for dir, w := range want {
		if out, _ := r.Build(tree, dir); string(out) != w {
			t.Errorf("%s after the race: wrong rendering", dir)
		}
	}
	if s := r.Stats(); s.DiskHits != 2 {
		t.Errorf("%+v, want both overlays from disk", s)
	}
}

// TestDiskCacheBounded: a directory keeps its most recently used
// renderings only, and entries unused for a month go at the next sweep.
func TestDiskCacheBounded(t *testing.T) {
	cacheDir := t.TempDir()
	dir := writeFiles(t, cacheFixture())
	r := NewRenderer(Options{CacheDir: cacheDir})
	for i := 0; i < maxEntriesPerDir+3; i++ {
		if err := os.WriteFile(filepath.Join(dir, "apps/base/deploy.yaml"),
			[]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: "+strings.Repeat("1", i+1)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Build(commitDir(t, dir), "apps/overlays/dev"); err != nil {
			t.Fatal(err)
		}
	}
	if n := storedRenderings(t, cacheDir); n != maxEntriesPerDir {
		t.Errorf("%d renderings of one directory, want at most %d", n, maxEntriesPerDir)
	}

	old := time.Now().Add(-diskMaxAge - time.Hour)
	for _, f := range entryFiles(t, cacheDir) {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(filepath.Join(cacheDir, "renders", ".swept"), old, old); err != nil {
		t.Fatal(err)
	}
	next := NewRenderer(Options{CacheDir: cacheDir})
	if _, err := next.Build(commitDir(t, dir), "apps/overlays/prod"); err != nil {
		t.Fatal(err)
	}
	if files := entryFiles(t, cacheDir); len(files) != 1 {
		t.Errorf("after the sweep: %v, want only the new rendering", files)
	}
}

// TestDiskCacheDeletedWhileRunning: the cache directory removed between
// builds costs a build, nothing else.
func TestDiskCacheDeletedWhileRunning(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	r := NewRenderer(Options{CacheDir: cacheDir})
	want, err := r.Build(tree, "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cacheDir); err != nil {
		t.Fatal(err)
	}
	r2 := NewRenderer(Options{CacheDir: cacheDir})
	got, err := r2.Build(tree, "apps/overlays/dev")
	if err != nil || string(got) != string(want) {
		t.Fatalf("after the cache was deleted: %v\n%s", err, got)
	}
	if files := entryFiles(t, cacheDir); len(files) != 1 {
		t.Errorf("entries: %v, want the rendering written again", files)
	}
}

// entryFiles lists the complete entries under cacheDir/renders.
func entryFiles(t *testing.T, cacheDir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(cacheDir, "renders"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

// TestDiskCacheKeepsOnlyCommitRenderings: a rendering of a directory on
// disk, whose files may change between a read and a hash, is not kept
// beyond the process; one of a commit's tree, bounded or not, is.
func TestDiskCacheKeepsOnlyCommitRenderings(t *testing.T) {
	dir := writeFiles(t, cacheFixture())
	for _, tt := range []struct {
		name string
		tree repofs.Tree
		want int
	}{
		{name: "directory", tree: repofs.DirTree(dir)},
		{name: "bounded directory", tree: repofs.LimitTree(repofs.DirTree(dir), repofs.Limits{})},
		{name: "commit", tree: commitDir(t, dir), want: 1},
		{name: "bounded commit", tree: repofs.LimitTree(commitDir(t, dir), repofs.Limits{}), want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cacheDir := t.TempDir()
			if _, err := NewRenderer(Options{CacheDir: cacheDir}).Build(tt.tree, "apps/overlays/dev"); err != nil {
				t.Fatal(err)
			}
			if got := len(entryFiles(t, cacheDir)); got != tt.want {
				t.Errorf("%d entries on disk, want %d", got, tt.want)
			}
		})
	}
}

// TestDiskCacheNoDirectoryPerKey: renderings live in files directly under
// the 256 shared prefix directories, so a write creates no directory once
// its prefix exists and a lookup is one open.
func TestDiskCacheNoDirectoryPerKey(t *testing.T) {
	cacheDir := t.TempDir()
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	r := NewRenderer(Options{CacheDir: cacheDir})
	for _, dir := range []string{"apps/overlays/dev", "apps/overlays/prod", "apps/base"} {
		if _, err := r.Build(tree, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := r.BuildWithOrigins(t.Context(), tree, dir); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(cacheDir, "renders")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		if rel, _ := filepath.Rel(root, p); strings.Contains(rel, string(filepath.Separator)) || len(rel) != 2 {
			t.Errorf("directory %s: want only the two-hex-digit prefix directories", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(entryFiles(t, cacheDir)); got != 6 {
		t.Errorf("%d files, want one per directory and flag (6)", got)
	}
}

// TestDiskCacheKeepsRecentlyUsed: a directory's rendering used by a later
// process outlives renderings stored before that use, when newer ones push
// the directory over its bound.
func TestDiskCacheKeepsRecentlyUsed(t *testing.T) {
	cacheDir := t.TempDir()
	dir := writeFiles(t, cacheFixture())
	replicas := func(n int) repofs.Tree {
		if err := os.WriteFile(filepath.Join(dir, "apps/base/deploy.yaml"),
			fmt.Appendf(nil, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: %d\n", n), 0o644); err != nil {
			t.Fatal(err)
		}
		return commitDir(t, dir)
	}
	first := replicas(100)
	if _, err := NewRenderer(Options{CacheDir: cacheDir}).Build(first, "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < maxEntriesPerDir; i++ {
		if _, err := NewRenderer(Options{CacheDir: cacheDir}).Build(replicas(100+i), "apps/overlays/dev"); err != nil {
			t.Fatal(err)
		}
	}
	// The oldest is used, then one more rendering arrives: the bound
	// drops the least recently used, which is no longer the first.
	user := NewRenderer(Options{CacheDir: cacheDir})
	if _, err := user.Build(first, "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	if s := user.Stats(); s.DiskHits != 1 {
		t.Fatalf("%+v, want the first rendering from disk", s)
	}
	if _, err := NewRenderer(Options{CacheDir: cacheDir}).Build(replicas(200), "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	again := NewRenderer(Options{CacheDir: cacheDir})
	out, err := again.Build(first, "apps/overlays/dev")
	if err != nil {
		t.Fatal(err)
	}
	if s := again.Stats(); s.DiskHits != 1 || !strings.Contains(string(out), "replicas: 100") {
		t.Errorf("%+v: the rendering used most recently but one was dropped", s)
	}
	if got := storedRenderings(t, cacheDir); got != maxEntriesPerDir {
		t.Errorf("%d renderings stored, want the bound, %d", got, maxEntriesPerDir)
	}
}

// TestDiskCacheTwoRenderersOneDirectory: two Renderers (as two processes)
// storing different renderings of the same directory at once into one
// cache directory each get their own, and a later Renderer never reads one
// in the other's tree.
func TestDiskCacheTwoRenderersOneDirectory(t *testing.T) {
	cacheDir := t.TempDir()
	trees := make([]repofs.Tree, 2)
	want := make([]string, 2)
	for i := range trees {
		files := cacheFixture()
		files["apps/base/deploy.yaml"] = file{content: fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: %d\n", i+1)}
		trees[i] = commitDir(t, writeFiles(t, files))
		out, err := NewRenderer(Options{}).Build(trees[i], "apps/overlays/dev")
		if err != nil {
			t.Fatal(err)
		}
		want[i] = string(out)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				r := NewRenderer(Options{CacheDir: cacheDir})
				for j := range trees {
					if out, err := r.Build(trees[(i+j)%2], "apps/overlays/dev"); err != nil || string(out) != want[(i+j)%2] {
						errs <- fmt.Sprintf("renderer %d, tree %d: wrong rendering or error %v", i, (i+j)%2, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for i, tree := range trees {
		if out, err := NewRenderer(Options{CacheDir: cacheDir}).Build(tree, "apps/overlays/dev"); err != nil || string(out) != want[i] {
			t.Errorf("tree %d after the race: wrong rendering or error %v", i, err)
		}
	}
	if got := storedRenderings(t, cacheDir); got < 1 || got > 2 {
		t.Errorf("%d renderings stored, want one or two", got)
	}
}

// storedRenderings counts the renderings on disk under cacheDir.
func storedRenderings(t *testing.T, cacheDir string) int {
	t.Helper()
	n := 0
	for _, f := range entryFiles(t, cacheDir) {
		body, ok := cachefile.Read(f, diskFormat, diskMaxEntry, time.Now())
		if !ok {
			t.Fatalf("%s: damaged", f)
		}
		// The key is the first field: decode with the one the file holds.
		k, w := binary.Uvarint(body)
		all, err := decodeEntries(body, string(body[w:w+int(k)]))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n += len(all)
	}
	return n
}
