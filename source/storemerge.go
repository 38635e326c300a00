package source

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
)

// A store gathers packs: a fetch of more than storeLooseObjects adds one,
// and so does every compaction. Each process reads every pack's index
// (go-git's and the store's own) and searches them all for each object it
// looks up, so a cache of 200 packs made a warm run --once at 1,000 stages
// take twice as long as one pack. Past compactPackLimit packs, a
// compaction merges them into one, as git's gc --auto does past
// gc.autoPackLimit: each entry is copied as it is stored, deltas included,
// without inflating it, so a merge costs a copy of the packs' bytes.
//
// git's limit is 50, but git maps its indexes where every vectorflow
// process decodes each one twice: 50 packs added 40 ms to that warm run
// of 0.2 s, 16 packs 10 ms. Packs come a few a day to a busy store, so a
// merge every 16 of them is rare.
//
// The merged packs stay for compactLooseAge, named in storeRetiredFile: a
// process that read their indexes before the merge still finds their
// files, and a later compaction removes them. A process that misses one
// after that reads the packs again (packStorer.again).
const compactPackLimit = 16

const (
	storeRetiredFile   = "vectorflow-retired-packs"
	storeRetiredFormat = "vectorflow retired packs 1\n"
)

// retiredPacks are the packs earlier merges copied into a newer pack, by
// name ("pack-<checksum>"), with when. A file that does not read names
// none: its packs are merged again, which costs disk, never an object.
func (d *diskStore) retiredPacks(now time.Time) map[string]time.Time {
	retired := map[string]time.Time{}
	body, ok := cachefile.Read(filepath.Join(d.gitDir(), storeRetiredFile), storeRetiredFormat, 1<<20, now)
	if !ok {
		return retired
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(body)), "\n") {
		at, name, ok := strings.Cut(line, " ")
		nanos, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || !isPackName(name) {
			return map[string]time.Time{}
		}
		retired[name] = time.Unix(0, nanos)
	}
	return retired
}

func (d *diskStore) writeRetired(retired map[string]time.Time) error {
	file := filepath.Join(d.gitDir(), storeRetiredFile)
	if len(retired) == 0 {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(retired)) {
		fmt.Fprintf(&b, "%d %s\n", retired[name].UnixNano(), name)
	}
	return cachefile.Write(file, storeRetiredFormat, []byte(b.String()))
}

func isPackName(name string) bool {
	sum, ok := strings.CutPrefix(name, "pack-")
	b, err := hex.DecodeString(sum)
	return ok && err == nil && len(b) == len(plumbing.ZeroHash)
}

// retirePacks merges the store's packs into one once there are more than
// packLimit that no merge retired yet, and removes the retired packs once
// they are looseAge old. It says whether the packs changed. Called with
// the file lock and s.mu held. A merge that fails leaves every pack where
// it was: it costs lookups, never an object.
func (d *diskStore) retirePacks(now time.Time) (changed bool) {
	retired := d.retiredPacks(now)
	for name, at := range retired {
		if now.Sub(at) < d.looseAge {
			continue
		}
		// The pack first: readers list the packs by their pack files.
		base := filepath.Join(d.gitDir(), "objects", "pack", name)
		if err := os.Remove(base + ".pack"); err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.Remove(base + ".idx"); err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		delete(retired, name)
		changed = true
	}
	var live []string
	for p := range strings.SplitSeq(listPacks(d.gitDir()), "\n") {
		name := strings.TrimSuffix(filepath.Base(p), ".pack")
		if _, gone := retired[name]; p != "" && !gone {
			live = append(live, name)
		}
	}
	if names := strings.Join(live, " "); len(live) > d.packLimit && names != d.unmerged {
		if _, err := mergePacks(filepath.Join(d.gitDir(), "objects", "pack"), live); err != nil {
			d.unmerged = names // not again each fetch: a copy of every pack each time
		} else {
			for _, name := range live {
				retired[name] = now
			}
			changed = true
		}
	}
	if changed {
		_ = d.writeRetired(retired) // unwritten, the packs are merged again: disk, never an object
	}
	return changed
}

// Pack entry types (git's): the two kinds of delta, the others whole.
const (
	packOfsDelta = 6
	packRefDelta = 7
)

// mergePacks writes one pack, in packDir, holding every object of packs
// (each named "pack-<checksum>"), and returns its name. Each entry is
// copied as stored; a delta of the entry at an offset (OFS_DELTA) becomes
// a delta of that object by name (REF_DELTA), which git and go-git both
// read. Every entry is checked against its index's CRC-32 as it is copied:
// a damaged pack fails the merge rather than reach the new one, and so
// does a delta whose base none of the packs holds. The new pack's index
// is written before the pack takes its name, as go-git and git do, so a
// reader never lists a pack it cannot read.
func mergePacks(packDir string, packs []string) (name string, err error) {
	entries := make([][]*idxfile.Entry, len(packs))
	objects := map[plumbing.Hash]bool{}
	for i, p := range packs {
		if entries[i], err = entriesByOffset(filepath.Join(packDir, p+".idx")); err != nil {
			return "", err
		}
		for _, e := range entries[i] {
			objects[e.Hash] = false
		}
	}
	tmp, err := os.CreateTemp(packDir, "tmp_pack_merge_")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	m := &packMerge{objects: objects, bases: map[plumbing.Hash]bool{}, idx: new(idxfile.Writer), sum: sha1.New()}
	m.out = bufio.NewWriterSize(io.MultiWriter(tmp, m.sum), 64<<10)
	header := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32([]byte("PACK"), 2), uint32(len(objects)))
	if err := m.write(header); err != nil {
		return "", err
	}
	_ = m.idx.OnHeader(uint32(len(objects)))
	for i, p := range packs {
		if err := m.copyPack(filepath.Join(packDir, p+".pack"), entries[i]); err != nil {
			return "", fmt.Errorf("merge %s: %w", p, err)
		}
	}
	for b := range m.bases {
		if !objects[b] {
			return "", fmt.Errorf("merge packs: a delta's base %s is in none of them", b)
		}
	}
	if err := m.out.Flush(); err != nil {
		return "", err
	}
	var checksum plumbing.Hash
	copy(checksum[:], m.sum.Sum(nil))
	if _, err := tmp.Write(checksum[:]); err != nil {
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	_ = m.idx.OnFooter(checksum)
	idx, err := m.idx.Index()
	if err != nil {
		return "", err
	}
	name = "pack-" + checksum.String()
	if err := writeIndex(packDir, name+".idx", idx); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(packDir, name+".pack")); err != nil {
		_ = os.Remove(filepath.Join(packDir, name+".idx"))
		return "", err
	}
	return name, nil
}

// packMerge is the pack mergePacks writes: what it wrote (objects true),
// the bases its deltas name, its index and its checksum.
type packMerge struct {
	in      *bufio.Reader // the pack being copied
	out     *bufio.Writer
	sum     hash.Hash
	offset  uint64
	objects map[plumbing.Hash]bool
	bases   map[plumbing.Hash]bool
	idx     *idxfile.Writer
}

func (m *packMerge) write(b []byte) error {
	_, err := m.out.Write(b)
	m.offset += uint64(len(b))
	return err
}

// copyPack copies the entries of the pack at path, in the order they are
// stored (entries, by offset), but those of objects already written.
func (m *packMerge) copyPack(path string, entries []*idxfile.Entry) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	at := make(map[uint64]plumbing.Hash, len(entries))
	for _, e := range entries {
		at[e.Offset] = e.Hash
	}
	const headerSize, trailerSize = 12, 20
	end := uint64(info.Size()) - trailerSize
	if info.Size() < headerSize+trailerSize || len(entries) > 0 && entries[0].Offset != headerSize {
		return fmt.Errorf("%d bytes do not start with the first object its index names", info.Size())
	}
	section := io.NewSectionReader(f, headerSize, int64(end)-headerSize)
	if m.in == nil {
		m.in = bufio.NewReaderSize(section, 64<<10)
	}
	r := m.in
	r.Reset(section)
	for i, e := range entries {
		next := end
		if i+1 < len(entries) {
			next = entries[i+1].Offset
		}
		if next <= e.Offset || next > end {
			return fmt.Errorf("object %s at offset %d: the index's offsets do not fit the pack", e.Hash, e.Offset)
		}
		if err := m.copyEntry(r, e, next-e.Offset, at); err != nil {
			return fmt.Errorf("object %s at offset %d: %w", e.Hash, e.Offset, err)
		}
	}
	return nil
}

// copyEntry copies the entry of e, size bytes read from r, unless e's
// object is written already; a delta of an offset becomes a delta of the
// object at that offset (at).
func (m *packMerge) copyEntry(r *bufio.Reader, e *idxfile.Entry, size uint64, at map[uint64]plumbing.Hash) error {
	crc := crc32.NewIEEE()
	in := io.TeeReader(io.LimitReader(r, int64(size)), crc)
	var header []byte
	read := 0 // bytes of the entry read before its data
	readByte := func() (byte, error) {
		var b [1]byte
		if _, err := io.ReadFull(in, b[:]); err != nil {
			return 0, err
		}
		header = append(header, b[0])
		read++
		return b[0], nil
	}
	c, err := readByte()
	if err != nil {
		return err
	}
	kind := c >> 4 & 7
	for c&0x80 != 0 {
		if c, err = readByte(); err != nil {
			return err
		}
	}
	var base plumbing.Hash
	switch kind {
	case packOfsDelta:
		start := len(header)
		if c, err = readByte(); err != nil {
			return err
		}
		distance := uint64(c & 0x7f)
		for c&0x80 != 0 {
			if c, err = readByte(); err != nil {
				return err
			}
			distance = (distance+1)<<7 | uint64(c&0x7f)
		}
		var found bool
		if base, found = at[e.Offset-distance]; distance > e.Offset || !found {
			return fmt.Errorf("its delta's base at %d bytes before is no object of the pack", distance)
		}
		header = append(header[:start:start], base[:]...)
		header[0] = header[0]&^0x70 | packRefDelta<<4
	case packRefDelta:
		if _, err := io.ReadFull(in, base[:]); err != nil {
			return err
		}
		read += len(base)
		header = append(header, base[:]...)
	}
	written := m.objects[e.Hash]
	dataSize := int64(size) - int64(read)
	var out io.Writer = io.Discard
	newCRC := crc32.NewIEEE()
	offset := m.offset
	if !written {
		newCRC.Write(header)
		if err := m.write(header); err != nil {
			return err
		}
		out = io.MultiWriter(m.out, newCRC)
	}
	n, err := io.CopyN(out, in, dataSize)
	if err != nil {
		return err
	}
	if crc.Sum32() != e.CRC32 {
		return errors.New("its bytes do not match the index's CRC-32: the pack is damaged")
	}
	if written {
		return nil
	}
	m.offset += uint64(n)
	m.objects[e.Hash] = true
	if kind == packOfsDelta || kind == packRefDelta {
		m.bases[base] = true
	}
	m.idx.Add(e.Hash, offset, newCRC.Sum32())
	return nil
}

// entriesByOffset reads the pack index at path: its entries in the order
// its pack stores them.
func entriesByOffset(path string) ([]*idxfile.Entry, error) {
	idx, err := readIndex(path)
	if err != nil {
		return nil, err
	}
	entries, err := indexEntriesByOffset(idx)
	if err != nil {
		return nil, fmt.Errorf("pack index %s: %w", filepath.Base(path), err)
	}
	return entries, nil
}

// indexEntriesByOffset is idx's entries in the order its pack stores them.
func indexEntriesByOffset(idx *idxfile.MemoryIndex) ([]*idxfile.Entry, error) {
	iter, err := idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var entries []*idxfile.Entry
	for {
		e, err := iter.Next()
		if err == io.EOF {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
}
