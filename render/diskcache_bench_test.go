package render

import (
	"fmt"
	"strings"
	"testing"
)

// benchRendering is a rendering the size of a typical overlay's (a few
// KiB, a handful of dependencies), valid in tree.
func benchRendering(b *testing.B, dir string) (*rendering, func() *diskCache) {
	b.Helper()
	tree := commitDir(b, writeFiles(b, cacheFixture()))
	h, err := tree.Hash("apps/base/deploy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	deps := []dep{
		{name: "apps/base/deploy.yaml", kind: depHash, hash: h},
		{name: "apps/base/kustomization.yaml", kind: depFile},
		{name: "apps/base/kustomization.yml", kind: depAbsent},
		{name: dir, kind: depDir},
	}
	r := newRendering(dir, deps, []byte(strings.Repeat("apiVersion: v1\nkind: ConfigMap\n", 128)))
	cacheDir := b.TempDir()
	return r, func() *diskCache { return newDiskCache(cacheDir, Options{}) }
}

// BenchmarkDiskCacheStore writes one rendering of a new directory per
// operation into a cache growing as a cold validate's does.
func BenchmarkDiskCacheStore(b *testing.B) {
	r, open := benchRendering(b, "apps/overlays/dev")
	d := open()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key := fmt.Sprintf("apps/overlays/stage-%d", i)
		d.store(key, newRendering(key, r.deps, r.out))
	}
}

// BenchmarkDiskCacheColdRender is what a cold cache costs one build on
// top of kustomize: a lookup that misses, then the store.
func BenchmarkDiskCacheColdRender(b *testing.B) {
	r, open := benchRendering(b, "apps/overlays/dev")
	tree := commitDir(b, writeFiles(b, cacheFixture()))
	d := open()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		key := fmt.Sprintf("apps/overlays/stage-%d", i)
		if _, ok := d.lookup(tree, key); ok {
			b.Fatal("a hit in a cold cache")
		}
		d.store(key, newRendering(key, r.deps, r.out))
	}
}

// BenchmarkDiskCacheLookupHit is a warm process's read of a rendering an
// earlier one stored.
func BenchmarkDiskCacheLookupHit(b *testing.B) {
	r, open := benchRendering(b, "apps/overlays/dev")
	tree := commitDir(b, writeFiles(b, cacheFixture()))
	const keys = 1000
	d := open()
	for i := range keys {
		key := fmt.Sprintf("apps/overlays/stage-%d", i)
		d.store(key, newRendering(key, r.deps, r.out))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, ok := d.lookup(tree, fmt.Sprintf("apps/overlays/stage-%d", i%keys)); !ok {
			b.Fatal("a miss in a warm cache")
		}
	}
}

// BenchmarkDiskCacheColdBatch is BenchmarkDiskCacheColdRender in a batch
// (DeferCacheWrites), as validate and BuildAll store, its flush included.
func BenchmarkDiskCacheColdBatch(b *testing.B) {
	r, open := benchRendering(b, "apps/overlays/dev")
	tree := commitDir(b, writeFiles(b, cacheFixture()))
	d := open()
	b.ReportAllocs()
	b.ResetTimer()
	flush := d.deferWrites()
	for i := range b.N {
		key := fmt.Sprintf("apps/overlays/stage-%d", i)
		if _, ok := d.lookup(tree, key); ok {
			b.Fatal("a hit in a cold cache")
		}
		d.store(key, newRendering(key, r.deps, r.out))
	}
	flush()
}
