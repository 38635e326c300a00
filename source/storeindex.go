package source

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/vectorflow-dev/vectorflow/internal/gitpack"
)

// readIndex reads the pack index at path, through a buffer: go-git's
// decoder reads each of the 256 fan-out buckets' names, checksums and
// offsets with a read of its own. The decoder is told the file's size, so
// a damaged fan-out table is refused before it sizes anything.
func readIndex(path string) (*idxfile.MemoryIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(sizedReader{bufio.NewReader(f), info}).Decode(idx); err != nil {
		return nil, fmt.Errorf("pack index %s: %w", filepath.Base(path), err)
	}
	return idx, nil
}

// sizedReader is a file read through a buffer that still gives its size,
// which go-git's index decoder checks the fan-out table against.
type sizedReader struct {
	*bufio.Reader
	info fs.FileInfo
}

func (r sizedReader) Stat() (fs.FileInfo, error) { return r.info, nil }

// storePack packs objects, read from s (gitpack.WriteIndexed, bases as
// there), into gitDir with the index made while writing: the index first
// and then the pack under its name, as go-git's pack writer does, so no
// pack is listed without its index. A pack the store holds already (packs
// are named by their content) is kept as it is.
func storePack(gitDir string, s gitpack.Objects, objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash) (_ *idxfile.MemoryIndex, err error) {
	packDir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	index, err := gitpack.WriteIndexed(tmp, s, objects, bases)
	if err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	name := "pack-" + plumbing.Hash(index.PackfileChecksum).String()
	pack := filepath.Join(packDir, name+".pack")
	if _, err := os.Stat(pack); err == nil {
		return index, os.Remove(tmp.Name())
	}
	if err := writeIndex(packDir, name+".idx", index); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), pack); err != nil {
		return nil, err
	}
	return index, nil
}

// writeIndex writes idx as the file name in packDir, whole or not at all.
func writeIndex(packDir, name string, idx *idxfile.MemoryIndex) (err error) {
	tmp, err := os.CreateTemp(packDir, "tmp_pack_merge_")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	if _, err := idxfile.NewEncoder(w).Encode(idx); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(packDir, name))
}

// bufferedIndexes is a Git directory's filesystem whose pack indexes read
// through a buffer: go-git's decoder reads each of an index's 256 fan-out
// buckets with a read of its own, three times over, which made decoding
// a store's three indexes of 7,000 objects take 6.1 ms instead of 0.7.
type bufferedIndexes struct{ billy.Filesystem }

func (fs bufferedIndexes) Open(name string) (billy.File, error) {
	f, err := fs.Filesystem.Open(name)
	if err != nil || !strings.HasSuffix(name, ".idx") {
		return f, err
	}
	// go-git's decoder asks an index for its size, to check its length
	// first; a pack's index never changes once it has its name.
	info, err := fs.Filesystem.Stat(name)
	if err != nil {
		return f, nil
	}
	return &bufferedIndex{File: f, info: info, r: bufio.NewReaderSize(f, 64<<10)}, nil
}

func (fs bufferedIndexes) Capabilities() billy.Capability { return billy.Capabilities(fs.Filesystem) }

// bufferedIndex is a pack index, read from start to end.
type bufferedIndex struct {
	billy.File
	info fs.FileInfo
	r    *bufio.Reader
}

func (f *bufferedIndex) Read(p []byte) (int, error) { return f.r.Read(p) }

func (f *bufferedIndex) Stat() (fs.FileInfo, error) { return f.info, nil }
