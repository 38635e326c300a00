package render

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	// The two overlays' keys may share a bucket (a key's digest picks it):
	// count whole keys, not files.
	files, keys := entryFiles(t, cacheDir), 0
	for _, f := range files {
		keys += len(readBucket(f, time.Now()))
	}
	if keys != 2 {
		t.Errorf("%d whole entries on disk in %v, want one per overlay", keys, files)
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
	// The sweep drops whole files: build an overlay of another bucket
	// (within one, keys age by their own time: TestWriteBucketDropsUnused).
	next := NewRenderer(Options{CacheDir: cacheDir})
	_, devBucket, _ := next.cache.disk.locate("apps/overlays/dev")
	other := "apps/overlays/prod"
	if _, b, _ := next.cache.disk.locate(other); b == devBucket {
		other = "apps/base"
	}
	if _, err := next.Build(commitDir(t, dir), other); err != nil {
		t.Fatal(err)
	}
	if n := storedRenderings(t, cacheDir); n != 1 {
		t.Errorf("after the sweep: %d renderings, want only the new one", n)
	}
}

// TestWriteBucketDropsUnused: a bucket written keeps the keys used within
// diskMaxAge, most recently used first, and within half of diskMaxEntry.
func TestWriteBucketDropsUnused(t *testing.T) {
	now := time.Unix(1_000_000_000, 0)
	ago := func(d time.Duration) int64 { return now.Add(-d).Unix() }
	big := make([]byte, diskMaxEntry/5)
	for _, tt := range []struct {
		name string
		view map[keyDigest]*slot
		want []keyDigest
	}{
		{"fresh and old", map[keyDigest]*slot{
			{1}: {record: []byte("a"), used: ago(diskMaxAge - time.Hour)},
			{2}: {record: []byte("b"), used: ago(diskMaxAge + time.Hour)},
			{3}: {record: []byte("c"), used: ago(0)},
		}, []keyDigest{{3}, {1}}},
		{"over the size bound", map[keyDigest]*slot{
			{1}: {record: big, used: ago(3 * time.Hour)},
			{2}: {record: big, used: ago(time.Hour)},
			{3}: {record: big, used: ago(2 * time.Hour)},
		}, []keyDigest{{2}, {3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "b")
			if err := cachefile.WriteFunc(file, diskFormat, func(w io.Writer) error { return writeBucket(w, tt.view, now) }); err != nil {
				t.Fatal(err)
			}
			view := readBucket(file, now)
			var got []keyDigest
			for k := range view {
				got = append(got, k)
			}
			slices.SortFunc(got, func(a, b keyDigest) int { return int(view[b].used - view[a].used) })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("keys kept (-want +got)\n%s", diff)
			}
		})
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
	if n := storedRenderings(t, cacheDir); n != 1 {
		t.Errorf("%d renderings on disk, want the rendering written again", n)
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
			if got := storedRenderings(t, cacheDir); got != tt.want {
				t.Errorf("%d renderings on disk, want %d", got, tt.want)
			}
		})
	}
}

// TestDiskCacheFewFiles: a batch of builds writes its renderings into at
// most diskBuckets files, with no directory per key, and each is found by
// the next process.
func TestDiskCacheFewFiles(t *testing.T) {
	cacheDir := t.TempDir()
	files := cacheFixture()
	var overlays []Overlay
	for i := range 3 * diskBuckets {
		dir := fmt.Sprintf("apps/overlays/s%d", i)
		files[dir+"/kustomization.yaml"] = file{content: fmt.Sprintf("resources:\n- ../../base\nnamePrefix: s%d-\n", i)}
		overlays = append(overlays, Overlay{Dir: dir})
	}
	tree := commitDir(t, writeFiles(t, files))
	for i := range overlays {
		overlays[i].Tree = tree
	}
	if _, errs := NewRenderer(Options{CacheDir: cacheDir}).BuildAll(t.Context(), overlays); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	root := filepath.Join(cacheDir, "renders")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("directory %s under renders/: want files only", e.Name())
		}
	}
	if got := len(entryFiles(t, cacheDir)); got > diskBuckets {
		t.Errorf("%d files for %d renderings, want at most %d", got, len(overlays), diskBuckets)
	}
	if got := storedRenderings(t, cacheDir); got != len(overlays) {
		t.Errorf("%d renderings stored, want %d", got, len(overlays))
	}
	next := NewRenderer(Options{CacheDir: cacheDir})
	next.BuildAll(t.Context(), overlays)
	if s := next.Stats(); s.DiskHits != uint64(len(overlays)) || s.Misses != 0 {
		t.Errorf("the next process: %+v, want every overlay from disk", s)
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
				// One renderer in a batch, as validate runs, the other
				// storing each rendering at once.
				if i == 0 {
					defer r.DeferCacheWrites()()
				}
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

// storedRenderings counts the renderings on disk under cacheDir; a
// damaged bucket fails the test.
func storedRenderings(t *testing.T, cacheDir string) int {
	t.Helper()
	n := 0
	for _, f := range entryFiles(t, cacheDir) {
		if _, ok := cachefile.Read(f, diskFormat, diskMaxEntry, time.Now()); !ok {
			t.Fatalf("%s: damaged", f)
		}
		for _, s := range readBucket(f, time.Now()) {
			key, err := entryKey(s.record)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			all, err := decodeEntries(s.record, key)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			n += len(all)
		}
	}
	return n
}

// TestDiskCacheDeferredWrites: while writes are deferred nothing reaches
// the disk; the last of overlapping batches to flush writes everything,
// and the next process finds it.
func TestDiskCacheDeferredWrites(t *testing.T) {
	cacheDir := t.TempDir()
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	r := NewRenderer(Options{CacheDir: cacheDir})
	outer := r.DeferCacheWrites()
	inner := r.DeferCacheWrites()
	for _, dir := range []string{"apps/overlays/dev", "apps/overlays/prod"} {
		if _, err := r.Build(tree, dir); err != nil {
			t.Fatal(err)
		}
	}
	if n := storedRenderings(t, cacheDir); n != 0 {
		t.Errorf("%d renderings on disk while writes are deferred, want none", n)
	}
	inner()
	inner() // a second call is harmless, and does not end the outer batch
	if n := storedRenderings(t, cacheDir); n != 0 {
		t.Errorf("%d renderings on disk while a batch is open, want none", n)
	}
	outer()
	if n := storedRenderings(t, cacheDir); n != 2 {
		t.Errorf("%d renderings on disk after the flush, want 2", n)
	}
	next := NewRenderer(Options{CacheDir: cacheDir})
	for _, dir := range []string{"apps/overlays/dev", "apps/overlays/prod"} {
		if _, err := next.Build(tree, dir); err != nil {
			t.Fatal(err)
		}
	}
	if s := next.Stats(); s.DiskHits != 2 {
		t.Errorf("the next process: %+v, want both from disk", s)
	}
	// After the batch, a store is written at once again.
	if _, err := r.Build(tree, "apps/base"); err != nil {
		t.Fatal(err)
	}
	if n := storedRenderings(t, cacheDir); n != 3 {
		t.Errorf("%d renderings on disk after a build outside a batch, want 3", n)
	}
}

// entryKey is the key a record holds.
func entryKey(record []byte) (string, error) {
	n, w := binary.Uvarint(record)
	if w <= 0 || n > uint64(len(record)-w) {
		return "", errBadEntry
	}
	return string(record[w : w+int(n)]), nil
}

// TestDiskCacheDeferredBounded: a batch holding back more than its bound
// writes what it holds before it ends, so memory stays bounded.
func TestDiskCacheDeferredBounded(t *testing.T) {
	cacheDir := t.TempDir()
	tree := commitDir(t, writeFiles(t, cacheFixture()))
	r := NewRenderer(Options{CacheDir: cacheDir})
	r.cache.disk.maxDeferred = 1 // any rendering is over the bound
	flush := r.DeferCacheWrites()
	defer flush()
	if _, err := r.Build(tree, "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	if n := storedRenderings(t, cacheDir); n != 1 {
		t.Errorf("%d renderings on disk with the batch over its bound, want 1", n)
	}
}

// TestDiskCacheBatchKeepsWhatOthersWrote: a batch's flush rewrites its
// buckets with what another process stored there meanwhile, behind its
// own renderings.
func TestDiskCacheBatchKeepsWhatOthersWrote(t *testing.T) {
	cacheDir := t.TempDir()
	dir := writeFiles(t, cacheFixture())
	mine := commitDir(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "apps/base/deploy.yaml"),
		[]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	theirs := commitDir(t, dir)

	batch := NewRenderer(Options{CacheDir: cacheDir})
	flush := batch.DeferCacheWrites()
	if _, err := batch.Build(mine, "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRenderer(Options{CacheDir: cacheDir}).Build(theirs, "apps/overlays/dev"); err != nil {
		t.Fatal(err)
	}
	flush()

	next := NewRenderer(Options{CacheDir: cacheDir})
	for _, tree := range []repofs.Tree{mine, theirs} {
		if _, err := next.Build(tree, "apps/overlays/dev"); err != nil {
			t.Fatal(err)
		}
	}
	if s := next.Stats(); s.DiskHits != 2 {
		t.Errorf("%+v, want both renderings from disk", s)
	}
}
