package source

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/vectorflow-dev/vectorflow/internal/gitpack"
)

// The store offers a push the entries its packs hold (gitpack.Stored): the
// objects a run wrote are packed as they are written, each version of a
// file or directory a delta of the next, and the push that sends them
// copies those entries instead of inflating every object and deflating it
// again.
var _ gitpack.Stored = (*packStorer)(nil)

// packEntries is what the store reads of one pack's entries: the pack,
// kept open while its index is the one read, and where each entry ends.
type packEntries struct {
	file *os.File
	ends map[uint64]uint64 // an entry's offset → the next entry's
}

// StoredEntry says whether one of the store's packs holds h whole or as a
// REF_DELTA, and of which base. An OFS_DELTA (a fetched pack's) is not
// offered: its base is named by where it lies in its own pack.
func (s *packStorer) StoredEntry(h plumbing.Hash) (plumbing.Hash, bool) {
	defer s.readLock()()
	_, entries, offset, ok := s.locateEntry(h)
	if !ok {
		return plumbing.ZeroHash, false
	}
	var header [10 + len(plumbing.ZeroHash)]byte
	n, _ := entries.file.ReadAt(header[:min(uint64(len(header)), entries.ends[offset]-offset)], int64(offset))
	kind, at, ok := entryKind(header[:n])
	switch {
	case !ok:
		return plumbing.ZeroHash, false
	case kind >= 1 && kind <= 4: // commit, tree, blob, tag
		return plumbing.ZeroHash, true
	case kind == packRefDelta && at+len(plumbing.ZeroHash) <= n:
		return plumbing.Hash(header[at : at+len(plumbing.ZeroHash)]), true
	}
	return plumbing.ZeroHash, false
}

// AppendStoredEntry appends h's entry to b as its pack holds it, once its
// bytes match the CRC-32 the pack's index gives them.
func (s *packStorer) AppendStoredEntry(b []byte, h plumbing.Hash) ([]byte, error) {
	defer s.readLock()()
	idx, entries, offset, ok := s.locateEntry(h)
	if !ok {
		return nil, fmt.Errorf("no pack of the store holds %s", h)
	}
	size := entries.ends[offset] - offset
	start := len(b)
	b = slices.Grow(b, int(size))[:start+int(size)]
	if _, err := entries.file.ReadAt(b[start:], int64(offset)); err != nil {
		return nil, fmt.Errorf("read the entry of %s: %w", h, err)
	}
	crc, err := idx.FindCRC32(h)
	if err != nil {
		return nil, err
	}
	if crc32.ChecksumIEEE(b[start:]) != crc {
		return nil, fmt.Errorf("the entry of %s does not match its index's CRC-32: the pack is damaged", h)
	}
	return b, nil
}

// locateEntry finds the pack holding h, opening it on first use. s.mu must
// be held.
func (s *packStorer) locateEntry(h plumbing.Hash) (*idxfile.MemoryIndex, *packEntries, uint64, bool) {
	if s.indexes == nil {
		s.indexes = s.readIndexes()
	}
	// A push lists the objects of one commit after another, which one
	// pack mostly holds together: that pack is searched first.
	n := len(s.indexes)
	first := s.lastEntries % max(n, 1)
	for i := range n {
		idx := s.indexes[(first+i)%n]
		offset, err := idx.FindOffset(h)
		if err != nil {
			continue
		}
		s.lastEntries = (first + i) % n
		entries, err := s.packEntries(idx)
		if err != nil {
			return nil, nil, 0, false
		}
		if _, ok := entries.ends[uint64(offset)]; !ok {
			return nil, nil, 0, false
		}
		return idx, entries, uint64(offset), true
	}
	return nil, nil, 0, false
}

// packEntries opens the pack of idx and reads where its entries end; the
// packs of indexes no longer read are closed.
func (s *packStorer) packEntries(idx *idxfile.MemoryIndex) (*packEntries, error) {
	if e, ok := s.entries[idx]; ok {
		return e, nil
	}
	for old, e := range s.entries {
		if !slices.Contains(s.indexes, old) {
			e.file.Close()
			delete(s.entries, old)
		}
	}
	path := filepath.Join(s.gitDir, "objects", "pack", "pack-"+plumbing.Hash(idx.PackfileChecksum).String()+".pack")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	ends, err := entryEnds(idx, uint64(info.Size()))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if s.entries == nil {
		s.entries = map[*idxfile.MemoryIndex]*packEntries{}
	}
	e := &packEntries{file: f, ends: ends}
	s.entries[idx] = e
	return e, nil
}

// entryEnds maps each entry's offset in a pack of size bytes to where it
// ends: the next entry's offset, or the trailer's.
func entryEnds(idx *idxfile.MemoryIndex, size uint64) (map[uint64]uint64, error) {
	const headerSize, trailerSize = 12, 20
	entries, err := indexEntriesByOffset(idx)
	if err != nil {
		return nil, err
	}
	ends := make(map[uint64]uint64, len(entries))
	for i, e := range entries {
		next := size - trailerSize
		if i+1 < len(entries) {
			next = entries[i+1].Offset
		}
		if e.Offset < headerSize || size < headerSize+trailerSize || next <= e.Offset {
			return nil, errors.New("the index's offsets do not fit the pack")
		}
		ends[e.Offset] = next
	}
	return ends, nil
}

// entryKind reads a pack entry's header: its kind, and where what follows
// the type and size starts.
func entryKind(header []byte) (kind byte, at int, ok bool) {
	if len(header) == 0 {
		return 0, 0, false
	}
	kind = header[0] >> 4 & 7
	for at = 0; at < len(header) && header[at]&0x80 != 0; at++ {
	}
	return kind, at + 1, at < len(header)
}
