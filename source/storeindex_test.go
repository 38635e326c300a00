package source

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// BenchmarkStoreOpens: a process opening a store of 16 packs (the most a
// compaction leaves) and reading one object, which reads every index.
func BenchmarkStoreOpens(b *testing.B) {
	dir := b.TempDir()
	names := versionsRepository(b, filepath.Join(dir, storeGitDir), 3000, compactPackLimit)
	h := plumbing.NewHash(names[0])
	b.ResetTimer()
	for range b.N {
		d := &diskStore{dir: dir, warnings: io.Discard, looseLimit: compactLooseLimit, looseAge: compactLooseAge, packLimit: compactPackLimit}
		if err := d.open(); err != nil {
			b.Fatal(err)
		}
		if _, err := d.storer.EncodedObject(plumbing.AnyObject, h); err != nil {
			b.Fatal(err)
		}
	}
}
