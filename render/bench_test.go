package render

import (
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

const benchOverlays = 1000

// BenchmarkRender1000OverlaysCold renders 1,000 overlays of one base with an
// empty cache: every build runs kustomize.
func BenchmarkRender1000OverlaysCold(b *testing.B) {
	tree, dirs := benchRepo(b, benchOverlays)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := NewRenderer(Options{})
		for _, dir := range dirs {
			if _, err := r.Build(tree, dir); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportPerOverlay(b)
}

// BenchmarkRender1000OverlaysWarm renders the same overlays again: every
// build is a cache hit.
func BenchmarkRender1000OverlaysWarm(b *testing.B) {
	tree, dirs := benchRepo(b, benchOverlays)
	r := NewRenderer(Options{})
	for _, dir := range dirs {
		if _, err := r.Build(tree, dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, dir := range dirs {
			if _, err := r.Build(tree, dir); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if s := r.Stats(); s.Misses != benchOverlays {
		b.Fatalf("warm builds missed the cache: %+v", s)
	}
	reportPerOverlay(b)
	b.ReportMetric(float64(r.Stats().Bytes)/(1<<20), "cache-MB")
}

func reportPerOverlay(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchOverlays), "ns/overlay")
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "heap-MB")
}

// benchRepo writes a repository of n overlays sharing one base straight
// into an in-memory go-git object storage.
func benchRepo(b *testing.B, n int) (repofs.Tree, []string) {
	b.Helper()
	files := map[string]string{
		"apps/base/kustomization.yaml": "resources:\n- deployment.yaml\n- service.yaml\nconfigMapGenerator:\n- name: app-config\n  literals:\n  - LOG_LEVEL=info\n",
		"apps/base/deployment.yaml":    mustReadFixture(b, "apps/base/deployment.yaml"),
		"apps/base/service.yaml":       mustReadFixture(b, "apps/base/service.yaml"),
	}
	dirs := make([]string, n)
	for i := range n {
		dirs[i] = fmt.Sprintf("apps/overlays/stage-%04d", i)
		files[dirs[i]+"/kustomization.yaml"] = fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
metadata:
  annotations:
    vectorflow.dev/vector: podinfo:1.%d.0
namePrefix: s%d-
resources:
- ../../base
images:
- name: ghcr.io/stefanprodan/podinfo
  newTag: 6.%d.0
patches:
- path: replicas.yaml
`, i, i, i)
		files[dirs[i]+"/replicas.yaml"] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\nspec:\n  replicas: %d\n", i%5+1)
	}
	s := memory.NewStorage()
	root := storeDir(b, s, files, "")
	tree, err := object.GetTree(s, root)
	if err != nil {
		b.Fatal(err)
	}
	return repofs.GitTree(tree), dirs
}

// storeDir stores the files below prefix as a tree object and returns its hash.
func storeDir(b *testing.B, s *memory.Storage, files map[string]string, prefix string) plumbing.Hash {
	b.Helper()
	children := map[string]bool{}
	var tree object.Tree
	for name, content := range files {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest := strings.TrimPrefix(name, prefix)
		if first, _, isDir := strings.Cut(rest, "/"); isDir {
			if !children[first] {
				children[first] = true
				h := storeDir(b, s, files, prefix+first+"/")
				tree.Entries = append(tree.Entries, object.TreeEntry{Name: first, Mode: filemode.Dir, Hash: h})
			}
			continue
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: rest, Mode: filemode.Regular, Hash: testutil.StoreBlob(b, s, []byte(content))})
	}
	slices.SortFunc(tree.Entries, func(x, y object.TreeEntry) int { return strings.Compare(x.Name, y.Name) })
	return testutil.StoreObject(b, s, &tree)
}

func mustReadFixture(b *testing.B, name string) string {
	b.Helper()
	data, err := repofs.DirTree(fixtureRepo).ReadFile(path.Clean(name))
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// BenchmarkRender1000OverlaysColdParallel is the cold benchmark with the
// builds spread over GOMAXPROCS goroutines, as BuildStages does.
func BenchmarkRender1000OverlaysColdParallel(b *testing.B) {
	tree, dirs := benchRepo(b, benchOverlays)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := NewRenderer(Options{})
		next := make(chan string)
		errs := make(chan error, runtime.GOMAXPROCS(0))
		for range runtime.GOMAXPROCS(0) {
			go func() {
				var first error
				for dir := range next {
					if _, err := r.Build(tree, dir); err != nil && first == nil {
						first = err
					}
				}
				errs <- first
			}()
		}
		for _, dir := range dirs {
			next <- dir
		}
		close(next)
		for range runtime.GOMAXPROCS(0) {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
	}
	reportPerOverlay(b)
}

// BenchmarkKustomizeFloor runs kustomize alone on the benchmark's overlays,
// from its own in-memory file system: the cost of a build with nothing of
// ours around it (its output printed, as a build does), the floor a cold
// Renderer build can reach.
func BenchmarkKustomizeFloor(b *testing.B) {
	tree, dirs := benchRepo(b, benchOverlays)
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := tree.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/r", p), data)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, dir := range dirs {
			m, err := newKustomizer().Run(mem, path.Join("/r", dir))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.AsYaml(); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportPerOverlay(b)
}
