package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// Layout: renders/<k[:2]>/<k>/<d>, where k digests the build identity, the
// Renderer's options and the directory (with the origins flag), and d the
// rendering's dependency list. A lookup reads the few files of one
// directory. Every file is written whole or not at all and checked when
// read (internal/cachefile), so a damaged one is a miss. Nothing here is ever an error: a cache that cannot
// be read or written only costs a build.
const (
	diskFormat = "vectorflow render cache 1\n"
	// diskMaxAge drops renderings no process used for this long.
	diskMaxAge = 30 * 24 * time.Hour
	// diskSweepEvery is how often one process walks the cache to drop old entries.
	diskSweepEvery = 24 * time.Hour
	// diskMaxEntry refuses to read an entry larger than this (a damaged
	// length would otherwise cost memory).
	diskMaxEntry = 64 << 20
)

type diskCache struct {
	root   string // <CacheDir>/renders
	prefix string // build identity and options, part of every key
	now    func() time.Time
	swept  sync.Once // one sweep per process at most
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

// folder is where the renderings of one directory (key) live.
func (d *diskCache) folder(key string) string {
	sum := sha256.Sum256([]byte(d.prefix + "\x00" + key))
	k := hex.EncodeToString(sum[:])
	return filepath.Join(d.root, k[:2], k)
}

// lookup returns a rendering of key whose dependencies hold in tree.
func (d *diskCache) lookup(tree repofs.Tree, key string) (*rendering, bool) {
	folder := d.folder(key)
	entries, err := os.ReadDir(folder)
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue // a write under way
		}
		r, ok := d.readEntry(filepath.Join(folder, e.Name()), key)
		if !ok || !depsHold(tree, r.deps) {
			continue
		}
		return r, true
	}
	return nil, false
}

// store writes a rendering, keeps at most maxEntriesPerDir per directory
// (the most recently used), and now and then drops entries nobody used for
// diskMaxAge.
func (d *diskCache) store(key string, r *rendering) {
	folder := d.folder(key)
	if err := cachefile.Write(filepath.Join(folder, entryName(r.deps)), diskFormat, encodeEntry(key, r)); err != nil {
		return
	}
	d.trim(folder)
	d.swept.Do(d.sweep)
}

// entryName digests a dependency list: one file per distinct list, so two
// processes storing the same rendering write the same file.
func entryName(deps []dep) string {
	h := sha256.New()
	for _, dp := range deps {
		fmt.Fprintf(h, "%d %q %q\n", dp.kind, dp.name, dp.hash)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// trim keeps the maxEntriesPerDir most recently used entries of a folder.
func (d *diskCache) trim(folder string) {
	entries, err := os.ReadDir(folder)
	if err != nil || len(entries) <= maxEntriesPerDir {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var all []aged
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !strings.HasPrefix(e.Name(), ".") {
			all = append(all, aged{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return b.mod.Compare(a.mod) })
	for _, a := range all[min(len(all), maxEntriesPerDir):] {
		_ = os.Remove(filepath.Join(folder, a.name))
	}
}

// sweep drops entries unused for diskMaxAge, and temporary files a crash
// left, at most once a day across processes (a stamp file says when).
func (d *diskCache) sweep() {
	cachefile.Sweep(d.root, diskMaxAge, diskSweepEvery, d.now())
}

// An entry's body is the key, the dependencies and the output, each
// length-prefixed (cachefile adds the format line and checksum).
func encodeEntry(key string, r *rendering) []byte {
	var b bytes.Buffer
	putBytes(&b, []byte(key))
	putUint(&b, uint64(len(r.deps)))
	for _, dp := range r.deps {
		b.WriteByte(byte(dp.kind))
		putBytes(&b, []byte(dp.name))
		putBytes(&b, []byte(dp.hash))
	}
	putBytes(&b, r.out)
	return b.Bytes()
}

func putUint(b *bytes.Buffer, n uint64) { b.Write(binary.AppendUvarint(nil, n)) }

func putBytes(b *bytes.Buffer, p []byte) {
	putUint(b, uint64(len(p)))
	b.Write(p)
}

var errBadEntry = errors.New("damaged cache entry")

// readEntry reads an entry of key; anything unexpected is a miss.
func (d *diskCache) readEntry(file, key string) (*rendering, bool) {
	body, ok := cachefile.Read(file, diskFormat, diskMaxEntry, d.now())
	if !ok {
		return nil, false
	}
	r, err := decodeEntry(body, key)
	return r, err == nil
}

func decodeEntry(rest []byte, key string) (*rendering, error) {
	next := func() ([]byte, error) {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, errBadEntry
		}
		p := rest[w : w+int(n)]
		rest = rest[w+int(n):]
		return p, nil
	}
	k, err := next()
	if err != nil || string(k) != key {
		return nil, errBadEntry
	}
	count, w := binary.Uvarint(rest)
	if w <= 0 || count > uint64(len(rest)) {
		return nil, errBadEntry
	}
	rest = rest[w:]
	r := &rendering{deps: make([]dep, 0, count)}
	for i := uint64(0); i < count; i++ {
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
		r.deps = append(r.deps, dep{name: string(name), kind: kind, hash: string(hash)})
	}
	out, err := next()
	if err != nil || len(rest) != 0 {
		return nil, errBadEntry
	}
	return newRendering(key, r.deps, slices.Clone(out)), nil
}
