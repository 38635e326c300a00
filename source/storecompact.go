package source

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The writer's objects reach the disk when a reference is about to name
// them (storepending.go): the few of a running run's pass as loose
// objects, one file each (at 10,000 stages a promotion adds about 40 of
// them and a megabyte of disk), the many of a held run or a busy pass as
// one pack; small fetches are stored loose too. A fetch therefore packs
// the loose objects once there are many, as git's gc --auto does, and so
// does a run that ends (Compact) once it wrote many; both remove the loose
// copies of packed objects once they are an hour old: a process of an older
// vectorflow sharing the cache then still finds an object it looks up
// loose, and this one's readers look at the packs again when an object is
// missing (packStorer.again). A long-running process's fetches do not pack
// what it wrote: a pack every few dozen promotions would put hundreds of
// indexes before every lookup. Packs still gather (a large fetch, each
// compaction), so past compactPackLimit a compaction merges them
// (storemerge.go).
const (
	// compactLooseLimit is git's gc.auto (6,700 loose objects) over the
	// 256 directories loose objects are spread over: one directory with
	// more unpacked (or removable) objects than this starts a compaction.
	compactLooseLimit = 6700 / 256
	// compactBatchBytes bounds the objects one pack is encoded from: the
	// encoder holds them in memory, and a tree of 10,000 overlays is
	// 400 KB.
	compactBatchBytes = 64 << 20
	// compactLooseAge is how long a packed object stays loose too.
	compactLooseAge = time.Hour
	// compactWrittenLimit is how many objects a run may write and leave
	// loose when it ends: only packs vouch for a tree (storeWholeFile), so
	// every later process walks each tree holding a loose object and opens
	// each loose object, on top of reading the trees loose (35 to 60 ms of
	// a 0.3 s run --once at 1,000 stages, after a first run that wrote
	// 4,300 objects). A promotion writes 20 to 40.
	compactWrittenLimit = 1024
)

// VersionNoter is a store told, for objects written into it, the object
// each replaced at its path (replaced maps newer to older): its
// compaction packs an older version as a delta of the newer one. A chain
// of automatic stages rewrites the same wide directories once a hop, and
// packed whole those versions were most of a cache of 100 MB and more.
type VersionNoter interface {
	NoteVersions(replaced map[plumbing.Hash]plumbing.Hash)
}

// maxVersionNotes bounds what a store remembers of versions until its
// next compaction: about 100 bytes a note.
const maxVersionNotes = 1 << 18

// NoteVersions remembers, for each older object, the first newer one
// noted to replace it.
func (s *packStorer) NoteVersions(replaced map[plumbing.Hash]plumbing.Hash) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	if s.newer == nil || len(s.newer)+len(replaced) > maxVersionNotes {
		s.newer = make(map[plumbing.Hash]plumbing.Hash, len(replaced))
	}
	for newer, older := range replaced {
		if _, noted := s.newer[older]; !noted && older != newer {
			s.newer[older] = newer
		}
	}
}

// deltaOrder orders loose for packing and names the bases: each object
// whose newer version is loose too follows it, chains one after another,
// so a batch holds whole chains and the newest of each comes first (git's
// order: the version read most is whole).
func (s *packStorer) deltaOrder(loose []plumbing.Hash) (bases map[plumbing.Hash]plumbing.Hash) {
	s.notesMu.Lock()
	defer s.notesMu.Unlock()
	if len(s.newer) == 0 {
		return nil
	}
	isLoose := make(map[plumbing.Hash]bool, len(loose))
	for _, h := range loose {
		isLoose[h] = true
	}
	bases = map[plumbing.Hash]plumbing.Hash{}
	for _, h := range loose {
		if n, ok := s.newer[h]; ok && isLoose[n] {
			bases[h] = n
		}
	}
	// Each object's place: the newest version of its chain, then how far
	// below it the object is. A cycle (a file changed back and forth)
	// stops at the first object met twice.
	type place struct {
		root  plumbing.Hash
		depth int
	}
	places := make(map[plumbing.Hash]place, len(loose))
	for _, h := range loose {
		// Up from h to the newest version not placed yet, or to one
		// placed already, which the chain then continues.
		var chain []plumbing.Hash
		seen := map[plumbing.Hash]bool{}
		above, continues := place{}, false
		for x := h; ; {
			if p, placed := places[x]; placed {
				above, continues = p, true
				break
			}
			if seen[x] {
				break
			}
			seen[x] = true
			chain = append(chain, x)
			n, ok := bases[x]
			if !ok {
				break
			}
			x = n
		}
		if len(chain) == 0 {
			continue
		}
		p := place{root: chain[len(chain)-1]}
		if continues {
			p = place{root: above.root, depth: above.depth + 1}
		}
		for i := len(chain) - 1; i >= 0; i-- {
			places[chain[i]] = p
			p.depth++
		}
	}
	slices.SortStableFunc(loose, func(a, b plumbing.Hash) int {
		pa, pb := places[a], places[b]
		if c := bytes.Compare(pa.root[:], pb.root[:]); c != 0 {
			return c
		}
		return cmp.Compare(pa.depth, pb.depth)
	})
	for h := range bases {
		delete(s.newer, h)
	}
	return bases
}

// compact packs the loose objects no pack holds, and removes the loose
// copies of packed objects older than the store's looseAge, when one
// directory of loose objects has more than looseLimit of either, or, at a
// run's end, when this process wrote more than its writtenLimit objects
// since the last compaction. It says whether it packed. Called with the
// file lock held. A compaction that fails leaves objects where they were:
// it costs disk, never an object.
func (d *diskStore) compact(now time.Time, runEnds bool) (packedAny bool) {
	s := d.storer
	s.mu.Lock()
	defer s.mu.Unlock()
	// What the process wrote and still holds joins the disk first: a run
	// that ends stores it (one pack when it is many), and a compaction
	// counts what was stored loose.
	if s.storePendingLocked() == nil && s.packedPending {
		s.packedPending, packedAny = false, true
		d.forgetLoose()
	}
	d.removeTemporaries(now)
	if d.retirePacks(now) {
		s.rereadLocked()
	}
	unpacked, removable := d.looseSample(now)
	written := s.written.Load()
	if unpacked <= d.looseLimit && removable <= d.looseLimit && !(runEnds && written > d.writtenLimit) {
		return packedAny
	}
	var loose []plumbing.Hash
	if d.fs.ForEachObjectHash(func(h plumbing.Hash) error {
		loose = append(loose, h)
		return nil
	}) != nil {
		return false
	}
	bases := s.deltaOrder(loose)
	var batch []plumbing.Hash
	var size int64
	pack := func() bool {
		if len(batch) == 0 {
			return true
		}
		_, err := storePack(d.gitDir(), lockHeld{s}, batch, bases)
		batch, size = batch[:0], 0
		packedAny = packedAny || err == nil
		return err == nil
	}
	for _, h := range loose {
		if s.packed(h) {
			continue
		}
		n, err := looseSize(d.gitDir(), h) // go-git's leaves a file open
		if err != nil {
			continue // damaged or gone: left as it is
		}
		if size+n > compactBatchBytes && !pack() {
			return false
		}
		batch = append(batch, h)
		size += n
	}
	if !pack() {
		return false
	}
	s.written.Add(-written)
	// go-git and this store read the indexes again, the new ones too.
	s.fs.Reindex()
	s.packs = listPacks(s.gitDir)
	s.indexes = nil
	if packedAny {
		d.forgetLoose()
	}
	for _, h := range loose {
		if !s.packed(h) {
			continue
		}
		// os.Stat, not go-git's LooseObjectTime: it checks each component
		// of the path with lstat, for every loose object.
		if info, err := os.Stat(loosePath(s.gitDir, h)); err == nil && now.Sub(info.ModTime()) >= d.looseAge {
			_ = d.fs.DeleteLooseObject(h)
		}
	}
	return packedAny
}

// forgetLoose forgets the trees and histories found whole while they held
// a loose object, and the commits found whole, so that the next check
// finds the objects a compaction packed, and notes them for the next
// process.
func (d *diskStore) forgetLoose() {
	for h := range d.wholeTrees {
		if !d.packedTrees[h] {
			delete(d.wholeTrees, h)
		}
	}
	for h, packed := range d.history {
		if !packed {
			delete(d.history, h)
		}
	}
	d.whole = nil
}

// removeTemporaries removes the temporary files packs (go-git's and
// merges') and loose objects (storeLoose's) are written through, in
// objects/pack, and the indexes of packs that never took their name, that
// a process stopped in the middle of a write left behind, once they are
// as old as a loose object may stay: nobody is still writing them.
func (d *diskStore) removeTemporaries(now time.Time) {
	dir := filepath.Join(d.gitDir(), "objects", "pack")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	packs := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".pack"); ok {
			packs[name] = true
		}
	}
	for _, e := range entries {
		// An index whose pack is not there: its writer (go-git's,
		// storePack's or a merge's) stopped between naming the index and
		// naming the pack.
		index, isIndex := strings.CutSuffix(e.Name(), ".idx")
		orphan := isIndex && !packs[index]
		if !orphan && !strings.HasPrefix(e.Name(), "tmp_pack_") && !strings.HasPrefix(e.Name(), looseTemporary) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) >= compactLooseAge {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// looseSample counts, in one of the 256 directories of loose objects, the
// objects no pack holds and the packed ones old enough to remove, as
// git's gc --auto estimates. s.mu must be held.
func (d *diskStore) looseSample(now time.Time) (unpacked, removable int) {
	dir := filepath.Join(d.gitDir(), "objects", "17")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		name := "17" + e.Name()
		if _, err := hex.DecodeString(name); err != nil || len(name) != 40 {
			continue // a temporary file
		}
		h := plumbing.NewHash(name)
		switch info, err := e.Info(); {
		case err != nil:
		case !d.storer.packed(h):
			unpacked++
		case now.Sub(info.ModTime()) >= d.looseAge:
			removable++
		}
	}
	return unpacked, removable
}

// packed says whether a pack holds h. s.mu must be held.
func (s *packStorer) packed(h plumbing.Hash) bool {
	if s.indexes == nil {
		s.indexes = s.readIndexes()
	}
	for _, idx := range s.indexes {
		if ok, err := idx.Contains(h); err == nil && ok {
			return true
		}
	}
	return false
}
