package source

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
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

// TestReadIndexRefusesAFanoutLongerThanTheFile: a damaged index (a bit
// flipped in the fan-out table, whose trailer checkStore still finds
// whole) claimed millions of objects, and go-git's decoder made
// room for their names before finding the file ends: gigabytes for a file
// of a kilobyte. Told the file's size, it checks the fan-out against it
// first.
func TestReadIndexRefusesAFanoutLongerThanTheFile(t *testing.T) {
	var idx bytes.Buffer
	idx.Write([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2})
	for range 256 {
		binary.Write(&idx, binary.BigEndian, uint32(1<<25)) // 33 million objects, all in the first bucket
	}
	idx.Write(make([]byte, 40)) // the two checksums
	path := filepath.Join(t.TempDir(), "pack-damaged.idx")
	if err := os.WriteFile(path, idx.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readIndex(path)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a damaged index read without an error")
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("reading a damaged index of %d bytes allocated %d MB before failing: %v", idx.Len(), allocated>>20, err)
	}
}
