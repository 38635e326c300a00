package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
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
// Layout: renders/<k[:2]>/<k>.render, where k digests the build identity,
// the Renderer's options and the directory (with the origins flag). One
// file holds every kept rendering of the directory, most recently used
// first, at most maxEntriesPerDir: a lookup is one open (a miss, one
// failed open), a store one read and one atomic write into a prefix
// directory that exists after the first write (no directory per key, no
// listing). The file is written whole or not at all and checked when read
// (internal/cachefile), so a damaged one is a miss. Two processes storing
// renderings of one directory at once may each drop the other's: a build
// more later, never a wrong rendering. Nothing here is ever an error: a
// cache that cannot be read or written only costs a build.
const (
	// diskFormat 2: one file per directory (1 had a folder per directory,
	// a file per rendering; such entries are never read, and swept by age).
	diskFormat = "vectorflow render cache 2\n"
	// diskMaxAge drops renderings no process used for this long.
	diskMaxAge = 30 * 24 * time.Hour
	// diskSweepEvery is how often one process walks the cache to drop old entries.
	diskSweepEvery = 24 * time.Hour
	// diskMaxEntry refuses to read a file larger than this (a damaged
	// length would otherwise cost memory), and bounds what store writes.
	diskMaxEntry = 64 << 20
)

type diskCache struct {
	root   string // <CacheDir>/renders
	prefix string // build identity and options, part of every key
	now    func() time.Time
	swept  sync.Once // one sweep per process at most
	// files serialises the read-and-write of one directory's file within
	// the process, so concurrent builds of a directory keep each other's
	// renderings (striped by the key's first digest byte).
	files [64]sync.Mutex
}

func newDiskCache(cacheDir string, opts Options) *diskCache {
	if cacheDir == "" {
		return nil
	}
	l := opts.Limits.WithDefaults()
	prefix := fmt.Sprintf("%s\nremote %t\nlimits %d %d %d %d %d\n", buildid.String(), opts.AllowRemoteBases,
		l.MaxFileSize, l.MaxRepositorySize, l.MaxMappingKeys, l.MaxAliasNodes, l.MaxMappingWork)
	return &diskCache{root: filepath.Join(cacheDir, "renders"), prefix: prefix, now: time.Now}
}

// file is where the renderings of one directory (key) live, and the lock
// its read-and-write takes.
func (d *diskCache) file(key string) (string, *sync.Mutex) {
	sum := sha256.Sum256([]byte(d.prefix + "\x00" + key))
	k := hex.EncodeToString(sum[:])
	return filepath.Join(d.root, k[:2], k+".render"), &d.files[int(sum[0])%len(d.files)]
}

// lookup returns a rendering of key whose dependencies hold in tree. One
// found behind others is moved to the front, so the bound drops the least
// recently used.
func (d *diskCache) lookup(tree repofs.Tree, key string) (*rendering, bool) {
	file, _ := d.file(key)
	for i, r := range d.read(file, key) {
		if !depsHold(tree, r.deps) {
			continue
		}
		if i > 0 {
			d.store(key, r)
		}
		return r, true
	}
	return nil, false
}

// store puts a rendering first in its directory's file, keeping at most
// maxEntriesPerDir, and now and then drops files nobody used for
// diskMaxAge.
func (d *diskCache) store(key string, r *rendering) {
	if r.size > diskMaxEntry/2 {
		return // never read back
	}
	file, mu := d.file(key)
	mu.Lock()
	kept := d.read(file, key)
	if len(kept) == 0 || !slices.Equal(kept[0].deps, r.deps) {
		_ = cachefile.Write(file, diskFormat, encodeEntries(key, withFirst(kept, r)))
	}
	mu.Unlock()
	d.swept.Do(d.sweep)
}

// withFirst puts r before the renderings kept, drops one of the same
// dependencies, and keeps at most maxEntriesPerDir and diskMaxEntry bytes.
func withFirst(kept []*rendering, r *rendering) []*rendering {
	all := []*rendering{r}
	size := r.size
	for _, k := range kept {
		if len(all) == maxEntriesPerDir || size+k.size > diskMaxEntry/2 {
			break
		}
		if !slices.Equal(k.deps, r.deps) {
			all = append(all, k)
			size += k.size
		}
	}
	return all
}

// sweep drops entries unused for diskMaxAge, and temporary files a crash
// left, at most once a day across processes (a stamp file says when).
func (d *diskCache) sweep() {
	cachefile.Sweep(d.root, diskMaxAge, diskSweepEvery, d.now())
}

// read returns the renderings in file, most recently used first; a file
// missing, damaged or of another key holds none.
func (d *diskCache) read(file, key string) []*rendering {
	body, ok := cachefile.Read(file, diskFormat, diskMaxEntry, d.now())
	if !ok {
		return nil
	}
	all, err := decodeEntries(body, key)
	if err != nil {
		return nil
	}
	return all
}

// A file's body is the key, then the number of renderings and each
// one's dependencies and output, all length-prefixed (cachefile adds the
// format line and checksum).
func encodeEntries(key string, all []*rendering) []byte {
	var b bytes.Buffer
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

func putUint(b *bytes.Buffer, n uint64) { b.Write(binary.AppendUvarint(nil, n)) }

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
