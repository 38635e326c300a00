package render

import (
	"container/list"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// DefaultCacheBytes bounds the render cache when Options.CacheBytes is zero:
// room for roughly 10,000 typical overlays (a few KiB each) plus their keys.
const DefaultCacheBytes = 64 << 20

// maxEntriesPerDir keeps lookups cheap when a directory keeps changing:
// older renderings of the same directory are dropped first.
const maxEntriesPerDir = 8

// Stats counts cache activity since the Renderer was made.
type Stats struct {
	Hits uint64 // builds answered from the cache
	// DiskHits are the Hits found in the on-disk cache (Options.CacheDir),
	// rendered by an earlier Renderer or process.
	DiskHits uint64
	Misses   uint64 // builds that ran kustomize
	Entries  int    // renderings held
	Bytes    int64  // their accounted size, at most the bound
}

// renderCache maps a directory to renderings, each valid for every tree in
// which the facts it depended on (file hashes, existence) still hold. That
// makes the key the content of the overlay and everything it loads, whatever
// commit or folder it came from.
type renderCache struct {
	mu       sync.Mutex
	max      int64
	bytes    int64
	lru      *list.List // of *rendering, most recent at the front
	byDir    map[string][]*list.Element
	hits     uint64
	diskHits uint64
	misses   uint64
	disk     *diskCache // nil: memory only
}

type rendering struct {
	dir  string
	deps []dep // sorted by name
	out  []byte
	// err is a build's failure: the same reads fail the same way. Only
	// memory holds failures.
	err error
	// remote is a build that read a remote base: not cached, as its
	// dependencies do not say what it read.
	remote bool
	size   int64
	// images and imagesErr are what Images read from an output, in the
	// images cache (whose renderings hold no output).
	images    []overlays.RenderedImage
	imagesErr error
	// checks are deps as a lookup checks them: each directory whose every
	// entry is a dependency, none a link, is one dependency on its tree
	// hash, found in an immutable tree the deps held in. Overlays are
	// checked on every pass, and this is a lookup or two where there were
	// nine. nil until then.
	checks atomic.Pointer[[]dep]
}

func newRenderCache(max int64, disk *diskCache) *renderCache {
	if max <= 0 {
		max = DefaultCacheBytes
	}
	return &renderCache{max: max, lru: list.New(), byDir: map[string][]*list.Element{}, disk: disk}
}

// newRendering accounts a rendering's size; deps must be sorted by name.
func newRendering(dir string, deps []dep, out []byte) *rendering {
	r := &rendering{dir: dir, deps: deps, out: out, size: int64(len(out)) + int64(len(dir)) + 128}
	for _, d := range deps {
		r.size += int64(len(d.name)+len(d.hash)) + 48
	}
	return r
}

// lookup returns a rendering of dir whose dependencies are unchanged in tree.
// Checking runs outside the lock: a tree may be on disk.
func (c *renderCache) lookup(tree repofs.Tree, dir string) (*rendering, bool) {
	c.mu.Lock()
	candidates := make([]*rendering, 0, len(c.byDir[dir]))
	for _, el := range c.byDir[dir] {
		candidates = append(candidates, el.Value.(*rendering))
	}
	c.mu.Unlock()
	for _, r := range candidates {
		if !r.holds(tree) {
			continue
		}
		c.mu.Lock()
		c.hits++
		for _, el := range c.byDir[dir] {
			if el.Value == r {
				c.lru.MoveToFront(el)
			}
		}
		c.mu.Unlock()
		return r, true
	}
	if c.disk != nil {
		if r, ok := c.disk.lookup(tree, dir); ok {
			c.mu.Lock()
			c.hits++
			c.diskHits++
			c.add(r)
			c.mu.Unlock()
			return r, true
		}
	}
	c.mu.Lock()
	c.misses++
	c.mu.Unlock()
	return nil, false
}

// holds says whether r's dependencies hold in tree: its checks when they
// do, else its deps, from which new checks are made. Only a commit's tree
// is checked by its directories' hashes: a directory on disk is hashed by
// reading everything below it.
func (r *rendering) holds(tree repofs.Tree) bool {
	fixed := immutable(tree)
	if checks := r.checks.Load(); fixed && checks != nil && depsHold(tree, *checks) {
		return true
	}
	if !depsHold(tree, r.deps) {
		return false
	}
	if fixed {
		checks := compactDeps(tree, r.deps)
		r.checks.Store(&checks)
	}
	return true
}

// compactDeps are deps, which hold in tree, with the deps directly in each
// directory whose every entry is one of them, none a link, replaced by one
// on the directory's hash in tree. The same hash is the same entries, so
// those deps hold wherever it does. A directory with an entry that is no
// dependency stays as its deps, so that a README edited beside an overlay
// does not send every lookup back to the deps.
func compactDeps(tree repofs.Tree, deps []dep) []dep {
	byDir := map[string][]dep{}
	var dirs []string
	for _, d := range deps {
		dir := path.Dir(d.name)
		if _, ok := byDir[dir]; !ok {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], d)
	}
	trees := map[string]string{}
	for _, dir := range dirs {
		if h, ok := dirHolds(tree, dir, byDir[dir]); ok {
			trees[dir] = h
		}
	}
	out := make([]dep, 0, len(deps))
	for _, dir := range dirs {
		if h, ok := trees[dir]; ok {
			out = append(out, dep{name: dir, kind: depTree, hash: h})
			continue
		}
		for _, d := range byDir[dir] {
			if _, ok := trees[d.name]; ok && d.kind == depDir {
				continue // a tree's hash is a directory's
			}
			out = append(out, d)
		}
	}
	return out
}

// dirHolds is dir's hash in tree when every entry of dir is one of deps
// (the deps directly in dir) and none is a link.
func dirHolds(tree repofs.Tree, dir string, deps []dep) (string, bool) {
	if dir == "." {
		return "", false // the root changes with every commit
	}
	entries, err := tree.ReadDir(dir)
	if err != nil {
		return "", false
	}
	present := 0
	for _, d := range deps {
		if d.kind != depAbsent {
			present++
		}
	}
	if len(entries) != present {
		return "", false
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			return "", false
		}
		i, found := slices.BinarySearchFunc(deps, path.Join(dir, e.Name()), func(d dep, name string) int { return strings.Compare(d.name, name) })
		if !found || deps[i].kind == depAbsent {
			return "", false
		}
	}
	h, err := tree.Hash(dir)
	return h, err == nil
}

func depsHold(tree repofs.Tree, deps []dep) bool {
	for _, d := range deps {
		switch d.kind {
		case depHash, depTree:
			h, err := tree.Hash(d.name)
			if err != nil || h != d.hash {
				return false
			}
		case depAbsent:
			if _, err := tree.Stat(d.name); !errors.Is(err, fs.ErrNotExist) {
				return false
			}
		default:
			info, err := tree.Stat(d.name)
			if err != nil || info.IsDir() != (d.kind == depDir) {
				return false
			}
		}
	}
	return true
}

// store adds a rendering, in memory and, when persist is set, on disk. A
// rendering of a tree that may change while it is read (a directory on
// disk) is not persisted: its recorded hashes may be newer than what the
// build read.
func (c *renderCache) store(r *rendering, persist bool) {
	c.mu.Lock()
	c.add(r)
	c.mu.Unlock()
	if c.disk != nil && persist {
		c.disk.store(r.dir, r)
	}
}

// add keeps a rendering in memory and evicts the least recently used
// beyond the bound; c.mu must be held.
func (c *renderCache) add(r *rendering) {
	if r.size > c.max {
		return
	}
	dir := r.dir
	for _, el := range c.byDir[dir] {
		if slices.Equal(el.Value.(*rendering).deps, r.deps) {
			return // a concurrent build stored it first
		}
	}
	if len(c.byDir[dir]) >= maxEntriesPerDir {
		c.remove(c.byDir[dir][0])
	}
	el := c.lru.PushFront(r)
	c.byDir[dir] = append(c.byDir[dir], el)
	c.bytes += r.size
	for c.bytes > c.max {
		c.remove(c.lru.Back())
	}
}

// remove drops one rendering; c.mu must be held.
func (c *renderCache) remove(el *list.Element) {
	r := el.Value.(*rendering)
	c.lru.Remove(el)
	c.bytes -= r.size
	els := c.byDir[r.dir]
	i := slices.Index(els, el)
	els = slices.Delete(els, i, i+1)
	if len(els) == 0 {
		delete(c.byDir, r.dir)
	} else {
		c.byDir[r.dir] = els
	}
}

func (c *renderCache) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hits: c.hits, DiskHits: c.diskHits, Misses: c.misses, Entries: c.lru.Len(), Bytes: c.bytes}
}
