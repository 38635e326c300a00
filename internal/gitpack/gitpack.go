// Package gitpack writes git packs, deflated at zlib's best speed: what
// vectorflow pushes and what its object store keeps. go-git's encoder
// deflates at the default level, which takes three to four times the CPU
// on the wide trees a promotion writes in a large repository (a directory
// of 10,000 overlays is a 340 KB tree) for 5 % fewer bytes.
//
// An object may be written as a delta of another object of the same pack
// that the caller names as its base (another version of the same file or
// directory): a push of many commits that each rewrite the same wide
// directory then sends each version as a few bytes, not a whole tree.
package gitpack

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// MaxDepth is the longest chain of deltas Write makes, git's default
// (pack.depth): reading an object applies every delta of its chain.
const MaxDepth = 50

// maxDeltaObject is the largest object written as a delta or kept as a
// base: both are held in memory whole while the pack is written.
const maxDeltaObject = 1 << 20

// Objects is where Write reads the objects it packs.
type Objects interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}

// Stored is what a store that keeps objects in packs of its own may offer
// Write: an object's entry as its pack holds it, to copy into the pack
// instead of inflating it and deflating it again, as git's pack-objects
// reuses what its packs hold. A push at the end of a long run --once sends
// every object the run wrote, most of them packed already, deltas
// included: copying them took that push from 11.9 s of CPU to a few.
type Stored interface {
	// StoredEntry says whether a pack holds h as a whole object or as a
	// REF_DELTA, and of which base (zero for a whole object).
	StoredEntry(h plumbing.Hash) (base plumbing.Hash, ok bool)
	// AppendStoredEntry appends h's entry to b, byte for byte as its pack
	// holds it, once it matches its index's CRC-32.
	AppendStoredEntry(b []byte, h plumbing.Hash) ([]byte, error)
}

// Write writes objects, read from s, as a pack (version 2), in the order
// given, deflated at best speed. bases names, for some objects, an object
// of nearly the same content (another version of the same file or
// directory); an object whose base was written earlier in this pack, of
// the same type, is written as a delta of it (a REF_DELTA, which every
// receiver reads) when that delta is under half its size and the chain
// stays within MaxDepth. Every other object is written whole, so the pack
// never refers to an object outside it. bases may be nil. When s is Stored,
// an object its pack holds whole, or as a delta of an object written
// earlier in this pack, is copied as it is stored (the chain still within
// MaxDepth).
func Write(w io.Writer, s Objects, objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash) error {
	return WriteThin(w, s, objects, bases, nil)
}

// WriteThin is Write making a thin pack: held names, for some objects, an
// earlier version that the receiver holds (read from s too); an object
// that no base in the pack serves is written as a delta of it, by the
// same rules, when s holds it. Only a receiver that fixes thin packs
// reads one: git's receive-pack does unless it advertises no-thin.
func WriteThin(w io.Writer, s Objects, objects []plumbing.Hash, bases, held map[plumbing.Hash]plumbing.Hash) error {
	return write(w, s, objects, bases, held, nil)
}

// WriteIndexed is Write that also indexes the pack as it writes it, so
// whoever stores the pack need not read it back to index it: go-git's
// pack writer parses the pack again, inflating and hashing every object.
func WriteIndexed(w io.Writer, s Objects, objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash) (*idxfile.MemoryIndex, error) {
	index := new(idxfile.Writer)
	if err := write(w, s, objects, bases, nil, index); err != nil {
		return nil, err
	}
	return index.Index()
}

// write writes the pack; index, when set, is told where each entry starts
// and its CRC-32, then the pack's checksum.
func write(w io.Writer, s Objects, objects []plumbing.Hash, bases, held map[plumbing.Hash]plumbing.Hash, index *idxfile.Writer) error {
	// Entries come as a few bytes of header, then the deflater's blocks:
	// buffered, an unbuffered file sees a few writes, not five per object.
	buf := bufio.NewWriterSize(w, 64<<10)
	sum := sha1.New() // the pack's trailer, not an object name
	at := &position{crc: crc32.NewIEEE()}
	out := io.MultiWriter(buf, sum, at)
	header := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32([]byte("PACK"), 2), uint32(len(objects)))
	if _, err := out.Write(header); err != nil {
		return err
	}
	z, _ := zlib.NewWriterLevel(out, zlib.BestSpeed) // the level is valid
	stored, _ := s.(Stored)
	d := newDeltas(objects, bases, held, stored)
	var entry []byte
	for _, h := range objects {
		start := at.n
		at.crc.Reset()
		copied, err := d.copyStored(out, stored, h, &entry)
		if err == nil && !copied {
			err = d.writeEntry(out, z, s, h)
		}
		if err != nil {
			return fmt.Errorf("pack object %s: %w", h, err)
		}
		if index != nil {
			index.Add(h, start, at.crc.Sum32())
		}
	}
	checksum := sum.Sum(nil)
	if _, err := buf.Write(checksum); err != nil {
		return err
	}
	if index != nil {
		if err := index.OnFooter(plumbing.Hash(checksum)); err != nil {
			return fmt.Errorf("index the pack: %w", err)
		}
	}
	return buf.Flush()
}

// position counts the bytes of a pack written so far, and the CRC-32 of
// those since its last reset: an index names each entry by both.
type position struct {
	n   uint64
	crc hash.Hash32
}

func (p *position) Write(b []byte) (int, error) {
	p.n += uint64(len(b))
	p.crc.Write(b)
	return len(b), nil
}

// deltas holds what Write needs to write objects as deltas: the bases in
// the pack, and the content of those already written until the last
// object naming them is.
type deltas struct {
	bases map[plumbing.Hash]plumbing.Hash
	// held are the bases outside the pack (WriteThin).
	held map[plumbing.Hash]plumbing.Hash
	// wanted counts, for each object that is the base of a later one, the
	// objects still to write that name it.
	wanted map[plumbing.Hash]int
	kept   map[plumbing.Hash]keptBase
	// stored are the objects to copy as a Stored store holds them, with
	// their base (zero for a whole object), and copied those copied.
	stored map[plumbing.Hash]plumbing.Hash
	copied map[plumbing.Hash]bool
	// depths are the lengths of the delta chains written, copied or not
	// (none for an object written whole).
	depths map[plumbing.Hash]int
}

// keptBase is an object written to the pack, held for the deltas that
// name it.
type keptBase struct {
	t       plumbing.ObjectType
	content []byte
}

func newDeltas(objects []plumbing.Hash, bases, held map[plumbing.Hash]plumbing.Hash, stored Stored) *deltas {
	d := &deltas{bases: bases, held: held, wanted: map[plumbing.Hash]int{}, kept: map[plumbing.Hash]keptBase{},
		stored: map[plumbing.Hash]plumbing.Hash{}, copied: map[plumbing.Hash]bool{}, depths: map[plumbing.Hash]int{}}
	if len(bases) == 0 && stored == nil {
		return d
	}
	at := make(map[plumbing.Hash]int, len(objects))
	for i, h := range objects {
		if _, dup := at[h]; !dup {
			at[h] = i
		}
	}
	earlier := func(b plumbing.Hash, i int) bool {
		j, in := at[b]
		return in && j < i
	}
	if stored != nil {
		for i, h := range objects {
			// A version the receiver holds an older one of goes as a
			// delta of that, a few bytes, not as stored (whole).
			if _, thin := held[h]; thin {
				continue
			}
			if base, ok := stored.StoredEntry(h); ok && (base.IsZero() || earlier(base, i)) {
				d.stored[h] = base
			}
		}
	}
	for i, h := range objects {
		if b, ok := bases[h]; ok && earlier(b, i) {
			if _, copied := d.stored[h]; !copied {
				d.wanted[b]++
			}
		}
	}
	return d
}

// copyStored copies h's entry as the store holds it, when newDeltas chose
// to and the delta chain stays within MaxDepth; false when h is to be
// written anew. entry is a buffer reused from one entry to the next.
func (d *deltas) copyStored(out io.Writer, stored Stored, h plumbing.Hash, entry *[]byte) (bool, error) {
	base, ok := d.stored[h]
	if !ok {
		return false, nil
	}
	depth := 0
	if !base.IsZero() {
		if depth = d.depths[base] + 1; depth > MaxDepth {
			return false, nil
		}
	}
	b, err := stored.AppendStoredEntry((*entry)[:0], h)
	if err != nil {
		return false, err
	}
	*entry = b
	if _, err := out.Write(b); err != nil {
		return false, err
	}
	d.copied[h] = true
	if depth > 0 {
		d.depths[h] = depth
	}
	return true, nil
}

// writeEntry writes object h: as a delta of its base when that pays,
// otherwise its type and size and its content deflated by z.
func (d *deltas) writeEntry(out io.Writer, z *zlib.Writer, s Objects, h plumbing.Hash) error {
	o, err := s.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return err
	}
	// The pack's type numbers are git's, which go-git's follow.
	switch o.Type() {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return fmt.Errorf("a %s cannot be pushed whole", o.Type())
	}
	b := d.bases[h]
	base, hasBase := d.kept[b]
	if hasBase {
		defer d.release(b)
	} else if d.copied[b] {
		// Copied, so never held: read again, as a held version is.
		base.t = o.Type()
		base.content, hasBase = readBase(s, base.t, b)
	}
	hasBase = hasBase && base.t == o.Type() && d.depths[b] < MaxDepth
	outside, thin := d.held[h]
	if o.Size() > maxDeltaObject || !hasBase && !thin && d.wanted[h] == 0 {
		return writeWhole(out, z, o)
	}
	content, err := readAll(o)
	if err != nil {
		return err
	}
	if hasBase {
		if delta := packfile.DiffDelta(base.content, content); len(delta) < len(content)/2 {
			d.keep(h, o.Type(), content)
			d.depths[h] = d.depths[b] + 1
			return writeDelta(out, z, b, delta)
		}
	} else if thin {
		if delta, ok := heldDelta(s, o.Type(), outside, content); ok {
			d.keep(h, o.Type(), content)
			d.depths[h] = 1
			return writeDelta(out, z, outside, delta)
		}
	}
	d.keep(h, o.Type(), content)
	return writeContent(out, z, o.Type(), content)
}

// readBase is the content of b, a base the pack does not keep (one the
// receiver holds, or one copied as stored), when s holds it as an object
// of type t small enough to be a base.
func readBase(s Objects, t plumbing.ObjectType, b plumbing.Hash) ([]byte, bool) {
	o, err := s.EncodedObject(t, b)
	if err != nil || o.Size() > maxDeltaObject {
		return nil, false
	}
	content, err := readAll(o)
	return content, err == nil
}

// heldDelta is content as a delta of base, an object the receiver holds,
// when s holds it too, of type t, and the delta is under half the content.
func heldDelta(s Objects, t plumbing.ObjectType, base plumbing.Hash, content []byte) ([]byte, bool) {
	from, ok := readBase(s, t, base)
	if !ok {
		return nil, false
	}
	delta := packfile.DiffDelta(from, content)
	return delta, len(delta) < len(content)/2
}

// keep holds h's content when a later object names it as its base.
func (d *deltas) keep(h plumbing.Hash, t plumbing.ObjectType, content []byte) {
	if d.wanted[h] > 0 {
		d.kept[h] = keptBase{t: t, content: content}
	}
}

// release lets go of base b once no object left to write names it.
func (d *deltas) release(b plumbing.Hash) {
	if d.wanted[b]--; d.wanted[b] <= 0 {
		delete(d.kept, b)
		delete(d.wanted, b)
	}
}

// writeWhole streams o into the pack.
func writeWhole(out io.Writer, z *zlib.Writer, o plumbing.EncodedObject) error {
	if _, err := out.Write(entryHeader(o.Type(), o.Size())); err != nil {
		return err
	}
	r, err := o.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	z.Reset(out)
	n, err := io.Copy(z, r)
	if err != nil {
		return err
	}
	if n != o.Size() {
		return fmt.Errorf("it holds %d bytes, not the %d its header says", n, o.Size())
	}
	return z.Close()
}

// writeContent writes an object of type t whose content is in memory.
func writeContent(out io.Writer, z *zlib.Writer, t plumbing.ObjectType, content []byte) error {
	if _, err := out.Write(entryHeader(t, int64(len(content)))); err != nil {
		return err
	}
	return deflate(out, z, content)
}

// writeDelta writes a REF_DELTA entry: its header, the base's name, then
// the delta deflated.
func writeDelta(out io.Writer, z *zlib.Writer, base plumbing.Hash, delta []byte) error {
	if _, err := out.Write(entryHeader(plumbing.REFDeltaObject, int64(len(delta)))); err != nil {
		return err
	}
	if _, err := out.Write(base[:]); err != nil {
		return err
	}
	return deflate(out, z, delta)
}

func deflate(out io.Writer, z *zlib.Writer, b []byte) error {
	z.Reset(out)
	if _, err := z.Write(b); err != nil {
		return err
	}
	return z.Close()
}

// maxGrow bounds what readAll allocates before reading: a larger object
// grows its buffer as its content comes.
const maxGrow = 64 << 20

// readAll is o's content, checked against its size.
func readAll(o plumbing.EncodedObject) ([]byte, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Sized as the header says, up to a bound: a damaged header may say
	// anything, and the content read decides.
	var b bytes.Buffer
	b.Grow(int(max(0, min(o.Size(), maxGrow))))
	if _, err := b.ReadFrom(r); err != nil {
		return nil, err
	}
	if int64(b.Len()) != o.Size() {
		return nil, fmt.Errorf("it holds %d bytes, not the %d its header says", b.Len(), o.Size())
	}
	return b.Bytes(), nil
}

// entryHeader is a pack entry's header: the type in bits 4-6 of the first
// byte with the size's low four bits, then seven bits of size a byte, the
// top bit saying another byte follows.
func entryHeader(t plumbing.ObjectType, size int64) []byte {
	b := []byte{byte(t)<<4 | byte(size&0x0f)}
	for size >>= 4; size > 0; size >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
	}
	return b
}
