package source

import (
	"fmt"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
)

// The objects a process writes (the writer's trees, blobs and commits)
// are kept in memory until a reference of the store is about to name one,
// and only then stored: a few loose, as before, many as one pack. A chain
// of automatic stages written in one run --once otherwise created a loose
// file per object, some fifteen a hop, which cost more than the rest of
// writing the hop (a file's creation takes 40 to 200 µs on the disks
// measured), and its compaction read them all back to pack them.
//
// What is on disk stays true to itself: no reference there ever names an
// object that only memory holds, so a process that stops before storing
// loses nothing but cache (the objects were pushed, or were never more
// than this process's). Another process or another Repository of the same
// store does not see pending objects; it fetches what it lacks, as it
// would from a store that never had them.
const (
	// storePendingBytes is how much a store holds pending before it packs
	// them without waiting for a reference: the batch a compaction packs.
	storePendingBytes = compactBatchBytes
)

// holdPending keeps o in memory, readable at once, until storePending.
func (s *packStorer) holdPending(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if !storable(o.Type()) {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	kept, err := copyObject(o)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	n := kept.Size()

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.pending[kept.h]; !held {
		if s.pending == nil {
			s.pending = map[plumbing.Hash]storedObject{}
		}
		s.pending[kept.h] = kept
		s.pendingOrder = append(s.pendingOrder, kept.h)
		s.pendingBytes += n
	}
	if s.pendingBytes >= s.pendingLimit {
		if err := s.storePendingLocked(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return kept.h, nil
}

// pendingSize is the size of pending object h.
func (s *packStorer) pendingSize(h plumbing.Hash) (int64, bool) {
	defer s.readLock()()
	o, held := s.pending[h]
	if !held {
		return 0, false
	}
	return o.Size(), true
}

// SetReference stores the pending objects before a reference may name
// one of them.
func (s *packStorer) SetReference(ref *plumbing.Reference) error {
	if err := s.storePending(); err != nil {
		return fmt.Errorf("store the objects written before setting %s: %w", ref.Name(), err)
	}
	return s.lockedStorer.SetReference(ref)
}

// CheckAndSetReference stores the pending objects before a reference may
// name one of them.
func (s *packStorer) CheckAndSetReference(ref, old *plumbing.Reference) error {
	if err := s.storePending(); err != nil {
		return fmt.Errorf("store the objects written before setting %s: %w", ref.Name(), err)
	}
	return s.lockedStorer.CheckAndSetReference(ref, old)
}

func (s *packStorer) storePending() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storePendingLocked()
}

// storePendingLocked stores the pending objects no pack holds: fewer than
// storeLooseObjects loose (counted for compact), as git's unpackLimit
// stores a push of as few, and more as one pack, each version of a file or
// directory a delta of the next (NoteVersions). A running run's pass
// writes a promotion's 20 to 40 objects, whatever their bytes, and nothing
// merges packs: a pack each would put hundreds of indexes before every
// lookup. Objects it could not store stay pending. s.mu must be held.
func (s *packStorer) storePendingLocked() error {
	if len(s.pendingOrder) == 0 {
		return nil
	}
	var objects []plumbing.Hash
	for _, h := range s.pendingOrder {
		if !s.packed(h) {
			objects = append(objects, h)
		}
	}
	if len(objects) < storeLooseObjects {
		// One file each: a process stopped in the middle must leave
		// no commit without what it names (a fetch hands objects over
		// in a pack's order, commits first).
		objects, err := tipsLast(objects, func(h plumbing.Hash) plumbing.EncodedObject { return s.pending[h] })
		if err != nil {
			return fmt.Errorf("store the objects written: %w", err)
		}
		for _, h := range objects {
			tmp, _, err := s.deflateLoose(s.pending[h], false)
			if err == nil {
				if err = s.placeLooseLocked(tmp, h); err != nil {
					_ = os.Remove(tmp)
				}
			}
			if err != nil {
				return fmt.Errorf("store object %s loose: %w", h, err)
			}
			s.written.Add(1)
		}
	} else if err := s.packPendingLocked(objects); err != nil {
		return err
	}
	// What was just written is read back soon (a push packs it, the next
	// pass reads the state it wrote): memory keeps what it can.
	for _, h := range s.pendingOrder {
		s.objects.Put(s.pending[h])
	}
	s.pending, s.pendingOrder, s.pendingBytes = nil, nil, 0
	return nil
}

// packPendingLocked writes objects, all pending, as one pack. s.mu must
// be held.
func (s *packStorer) packPendingLocked(objects []plumbing.Hash) error {
	bases := s.deltaOrder(objects)
	index, err := storePack(s.gitDir, lockHeld{s}, objects, bases)
	if err != nil {
		return fmt.Errorf("pack %d objects written: %w", len(objects), err)
	}
	s.fs.Reindex() // go-git reads the new index when it next looks
	if s.indexes != nil {
		s.indexes = append(s.indexes, index)
	}
	s.packs = listPacks(s.gitDir)
	// Counted as written: a run that ends having written many packs the
	// few it stored loose too, so the tip it leaves is held by packs.
	s.written.Add(int64(len(objects)))
	s.packedPending = true
	return nil
}
