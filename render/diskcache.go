package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/buildid"
	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// The on-disk render cache lets a new process find what an earlier one
// rendered. It holds the same renderings as the in-memory cache, and uses
// them the same way: a rendering is valid in every tree where the facts it
// depended on still hold, so each is checked against the tree before use.
//
// Layout: renders/<b>.bucket, diskBuckets files. A directory's key k
// digests the build identity, the Renderer's options and the directory
// (with the origins flag); its first byte picks the bucket. A bucket holds,
// per key, the key's renderings (most recently used first, at most
// maxEntriesPerDir) and when it was last used. Creating a file is what a
// write costs most (a new inode: 0.2-0.7 ms of CPU on a small VM, more
// than the rest of a store), so writes go to a few files, not one per
// rendering: a store rewrites its bucket at once, or, while a caller defers
// writes (deferWrites: a batch of builds, as BuildAll and validate run),
// waits for the batch's end, which rewrites each changed bucket once.
// While writes are deferred a bucket read is kept for the batch's later
// lookups; otherwise a lookup reads the bucket (a cold cache: one failed
// open). A bucket is written whole or not at all and checked when read
// (internal/cachefile), so a damaged one is a miss. A rewrite reads the
// bucket again first and keeps what other processes added; two processes
// rewriting one bucket at the same instant may drop each other's new
// renderings: a build more later, never a wrong rendering. Nothing here is
// ever an error: a cache that cannot be read or written only costs builds.
const (
	// diskFormat 2: buckets (1 had a folder per directory and a file per
	// rendering; such folders are never read, and swept by age).
	diskFormat = "vectorflow render cache 2\n"
	// diskBuckets is how many files share the renderings: few enough that
	// a cold batch of 1,000 builds creates at most this many files, enough
	// that a lookup outside a batch reads a small part of the cache.
	diskBuckets = 64
	// diskMaxAge drops renderings no process used for this long: a key at
	// a bucket's rewrite, a whole bucket at the daily sweep.
	diskMaxAge = 30 * 24 * time.Hour
	// diskSweepEvery is how often one process walks the cache to drop old files.
	diskSweepEvery = 24 * time.Hour
	// diskMaxEntry bounds a bucket: larger ones are not read (a damaged
	// length would otherwise cost memory), and a rewrite drops the least
	// recently used keys to stay within half of it.
	diskMaxEntry = 64 << 20
	// diskMaxDeferred bounds the renderings a batch holds back: beyond it
	// the changed buckets are written before the batch ends.
	diskMaxDeferred = 64 << 20
)

type diskCache struct {
	root    string // <CacheDir>/renders
	prefix  string // build identity and options, part of every key
	now     func() time.Time
	swept   sync.Once // one sweep per process at most
	buckets [diskBuckets]bucket
	files   [diskBuckets]string // the buckets' file names

	mu          sync.Mutex
	deferring   int   // open deferWrites batches
	deferred    int64 // bytes of renderings changed and not yet written
	maxDeferred int64 // beyond it, a batch writes early (diskMaxDeferred)
}

// A bucket's view is what the process knows of its file: read once and
// kept while writes are deferred, with the changes not yet written.
type bucket struct {
	mu      sync.Mutex
	view    map[keyDigest]*slot // nil: not read (or dropped after a write)
	changed bool                // view holds changes the file lacks
}

type keyDigest [sha256.Size]byte

// slot is one key's renderings in a bucket: as read (record, decoded on
// use), or as this process changed them (kept, sharing their output with
// the in-memory cache until written). A slot is never changed, only
// replaced, so it may be read without the bucket's lock.
type slot struct {
	record []byte       // encodeEntries of the key's renderings
	kept   []*rendering // not nil: changed, to be written
	used   int64        // Unix seconds the key was last stored or found
}

func (s *slot) renderings(key string) ([]*rendering, error) {
	if s.kept != nil {
		return s.kept, nil
	}
	return decodeEntries(s.record, key)
}

func newDiskCache(cacheDir string, opts Options) *diskCache {
	if cacheDir == "" {
		return nil
	}
	l := opts.Limits.WithDefaults()
	prefix := fmt.Sprintf("%s\nremote %t\nlimits %d %d %d %d %d\n", buildid.String(), opts.AllowRemoteBases,
		l.MaxFileSize, l.MaxRepositorySize, l.MaxMappingKeys, l.MaxAliasNodes, l.MaxMappingWork)
	d := &diskCache{root: filepath.Join(cacheDir, "renders"), prefix: prefix, now: time.Now, maxDeferred: diskMaxDeferred}
	for i := range d.files {
		d.files[i] = filepath.Join(d.root, fmt.Sprintf("%02x.bucket", i))
	}
	return d
}

// locate digests a key and names its bucket and the bucket's file.
func (d *diskCache) locate(key string) (keyDigest, *bucket, string) {
	k := keyDigest(sha256.Sum256([]byte(d.prefix + "\x00" + key)))
	i := int(k[0]) % diskBuckets
	return k, &d.buckets[i], d.files[i]
}

// lookup returns a rendering of key whose dependencies hold in tree. One
// found behind others moves to the front, so the bound drops the least
// recently used; a key found is marked used (written at most once per
// cachefile.TouchAfter), so the age limit keeps it.
func (d *diskCache) lookup(tree repofs.Tree, key string) (*rendering, bool) {
	k, b, file := d.locate(key)
	b.mu.Lock()
	s := d.viewOf(b, file)[k]
	b.mu.Unlock()
	if s == nil {
		return nil, false
	}
	all, err := s.renderings(key)
	if err != nil {
		return nil, false // another key of the same digest, or damage
	}
	for i, r := range all {
		if !depsHold(tree, r.deps) {
			continue
		}
		if i > 0 || d.now().Unix()-s.used > int64(cachefile.TouchAfter/time.Second) {
			d.update(key, func(kept []*rendering) []*rendering { return withFirst(kept, r) })
		}
		return r, true
	}
	return nil, false
}

// store puts a rendering first among its key's, keeping at most
// maxEntriesPerDir.
func (d *diskCache) store(key string, r *rendering) {
	if r.size > diskMaxEntry/2 {
		return // never read back
	}
	d.update(key, func(kept []*rendering) []*rendering { return withFirst(kept, r) })
}

// update replaces key's renderings by edit's result, marks the key used,
// and writes the bucket unless writes are deferred.
func (d *diskCache) update(key string, edit func(kept []*rendering) []*rendering) {
	k, b, file := d.locate(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	view := d.viewOf(b, file)
	var kept []*rendering
	old := view[k]
	if old != nil {
		kept, _ = old.renderings(key)
	}
	s := &slot{kept: edit(kept), used: d.now().Unix()}
	view[k] = s
	b.view, b.changed = view, true
	// Whether to write is read under b.mu: a batch ending writes each
	// bucket under its lock after it stops deferring, so it sees this
	// change, or this sees it has ended.
	d.mu.Lock()
	deferring := d.deferring > 0
	d.deferred += slotSize(s) - slotSize(old)
	over := d.deferred > d.maxDeferred
	d.mu.Unlock()
	switch {
	case !deferring:
		d.write(b, file, view) // read just now: no need to read it again
	case over:
		b.mu.Unlock()
		d.writeAll()
		b.mu.Lock()
	}
}

// viewOf returns b's view, reading its file when b has none; kept only
// while writes are deferred. b.mu must be held.
func (d *diskCache) viewOf(b *bucket, file string) map[keyDigest]*slot {
	if b.view != nil {
		return b.view
	}
	view := readBucket(file, d.now())
	d.mu.Lock()
	if d.deferring > 0 {
		b.view = view
	}
	d.mu.Unlock()
	return view
}

// deferWrites holds the bucket writes of the stores that follow until
// the returned function is called (by every caller that deferred), which
// writes each changed bucket once.
func (d *diskCache) deferWrites() (release func()) {
	d.mu.Lock()
	d.deferring++
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			d.deferring--
			last := d.deferring == 0
			d.mu.Unlock()
			if last {
				d.writeAll()
			}
		})
	}
}

// writeAll writes every changed bucket and drops the views.
func (d *diskCache) writeAll() {
	for i := range d.buckets {
		b := &d.buckets[i]
		b.mu.Lock()
		if b.changed {
			d.write(b, d.files[i], nil)
		}
		b.view = nil
		b.mu.Unlock()
	}
}

// write merges b's changed keys into what its file holds now (read again
// unless base is what it held a moment ago), drops keys unused for
// diskMaxAge and, beyond the size bound, the least recently used, and
// writes the file. b.mu must be held.
func (d *diskCache) write(b *bucket, file string, base map[keyDigest]*slot) {
	now := d.now()
	merged := base
	if merged == nil {
		merged = readBucket(file, now)
	}
	written := int64(0)
	for k, s := range b.view {
		if s.kept == nil {
			continue
		}
		written += slotSize(s)
		// Ours first, then what another process stored meanwhile.
		key, all, used := s.kept[0].dir, slices.Clone(s.kept), s.used
		if theirs := merged[k]; theirs != nil && theirs.kept == nil {
			if other, err := decodeEntries(theirs.record, key); err == nil {
				for _, r := range other {
					all = withLast(all, r)
				}
				used = max(used, theirs.used)
			}
		}
		merged[k] = &slot{record: encodeEntries(key, all), used: used}
	}
	// A failed write is not retried: the changes cost builds, later.
	_ = cachefile.WriteFunc(file, diskFormat, func(w io.Writer) error { return writeBucket(w, merged, now) })
	b.view, b.changed = nil, false
	d.mu.Lock()
	d.deferred -= written
	if d.deferred < 0 {
		d.deferred = 0
	}
	d.mu.Unlock()
	d.swept.Do(d.sweep)
}

// withFirst puts r before the renderings kept, drops one of the same
// dependencies, and keeps at most maxEntriesPerDir.
func withFirst(kept []*rendering, r *rendering) []*rendering {
	all := []*rendering{r}
	for _, k := range kept {
		all = withLast(all, k)
	}
	return all
}

// slotSize is what a changed slot holds in memory, at most; nil or
// unchanged, nothing.
func slotSize(s *slot) int64 {
	if s == nil {
		return 0
	}
	n := int64(0)
	for _, r := range s.kept {
		n += r.size
	}
	return n
}

// withLast appends r unless one of the same dependencies is there or the
// bound is reached.
func withLast(all []*rendering, r *rendering) []*rendering {
	if len(all) == maxEntriesPerDir || slices.ContainsFunc(all, func(a *rendering) bool { return slices.Equal(a.deps, r.deps) }) {
		return all
	}
	return append(all, r)
}

// sweep drops buckets unused for diskMaxAge, the format 1 folders, and
// temporary files a crash left, at most once a day across processes (a
// stamp file says when).
func (d *diskCache) sweep() {
	cachefile.Sweep(d.root, diskMaxAge, diskSweepEvery, d.now())
}

// A bucket's body is the number of keys, then per key its digest, when
// it was last used and its record, length-prefixed (cachefile adds the
// format line and checksum). Keys unused for diskMaxAge are left out, and
// the least recently used beyond half of diskMaxEntry. It is written as
// it goes: a batch's end writes the whole cache, which need not sit in
// memory twice.
func writeBucket(w io.Writer, view map[keyDigest]*slot, now time.Time) error {
	type entry struct {
		k keyDigest
		s *slot
	}
	all := make([]entry, 0, len(view))
	for k, s := range view {
		if now.Unix()-s.used <= int64(diskMaxAge/time.Second) {
			all = append(all, entry{k, s})
		}
	}
	// Most recently used first, then by digest: the same view gives the
	// same bytes.
	slices.SortFunc(all, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.s.used, a.s.used), bytes.Compare(a.k[:], b.k[:]))
	})
	size := 0
	for i, e := range all {
		if size += len(e.s.record) + 64; size > diskMaxEntry/2 {
			all = all[:i]
			break
		}
	}
	var b bytes.Buffer
	putUint(&b, uint64(len(all)))
	for _, e := range all {
		b.Write(e.k[:])
		putUint(&b, uint64(e.s.used))
		putUint(&b, uint64(len(e.s.record)))
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
		b.Reset()
		if _, err := w.Write(e.s.record); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes()) // the count, when there is no key
	return err
}

// readBucket reads a bucket file; one missing or damaged holds no key.
func readBucket(file string, now time.Time) map[keyDigest]*slot {
	view := map[keyDigest]*slot{}
	body, ok := cachefile.Read(file, diskFormat, diskMaxEntry, now)
	if !ok {
		return view
	}
	n, w := binary.Uvarint(body)
	if w <= 0 || n > uint64(len(body)) {
		return view
	}
	rest := body[w:]
	for range n {
		if len(rest) < len(keyDigest{}) {
			return map[keyDigest]*slot{}
		}
		k := keyDigest(rest[:len(keyDigest{})])
		rest = rest[len(keyDigest{}):]
		used, w := binary.Uvarint(rest)
		if w <= 0 {
			return map[keyDigest]*slot{}
		}
		rest = rest[w:]
		size, w := binary.Uvarint(rest)
		if w <= 0 || size > uint64(len(rest)-w) {
			return map[keyDigest]*slot{}
		}
		view[k] = &slot{record: rest[w : w+int(size)], used: int64(used)}
		rest = rest[w+int(size):]
	}
	if len(rest) != 0 {
		return map[keyDigest]*slot{}
	}
	return view
}

// A file's body is the key, then the number of renderings and each
// one's dependencies and output, all length-prefixed (cachefile adds the
// format line and checksum).
func encodeEntries(key string, all []*rendering) []byte {
	var b bytes.Buffer
	size := len(key) + 2*binary.MaxVarintLen64
	for _, r := range all {
		size += int(r.size) // more than its bytes below
	}
	b.Grow(size)
	putBytes(&b, []byte(key))
	putUint(&b, uint64(len(all)))
	for _, r := range all {
		putUint(&b, uint64(len(r.deps)))
		for _, dp := range r.deps {
			b.WriteByte(byte(dp.kind))
			putBytes(&b, []byte(dp.name))
			putBytes(&b, []byte(dp.hash))
		}
		putBytes(&b, r.out)
	}
	return b.Bytes()
}

func putUint(b *bytes.Buffer, n uint64) {
	var buf [binary.MaxVarintLen64]byte
	b.Write(binary.AppendUvarint(buf[:0], n))
}

func putBytes(b *bytes.Buffer, p []byte) {
	putUint(b, uint64(len(p)))
	b.Write(p)
}

var errBadEntry = errors.New("damaged cache entry")

// decodeEntries reads a file's body; a body of another key, or with
// anything left over or missing, is damaged.
func decodeEntries(rest []byte, key string) ([]*rendering, error) {
	next := func() ([]byte, error) {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, errBadEntry
		}
		p := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		return p, nil
	}
	// count reads a number of items each at least one byte long.
	count := func() (uint64, error) {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return 0, errBadEntry
		}
		rest = rest[w:]
		return n, nil
	}
	k, err := next()
	if err != nil || string(k) != key {
		return nil, errBadEntry
	}
	renderings, err := count()
	if err != nil || renderings == 0 || renderings > maxEntriesPerDir {
		return nil, errBadEntry
	}
	all := make([]*rendering, 0, renderings)
	for range renderings {
		n, err := count()
		if err != nil {
			return nil, err
		}
		deps := make([]dep, 0, n)
		for range n {
			if len(rest) == 0 || depKind(rest[0]) > depHash {
				return nil, errBadEntry
			}
			kind := depKind(rest[0])
			rest = rest[1:]
			name, err := next()
			if err != nil {
				return nil, err
			}
			hash, err := next()
			if err != nil {
				return nil, err
			}
			deps = append(deps, dep{name: string(name), kind: kind, hash: string(hash)})
		}
		out, err := next()
		if err != nil {
			return nil, err
		}
		all = append(all, newRendering(key, deps, slices.Clone(out)))
	}
	if len(rest) != 0 {
		return nil, errBadEntry
	}
	return all, nil
}
