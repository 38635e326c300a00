package source

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
	"github.com/vectorflow-dev/vectorflow/internal/gittree"
)

// The on-disk object stores live under <cache dir>/repos/<key>/, one per
// repository URL (whatever the branch): git/ is a bare repository holding
// the fetched objects and refs, lock is flocked by whoever fetches into it,
// and last-used is touched by every process that opens or fetches it.
const (
	storesDir     = "repos"
	storeGitDir   = "git"
	storeLockFile = "lock"
	storeUsedFile = "last-used"

	// storeIdleLimit is how long a store may go unused before any process
	// opening the cache removes it: disk stays bounded by what is in use.
	storeIdleLimit = 30 * 24 * time.Hour

	// storeObjectCache bounds the decoded objects kept in memory per store;
	// the objects themselves stay on disk.
	storeObjectCache = 8 * cache.MiByte
	// storeLargeObject is the size above which a blob is read from disk as
	// it is consumed instead of being loaded whole.
	storeLargeObject = 1 << 20
	// storeOpenPacks bounds the pack files kept open per store.
	storeOpenPacks = 32
)

// OpenCached is Open over an on-disk object store under cacheDir, kept
// across processes: the first fetch of a process announces the objects an
// earlier one fetched, so only new objects cross the wire. Processes may
// share cacheDir. A store found unreadable is removed and fetched afresh,
// with a warning on standard error. An empty cacheDir keeps the objects in
// memory, as Open does.
func OpenCached(url string, auth Auth, cacheDir string) (*Repository, error) {
	return openCached(url, auth, cacheDir, os.Stderr, time.Now())
}

func openCached(url string, auth Auth, cacheDir string, warnings io.Writer, now time.Time) (*Repository, error) {
	if cacheDir == "" {
		return Open(url, auth)
	}
	remote, method, err := endpoint(url, auth)
	if err != nil {
		return nil, err
	}
	reposDir := filepath.Join(cacheDir, storesDir)
	removeIdleStores(reposDir, now)
	d := &diskStore{url: url, dir: filepath.Join(reposDir, storeKey(remote)), warnings: warnings,
		looseLimit: compactLooseLimit, looseAge: compactLooseAge, writtenLimit: compactWrittenLimit, packLimit: compactPackLimit}
	err = d.open()
	var repo *git.Repository
	if err == nil {
		repo, err = git.Open(d.storer, nil)
	}
	if err != nil {
		// A cache that cannot be written (a read-only home in a container)
		// costs speed, never the command.
		fmt.Fprintf(warnings, "warning: the object cache %s cannot be used, keeping %s in memory: %v\n", d.dir, RedactURL(url), RedactError(err))
		return Open(url, auth)
	}
	if err := addRemote(repo, url, remote); err != nil {
		return nil, err
	}
	return &Repository{url: url, auth: method, repo: repo, store: d}, nil
}

// storeKey names the store of a remote: credentials never reach the disk,
// and one store serves every branch of the repository.
func storeKey(remote string) string {
	clean, _, _, _ := SplitURLCredentials(remote)
	sum := sha256.Sum256([]byte(clean))
	return hex.EncodeToString(sum[:8])
}

// diskStore is one repository's on-disk object store.
type diskStore struct {
	url      string // for messages
	dir      string
	warnings io.Writer
	fs       *filesystem.Storage
	storer   *packStorer
	// looseLimit, looseAge and writtenLimit are compact's:
	// compactLooseLimit, compactLooseAge and compactWrittenLimit, unless a
	// test wants every fetch to compact.
	looseLimit   int
	looseAge     time.Duration
	writtenLimit int64
	// packLimit is how many packs no merge retired a compaction leaves
	// unmerged: compactPackLimit, unless a test wants fewer. unmerged are
	// the packs a merge failed on, which this process does not try again.
	packLimit int
	unmerged  string
	// whole are the commits found whole (holdsWhole), so an unchanged
	// branch is not walked again every pass, and wholeTrees the trees, so
	// a new commit costs a walk of the trees it changed.
	whole, wholeTrees map[plumbing.Hash]bool
	// packedTrees are the trees of wholeTrees whose every object is in a
	// pack; they are kept in storeWholeFile for the next process.
	packedTrees map[plumbing.Hash]bool
	// history are the commits whose every ancestor the store holds
	// (holdsHistory), each true when they are all in packs; those are
	// kept in storeHistoryFile for the next process. One map, not two as
	// for trees: a history has as many commits as the repository.
	history map[plumbing.Hash]bool
	// wholeRead says storeWholeFile and storeHistoryFile were read, once
	// per process.
	wholeRead bool
}

// maxWholeTrees bounds wholeTrees: several times the trees of a
// 10,000-stage repository, a few megabytes.
const maxWholeTrees = 1 << 18

// storeWholeFile, in the store's git directory, names the trees a process
// found whole whose every object is in a pack, and the packs there were,
// so the next process walks only the trees its fetch brought: 30 ms of a
// 0.25 s run --once at 1,000 stages, 0.23 s at 10,000. Only packs vouch
// for a tree: vectorflow removes one only an hour after a merge copied it
// into another (retirePacks), and a pack removed, by a merge or by hand,
// voids the file, so its trees are walked once more. Loose objects are
// removed once packed, so a tree holding one is walked again.
const (
	storeWholeFile   = "vectorflow-whole-trees"
	storeWholeFormat = "vectorflow whole trees 1\n"
)

// storeHistoryFile names, as storeWholeFile does trees, the commits whose
// every ancestor is in a pack, so the next process walks only the history
// its fetch brought.
const (
	storeHistoryFile   = "vectorflow-whole-history"
	storeHistoryFormat = "vectorflow whole history 1\n"
)

// holdsWhole checks that the store holds commit, its tree, every tree
// below and every blob they name, without reading the blobs, and every
// commit of its history.
func (d *diskStore) holdsWhole(repo *git.Repository, commit plumbing.Hash) error {
	if d.whole[commit] {
		return nil
	}
	c, err := repo.CommitObject(commit)
	if err != nil {
		return fmt.Errorf("commit %s: %w", commit, err)
	}
	if !d.wholeRead {
		d.wholeRead = true
		now := time.Now()
		if trees, ok := d.readWholeFile(storeWholeFile, storeWholeFormat, maxWholeTrees, now); ok {
			d.wholeTrees, d.packedTrees = make(map[plumbing.Hash]bool, len(trees)), make(map[plumbing.Hash]bool, len(trees))
			for _, h := range trees {
				d.wholeTrees[h], d.packedTrees[h] = true, true
			}
		}
		if commits, ok := d.readWholeFile(storeHistoryFile, storeHistoryFormat, maxWholeHistory, now); ok {
			d.history = make(map[plumbing.Hash]bool, len(commits))
			for _, h := range commits {
				d.history[h] = true
			}
		}
	}
	if d.wholeTrees == nil || len(d.wholeTrees) > maxWholeTrees {
		d.wholeTrees, d.packedTrees = map[plumbing.Hash]bool{}, map[plumbing.Hash]bool{}
	}
	packedBefore := len(d.packedTrees)
	w := treeWalk{repo: repo, whole: d.wholeTrees, packed: d.packedTrees, inPack: d.inPack}
	if _, err := w.holds(c.TreeHash); err != nil {
		return fmt.Errorf("the tree of commit %s: %w", commit, err)
	}
	if len(d.packedTrees) > packedBefore {
		d.writeWholeFile(storeWholeFile, storeWholeFormat, maxWholeTrees, d.packedTrees)
	}
	if d.history == nil {
		d.history = map[plumbing.Hash]bool{}
	}
	packed, err := d.holdsHistory(repo, commit)
	if err != nil {
		return fmt.Errorf("the history of commit %s: %w", commit, err)
	}
	if packed > 0 {
		d.writeWholeFile(storeHistoryFile, storeHistoryFormat, maxWholeHistory, d.history)
	}
	if len(d.whole) >= 64 {
		d.whole = nil
	}
	if d.whole == nil {
		d.whole = map[plumbing.Hash]bool{}
	}
	d.whole[commit] = true
	return nil
}

// treeWalk checks trees as holdsWhole does, but for the trees in whole,
// adding each tree it found whole, and to packed those whose every object
// inPack says is in a pack.
type treeWalk struct {
	repo          *git.Repository
	whole, packed map[plumbing.Hash]bool
	inPack        func(plumbing.Hash) bool
}

// holds says whether every object below tree is in a pack, or why the
// store does not hold it whole.
func (w treeWalk) holds(tree plumbing.Hash) (packed bool, err error) {
	if w.whole[tree] {
		return w.packed[tree], nil
	}
	raw, err := gittree.Read(w.repo.Storer, tree)
	if err != nil {
		return false, fmt.Errorf("tree %s: %w", tree, err)
	}
	packed = w.inPack(tree)
	for e, err := range gittree.Entries(raw) {
		if err != nil {
			return false, fmt.Errorf("tree %s: %w", tree, err)
		}
		switch {
		case e.Mode == filemode.Dir:
			below, err := w.holds(e.Hash)
			if err != nil {
				return false, err
			}
			packed = packed && below
		case e.Mode == filemode.Submodule: // a commit of another repository
		default:
			if err := w.repo.Storer.HasEncodedObject(e.Hash); err != nil {
				return false, fmt.Errorf("%s (%s): %w", e.Name, e.Hash, err)
			}
			packed = packed && w.inPack(e.Hash)
		}
	}
	w.whole[tree] = true // only once all below is found: a failed walk marks nothing it did not finish
	if packed {
		w.packed[tree] = true
	}
	return packed, nil
}

// inPack says whether one of the packs whose index the store read holds
// h; a pack it has not read yet only costs a walk.
func (d *diskStore) inPack(h plumbing.Hash) bool {
	if d.storer == nil {
		return false
	}
	defer d.storer.readLock()()
	return d.storer.packed(h)
}

// readWholeFile reads the objects file (storeWholeFile or
// storeHistoryFile) names as found whole, at most limit, if every pack it
// names is still there.
func (d *diskStore) readWholeFile(file, format string, limit int, now time.Time) ([]plumbing.Hash, bool) {
	size := len(plumbing.ZeroHash)
	body, ok := cachefile.Read(filepath.Join(d.gitDir(), file), format, int64(limit*size)+1<<20, now)
	if !ok {
		return nil, false
	}
	packs, hashes, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok || len(hashes)%size != 0 || len(hashes)/size > limit {
		return nil, false
	}
	if len(packs) > 0 {
		for _, name := range strings.Split(string(packs), "\n") {
			if name != filepath.Base(name) || !strings.HasPrefix(name, "pack-") {
				return nil, false
			}
			if _, err := os.Stat(filepath.Join(d.gitDir(), "objects", "pack", name)); err != nil {
				return nil, false // removed by hand: its objects are walked again
			}
		}
	}
	out := make([]plumbing.Hash, len(hashes)/size)
	for i := range out {
		copy(out[i][:], hashes[i*size:])
	}
	return out, true
}

// writeWholeFile keeps the objects of found that are true (in packs) in
// file, with the packs there are now, which hold them all: packs are
// only ever added. More than limit would be dropped when read: none is
// written.
func (d *diskStore) writeWholeFile(file, format string, limit int, found map[plumbing.Hash]bool) {
	n := 0
	for _, packed := range found {
		if packed {
			n++
		}
	}
	if n > limit {
		return
	}
	var names []string
	for _, p := range strings.Split(listPacks(d.gitDir()), "\n") {
		if p != "" {
			names = append(names, filepath.Base(p))
		}
	}
	body := make([]byte, 0, 64*len(names)+2+n*len(plumbing.ZeroHash))
	body = append(body, strings.Join(names, "\n")...)
	body = append(body, "\n\n"...)
	for h, packed := range found {
		if packed {
			body = append(body, h[:]...)
		}
	}
	_ = cachefile.Write(filepath.Join(d.gitDir(), file), format, body) // a cache: a miss costs a walk
}

// maxWholeHistory bounds the commits storeHistoryFile keeps (20 MB); a
// longer history is walked again by each process.
const maxWholeHistory = 1 << 20

// holdsHistory checks that the store holds every commit tip descends
// from, adding each to history, true when all below it are in packs, and
// says how many it found so. The readers of a history (the target's
// ratchet, the state branch's trust and holds) need its commits, not
// their trees. A fetch never brings what the store's tips announce, so a
// commit lost below a whole tip would stay lost: this finds it, and the
// store is fetched afresh. The walk is depth first, parents before
// children, without recursion: histories are deep.
func (d *diskStore) holdsHistory(repo *git.Repository, tip plumbing.Hash) (packed int, err error) {
	parents := map[plumbing.Hash][]plumbing.Hash{} // of the commits read and not yet judged
	stack := []plumbing.Hash{tip}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		if _, whole := d.history[h]; whole {
			stack = stack[:len(stack)-1]
			continue
		}
		ps, read := parents[h]
		if read { // every parent above it on the stack is judged by now
			stack = stack[:len(stack)-1]
			inPacks := d.inPack(h)
			for _, p := range ps {
				inPacks = inPacks && d.history[p]
			}
			d.history[h] = inPacks // only once all below is found, as treeWalk
			if inPacks {
				packed++
			}
			delete(parents, h)
			continue
		}
		c, err := object.GetCommit(repo.Storer, h)
		if err != nil {
			return packed, fmt.Errorf("commit %s: %w", h, err)
		}
		parents[h] = c.ParentHashes
		for _, p := range c.ParentHashes {
			if _, whole := d.history[p]; !whole {
				stack = append(stack, p)
			}
		}
	}
	return packed, nil
}

func (d *diskStore) gitDir() string { return filepath.Join(d.dir, storeGitDir) }

// objectStorage reads the Git directory fs with pack files kept open, a
// bounded object cache and large blobs streamed: what the store and a
// repository read in place (openInPlace) both need.
func objectStorage(fs billy.Filesystem) (*filesystem.Storage, cache.Object) {
	objects := cache.NewObjectLRU(storeObjectCache)
	return filesystem.NewStorageWithOptions(bufferedIndexes{fs}, objects,
		filesystem.Options{LargeObjectThreshold: storeLargeObject, MaxOpenDescriptors: storeOpenPacks}), objects
}

// open makes the store ready, creating it or replacing an unreadable one.
func (d *diskStore) open() error {
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	var objects cache.Object
	d.fs, objects = objectStorage(osfs.New(d.gitDir()))
	d.storer = &packStorer{lockedStorer: &lockedStorer{Storer: d.fs, exclusive: true}, fs: d.fs, objects: objects, gitDir: d.gitDir(),
		pendingLimit: storePendingBytes}
	unlock, err := d.lock(context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	d.touch()
	if err := d.prepare(); err != nil {
		return err
	}
	if fault := checkStore(d.gitDir()); fault != nil {
		return d.replace(fault)
	}
	return nil
}

// prepare re-creates a store deleted under a running process (the cache
// is only a cache) and reads the pack indexes again when another process
// added packs: the fetch must know every object the refs it announces
// reach. Called with the file lock held.
func (d *diskStore) prepare() error {
	d.storer.mu.Lock()
	defer d.storer.mu.Unlock()
	if _, err := os.Stat(filepath.Join(d.gitDir(), "HEAD")); err != nil {
		if err := d.initialize(); err != nil {
			return err
		}
	}
	d.storer.rereadLocked()
	return nil
}

// listPacks names the pack files of the store in gitDir, in order; "" when
// unreadable.
func listPacks(gitDir string) string {
	names, err := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "pack-*.pack"))
	if err != nil {
		return ""
	}
	return strings.Join(names, "\n") // Glob sorts
}

// initialize lays out an empty bare repository. Called with both locks
// held.
func (d *diskStore) initialize() error {
	_ = d.fs.Close() // open packs of a removed store must not be read again
	d.fs.Reindex()
	d.storer.indexes = nil
	d.storer.packs = ""
	// What memory holds is read before the disk: it must not outlive the
	// objects, or a fetch would take the tips it names as had.
	d.storer.objects.Clear()
	d.whole, d.wholeTrees, d.packedTrees, d.history = nil, nil, nil, nil
	if err := d.fs.Init(); err != nil {
		return err
	}
	return d.fs.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.Master))
}

// replace removes an unreadable store and lays out an empty one, so the
// next fetch brings everything afresh. Called with the file lock held.
func (d *diskStore) replace(fault error) error {
	fmt.Fprintf(d.warnings, "warning: the object cache of %s (%s) is unreadable, fetching afresh: %v\n", RedactURL(d.url), d.dir, RedactError(fault))
	d.storer.mu.Lock()
	defer d.storer.mu.Unlock()
	if err := os.RemoveAll(d.gitDir()); err != nil {
		return err
	}
	return d.initialize()
}

// fetch runs one fetch into the store under its file lock. A fetch that
// fails on a store that checks unreadable, or that leaves a tip that does
// not read (verify), is run again into a fresh store.
func (d *diskStore) fetch(ctx context.Context, fetch func() error, verify func() error) error {
	unlock, err := d.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	d.touch()
	if err := d.prepare(); err != nil {
		return fmt.Errorf("prepare the object cache %s: %w (remove it, or give --cache-dir=none)", d.dir, err)
	}
	// Checked on every fetch, not only on open: a running process may
	// answer from the objects it holds in memory while the disk below it
	// went bad, and the next process must not inherit that.
	if fault := checkStore(d.gitDir()); fault != nil {
		if err := d.replace(fault); err != nil {
			return fmt.Errorf("replace the unreadable object cache %s: %w (remove it, or give --cache-dir=none)", d.dir, err)
		}
	}
	err = fetch()
	d.storer.mu.Lock()
	d.storer.packs = listPacks(d.gitDir()) // the index in memory was told of the pack written
	d.storer.mu.Unlock()
	var fault error
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		if fault = verify(); fault == nil {
			d.compact(time.Now(), false)
			return err
		}
	} else if fault = checkStore(d.gitDir()); fault == nil {
		return err // the server's or the network's fault, not the store's
	}
	if err := d.replace(fault); err != nil {
		return fmt.Errorf("replace the unreadable object cache %s: %w (remove it, or give --cache-dir=none)", d.dir, err)
	}
	return fetch()
}

// compactNow packs the loose objects as a fetch would, and those this
// process wrote, under the file lock, and then calls packed if it packed
// any.
func (d *diskStore) compactNow(ctx context.Context, packed func()) error {
	unlock, err := d.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if d.compact(time.Now(), true) {
		packed()
	}
	return nil
}

// lock takes the store's file lock, shared by every process and every
// Repository of this store, waiting for ctx at most. The lock file is
// checked to still be the one at its path once held: a process removing an
// idle store removes it under the lock.
func (d *diskStore) lock(ctx context.Context) (unlock func(), err error) {
	path := filepath.Join(d.dir, storeLockFile)
	for {
		if err := os.MkdirAll(d.dir, 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock the object cache: %w", err)
		}
		if err := flockWait(ctx, f); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock the object cache %s: %w", d.dir, err)
		}
		held, herr := f.Stat()
		current, cerr := os.Stat(path)
		if herr == nil && cerr == nil && os.SameFile(held, current) {
			return func() { f.Close() }, nil // closing releases the lock
		}
		f.Close() // removed while we waited: lock the new one
	}
}

func flockWait(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("another process holds it: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// touch marks the store as in use; a failure only means an idle store may
// be removed and fetched again.
func (d *diskStore) touch() {
	path := filepath.Join(d.dir, storeUsedFile)
	now := time.Now()
	if err := os.Chtimes(path, now, now); errors.Is(err, os.ErrNotExist) {
		if f, err := os.Create(path); err == nil {
			f.Close()
		}
	}
}

// idleStores are the stores, by name, last used longer than storeIdleLimit
// before now.
func idleStores(lastUsed map[string]time.Time, now time.Time) []string {
	var idle []string
	for name, used := range lastUsed {
		if now.Sub(used) > storeIdleLimit {
			idle = append(idle, name)
		}
	}
	return idle
}

// removeIdleStores removes the stores under reposDir no process used for
// storeIdleLimit, each under its lock (one being fetched into is skipped).
// Removing is housekeeping: its failures are left for the next process.
func removeIdleStores(reposDir string, now time.Time) {
	entries, err := os.ReadDir(reposDir)
	if err != nil {
		return
	}
	lastUsed := map[string]time.Time{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := os.Stat(filepath.Join(reposDir, e.Name(), storeUsedFile))
		if err != nil {
			if info, err = e.Info(); err != nil {
				continue
			}
		}
		lastUsed[e.Name()] = info.ModTime()
	}
	for _, name := range idleStores(lastUsed, now) {
		dir := filepath.Join(reposDir, name)
		f, err := os.OpenFile(filepath.Join(dir, storeLockFile), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			// Renamed first, so no process opens a half-removed store.
			trash := filepath.Join(reposDir, fmt.Sprintf(".removing-%s-%d", name, os.Getpid()))
			if os.Rename(dir, trash) == nil {
				_ = os.RemoveAll(trash)
			}
		}
		f.Close()
	}
}

// checkStore finds what would make a store answer wrongly or not at all,
// without reading every object: a pack or index that is not whole (its
// trailer does not carry the checksum its name does), or a ref that is not
// a hash or a symbolic ref.
func checkStore(gitDir string) error {
	packDir := filepath.Join(gitDir, "objects", "pack")
	entries, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		want, err := hex.DecodeString(strings.TrimPrefix(name, "pack-"))
		if err != nil || len(want) != 20 {
			return fmt.Errorf("pack %s: the name is not a checksum", e.Name())
		}
		if err := checkTrailer(filepath.Join(packDir, e.Name()), 20, want); err != nil {
			return err
		}
		// An index ends with its pack's checksum and its own.
		if err := checkTrailer(filepath.Join(packDir, name+".idx"), 40, want); err != nil {
			return err
		}
	}
	refs := filepath.Join(gitDir, "refs")
	err = filepath.WalkDir(refs, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		return checkRefFile(path)
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := checkRefFile(filepath.Join(gitDir, "HEAD")); err != nil {
		return err
	}
	packed, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		if hash, _, ok := strings.Cut(line, " "); !ok || !isHash(hash) {
			return fmt.Errorf("packed-refs: %q is not a hash and a ref", line)
		}
	}
	return nil
}

// checkTrailer checks that the file at path ends with want at offset
// back from its end.
func checkTrailer(path string, back int64, want []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	got := make([]byte, len(want))
	if info.Size() < back+12 {
		return fmt.Errorf("%s is truncated (%d bytes)", filepath.Base(path), info.Size())
	}
	if _, err := f.ReadAt(got, info.Size()-back); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s is not whole: it does not end with the checksum %x", filepath.Base(path), want)
	}
	return nil
}

func checkRefFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	line := strings.TrimSpace(string(b))
	if strings.HasPrefix(line, "ref: ") || isHash(line) {
		return nil
	}
	return fmt.Errorf("ref %s holds %q, not a hash", filepath.Base(path), truncate(line, 40))
}

func isHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// packStorer is the lockedStorer of an on-disk store. Fetched packs are
// written whole, not object by object; the remote's configuration (its URL,
// credentials included) stays in memory and never reaches the disk.
type packStorer struct {
	*lockedStorer
	fs *filesystem.Storage
	// objects is fs's cache of decoded objects, which storeLoose fills
	// too: what is written is read back at once (a push packs the trees a
	// commit wrote, the loader reads what a fetch stored), and inflating a
	// wide tree again cost as much as deflating it.
	objects cache.Object
	gitDir  string
	config  memory.ConfigStorage
	// indexes are the indexes of the store's packs, read on first use and
	// dropped when the packs change; nil until read.
	indexes []*idxfile.MemoryIndex
	// entries are the packs of indexes a push copied entries from
	// (StoredEntry), open.
	entries map[*idxfile.MemoryIndex]*packEntries
	// lastEntries is the index in indexes that held the last entry found.
	lastEntries int
	// packs are the pack files go-git's index was read from (or told of,
	// for the packs this process wrote): another process's pack makes them
	// differ, and the indexes are read again.
	packs string
	// written counts the objects this process stored (loose) since its
	// last compaction.
	written atomic.Int64
	// deflaters are the *deflater loose objects are written through at
	// best speed, storers those trees are written through uncompressed,
	// reused: a zlib writer holds hundreds of kilobytes of tables.
	deflaters, storers sync.Pool
	// newer names, for an object written, the object that replaced it at
	// its path (NoteVersions), until a compaction packs it.
	notesMu sync.Mutex
	newer   map[plumbing.Hash]plumbing.Hash
	// pending are the objects this process wrote that no file holds yet
	// (storePending), guarded by mu; pendingBytes is their size, and
	// pendingLimit the size at which they are packed without waiting for
	// a reference (storePendingBytes, less in tests).
	pending      map[plumbing.Hash]storedObject
	pendingOrder []plumbing.Hash
	pendingBytes int64
	pendingLimit int64
	// packedPending says pending objects were packed since the last
	// compaction, which then checks the trees they complete again.
	packedPending bool
}

// deflater is a zlib writer (at one level) over a buffer: zlib emits its
// output a few hundred bytes at a time, which would each be a write to
// the file.
type deflater struct {
	z   *zlib.Writer
	buf *bufio.Writer
}

// SetEncodedObject keeps o in memory until a reference names it
// (holdPending); one over storeLargeObject is stored loose at once and
// counted for compact.
func (s *packStorer) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if o.Size() <= storeLargeObject {
		return s.holdPending(o)
	}
	h, err := s.storeLoose(o)
	if err == nil {
		s.written.Add(1)
	}
	return h, err
}

// storable says whether an object of type t is one a store keeps: a
// commit, tree, blob or tag, never a delta.
func storable(t plumbing.ObjectType) bool {
	switch t {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		return true
	}
	return false
}

// storeLoose writes o as a loose object deflated at zlib's best speed, as
// git deflates its own (core.looseCompression defaults to 1), where
// go-git's writer takes the default level: three to four times the CPU
// for 5 % fewer bytes on the wide trees a promotion rewrites (a directory
// of 10,000 overlays is a 340 KB tree). The object is deflated into a
// temporary file before the lock is taken, so readers wait only for its
// rename.
func (s *packStorer) storeLoose(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if !storable(o.Type()) {
		return plumbing.ZeroHash, plumbing.ErrInvalidType
	}
	tmp, stored, err := s.deflateLoose(o, true)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := s.placeLoose(tmp, stored.h); err != nil {
		_ = os.Remove(tmp)
		return plumbing.ZeroHash, err
	}
	if stored.MemoryObject != nil {
		s.objects.Put(stored)
	}
	return stored.h, nil
}

// storedObject is a copy of an object the store wrote or holds pending,
// under the hash computed as it was written (MemoryObject would hash its
// content again).
type storedObject struct {
	*plumbing.MemoryObject
	h plumbing.Hash
}

func (o storedObject) Hash() plumbing.Hash { return o.h }

// fetchedLoose is where a small fetched pack's objects are stored: loose,
// by storeLoose, not counted as written by the process (a fetch compacts
// on git's own count); delta bases are read through the store's lock. It
// offers no PackfileWriter, so go-git parses the pack object by object.
//
// Commits (and tags) are stored last, once every other object of the pack
// is: git sends them first, and a process stopped between would leave a
// commit without the trees below it, which the next fetch takes for held
// (it asks the server only for tips it lacks).
type fetchedLoose struct {
	*lockedStorer
	s *packStorer
	// tips are the commits and tags parsed, stored by storeTips.
	tips map[plumbing.Hash]plumbing.EncodedObject
}

func (f *fetchedLoose) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	if t := o.Type(); t != plumbing.CommitObject && t != plumbing.TagObject {
		return f.s.storeLoose(o)
	}
	kept, err := copyObject(o)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if f.tips == nil {
		f.tips = map[plumbing.Hash]plumbing.EncodedObject{}
	}
	f.tips[kept.Hash()] = kept
	return kept.Hash(), nil
}

// EncodedObject finds a commit held back too: the parser may read one as
// a delta base.
func (f *fetchedLoose) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, held := f.tips[h]; held && (t == plumbing.AnyObject || t == o.Type()) {
		return o, nil
	}
	return f.lockedStorer.EncodedObject(t, h)
}

// storeTips stores the commits and tags held back, once the pack's other
// objects are stored.
func (f *fetchedLoose) storeTips() error {
	held := make([]plumbing.Hash, 0, len(f.tips))
	for h := range f.tips {
		held = append(held, h)
	}
	order, err := tipsLast(held, func(h plumbing.Hash) plumbing.EncodedObject { return f.tips[h] })
	if err != nil {
		return err
	}
	for _, h := range order {
		if _, err := f.s.storeLoose(f.tips[h]); err != nil {
			return err
		}
	}
	return nil
}

// tipsLast orders objects, read through get, to be stored one at a time
// so that what is on disk is whole however far the storing got: the
// objects that are neither commits nor tags first, in their order, then
// the commits, each after the parents among objects, then the tags.
func tipsLast(objects []plumbing.Hash, get func(plumbing.Hash) plumbing.EncodedObject) ([]plumbing.Hash, error) {
	order := make([]plumbing.Hash, 0, len(objects))
	var commits, tags []plumbing.Hash
	for _, h := range objects {
		switch get(h).Type() {
		case plumbing.CommitObject:
			commits = append(commits, h)
		case plumbing.TagObject:
			tags = append(tags, h)
		default:
			order = append(order, h)
		}
	}
	if len(commits) == 0 && len(tags) == 0 {
		return order, nil
	}
	isCommit := make(map[plumbing.Hash]bool, len(commits))
	for _, h := range commits {
		isCommit[h] = true
	}
	placed := make(map[plumbing.Hash]bool, len(commits))
	var place func(h plumbing.Hash) error
	place = func(h plumbing.Hash) error {
		if !isCommit[h] || placed[h] {
			return nil
		}
		placed[h] = true
		c := &object.Commit{}
		if err := c.Decode(get(h)); err != nil {
			return fmt.Errorf("commit %s: %w", h, err)
		}
		for _, p := range c.ParentHashes {
			if err := place(p); err != nil {
				return err
			}
		}
		order = append(order, h)
		return nil
	}
	for _, h := range commits {
		if err := place(h); err != nil {
			return nil, err
		}
	}
	return append(order, tags...), nil
}

// copyObject is o in memory, under its hash.
func copyObject(o plumbing.EncodedObject) (storedObject, error) {
	r, err := o.Reader()
	if err != nil {
		return storedObject{}, err
	}
	defer r.Close()
	kept := storedObject{MemoryObject: &plumbing.MemoryObject{}}
	kept.SetType(o.Type())
	hasher := plumbing.NewHasher(o.Type(), o.Size())
	n, err := io.Copy(io.MultiWriter(kept.MemoryObject, hasher), r)
	if err != nil {
		return storedObject{}, err
	}
	if n != o.Size() {
		return storedObject{}, fmt.Errorf("object %s holds %d bytes, not the %d its header says", o.Hash(), n, o.Size())
	}
	kept.h = hasher.Sum()
	return kept, nil
}

// deflateLoose writes o as a loose object into a temporary file, where
// removeTemporaries finds it should the process stop before placeLoose,
// and returns the file and o's hash, computed from what was written, with
// a copy of o when keep is set and it is small enough to keep in memory
// (as a read would).
func (s *packStorer) deflateLoose(o plumbing.EncodedObject, keep bool) (tmp string, stored storedObject, err error) {
	r, err := o.Reader()
	if err != nil {
		return "", stored, err
	}
	defer r.Close()
	tmpDir := filepath.Join(s.gitDir, "objects", "pack")
	f, err := os.CreateTemp(tmpDir, looseTemporary)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(tmpDir, 0o755) == nil {
		f, err = os.CreateTemp(tmpDir, looseTemporary) // a store emptied by hand
	}
	if err != nil {
		return "", stored, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	// A tree is half hashes, which do not compress: stored, a tree of
	// 10,000 entries takes a fifth of the time best speed takes, for half
	// again the bytes, and lives on disk only until a compaction packs
	// it. Anything else is deflated at best speed, git's default.
	pool, level := &s.deflaters, zlib.BestSpeed
	if o.Type() == plumbing.TreeObject {
		pool, level = &s.storers, zlib.NoCompression
	}
	d, _ := pool.Get().(*deflater)
	if d == nil {
		d = &deflater{buf: bufio.NewWriterSize(f, 32<<10)}
		d.z, _ = zlib.NewWriterLevel(d.buf, level) // the level is valid
	} else {
		d.buf.Reset(f)
		d.z.Reset(d.buf)
	}
	defer pool.Put(d)
	z, buf := d.z, d.buf
	hasher := plumbing.NewHasher(o.Type(), o.Size())
	if _, err := fmt.Fprintf(z, "%s %d\x00", o.Type(), o.Size()); err != nil {
		return "", stored, err
	}
	out := io.MultiWriter(z, hasher)
	if keep && o.Size() <= storeLargeObject {
		// Kept whole, as go-git keeps an object this size it reads.
		stored.MemoryObject = &plumbing.MemoryObject{}
		stored.SetType(o.Type())
		stored.SetSize(o.Size())
		out = io.MultiWriter(z, hasher, stored.MemoryObject)
	}
	n, err := io.Copy(out, r)
	if err != nil {
		return "", stored, err
	}
	if n != o.Size() {
		return "", stored, fmt.Errorf("object %s holds %d bytes, not the %d its header says", o.Hash(), n, o.Size())
	}
	if err := z.Close(); err != nil {
		return "", stored, err
	}
	if err := buf.Flush(); err != nil {
		return "", stored, err
	}
	stored.h = hasher.Sum()
	return f.Name(), stored, nil
}

// looseTemporary begins the names of the temporary files loose objects
// are written through, as go-git's (removeTemporaries removes those left).
const looseTemporary = "tmp_obj_"

// loosePath is where git looks for object h loose in gitDir.
func loosePath(gitDir string, h plumbing.Hash) string {
	name := h.String()
	return filepath.Join(gitDir, "objects", name[:2], name[2:])
}

// placeLoose moves the temporary file of object h to where git looks for
// it, or removes it when the object is there already (its content is its
// name). Loose objects are read-only, as git makes them.
func (s *packStorer) placeLoose(tmp string, h plumbing.Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placeLooseLocked(tmp, h)
}

// placeLooseLocked is placeLoose for a caller holding s.mu.
func (s *packStorer) placeLooseLocked(tmp string, h plumbing.Hash) error {
	file := loosePath(s.gitDir, h)
	dir := filepath.Dir(file)
	if _, err := os.Lstat(file); err == nil {
		return os.Remove(tmp)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		return err
	}
	return os.Chmod(file, 0o444)
}

// rereadLocked reads the pack indexes again when the store's packs are no
// longer the ones they were read from, and says whether it did. s.mu must
// be held.
func (s *packStorer) rereadLocked() bool {
	packs := listPacks(s.gitDir)
	if packs == s.packs {
		return false
	}
	if packsRemoved(s.packs, packs) {
		// go-git keeps up to storeOpenPacks packs open, and a removed
		// one's disk is freed only once it is closed: a long-running
		// process would hold a copy of the store per merge. A large
		// object being read has a file of its own, and every other read
		// holds s.mu.
		_ = s.fs.Close()
	}
	s.fs.Reindex()
	s.indexes = nil
	s.packs = packs
	return true
}

// packsRemoved says whether a pack of before (listPacks) is not in after.
func packsRemoved(before, after string) bool {
	now := strings.Split(after, "\n")
	for p := range strings.SplitSeq(before, "\n") {
		if p != "" && !slices.Contains(now, p) {
			return true
		}
	}
	return false
}

// again says whether a lookup that found nothing is worth one more try:
// another process (or another Repository of this store) may have packed
// loose objects into a pack this one has not read, and removed them
// (compact), or merged packs this one read and removed them
// (retirePacks), as git's own readers expect of each other.
func (s *packStorer) again(err error) bool {
	if !errors.Is(err, plumbing.ErrObjectNotFound) && !errors.Is(err, dotgit.ErrPackfileNotFound) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rereadLocked()
}

// EncodedObject reads what the store holds in memory, then a small loose
// object itself, then as go-git does. go-git opens a loose object's file
// before it looks in its cache, through a filesystem that checks each
// component of the path with lstat: a chain of automatic stages spent a
// tenth of its CPU there, reading back the trees it had just written.
func (s *packStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	unlock := s.readLock()
	o, err := lockHeld{s}.EncodedObject(t, h)
	unlock()
	if s.again(err) {
		o, err = s.lockedStorer.EncodedObject(t, h)
	}
	return o, err
}

// lockHeld reads objects as packStorer does, for a caller that holds its
// lock (a compaction).
type lockHeld struct{ s *packStorer }

func (l lockHeld) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	var o plumbing.EncodedObject
	if p, held := l.s.pending[h]; held {
		o = p
	} else if cached, ok := l.s.objects.Get(h); ok {
		o = cached
	} else {
		o = l.s.readLoose(h)
	}
	if o == nil {
		return l.s.fs.EncodedObject(t, h)
	}
	if t != plumbing.AnyObject && o.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

// readLoose reads object h whole from its loose file and keeps it in the
// cache, as go-git would; nil when h is packed (go-git finds it in its
// index without opening a file), not loose, over storeLargeObject (go-git
// streams it), unreadable or not what its name says (go-git says why).
// Called with s.mu held.
func (s *packStorer) readLoose(h plumbing.Hash) plumbing.EncodedObject {
	if s.packed(h) {
		return nil
	}
	f, err := os.Open(loosePath(s.gitDir, h))
	if err != nil {
		return nil
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return nil
	}
	defer r.Close()
	t, size, err := r.Header()
	if err != nil || size > storeLargeObject {
		return nil
	}
	content := make([]byte, size)
	if _, err := io.ReadFull(r, content); err != nil || r.Hash() != h {
		return nil
	}
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.Write(content)
	stored := storedObject{MemoryObject: o, h: h}
	s.objects.Put(stored)
	return stored
}

// EncodedObjectSize reads a loose object's size itself: go-git's reader
// leaves the object's file open for the garbage collector to close, and a
// process reading thousands between two collections (a compaction, a
// limit check) runs out of file descriptors.
func (s *packStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if n, ok := s.pendingSize(h); ok {
		return n, nil
	}
	if n, err := looseSize(s.gitDir, h); !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	// Not loose: go-git looks for it loose, finds nothing, then in packs.
	n, err := s.lockedStorer.EncodedObjectSize(h)
	if s.again(err) {
		n, err = s.lockedStorer.EncodedObjectSize(h)
	}
	return n, err
}

// looseSize is the size the header of loose object h says.
func looseSize(gitDir string, h plumbing.Hash) (int64, error) {
	f, err := os.Open(loosePath(gitDir, h))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("loose object %s: %w", h, err)
	}
	defer r.Close()
	_, size, err := r.Header()
	if err != nil {
		return 0, fmt.Errorf("loose object %s: %w", h, err)
	}
	return size, nil
}

// HasEncodedObject looks in the pack indexes first: go-git's filesystem
// storage looks for a loose object first, an open() that fails for nearly
// every object of a fetched repository. The check that a new commit's
// tree is whole asks this of every blob: 0.23 s of CPU for 10,000 stages.
// An object in no index is looked for as before, loose or in a pack
// added since.
func (s *packStorer) HasEncodedObject(h plumbing.Hash) error {
	err := s.hasEncodedObject(h)
	if s.again(err) {
		err = s.hasEncodedObject(h)
	}
	return err
}

func (s *packStorer) hasEncodedObject(h plumbing.Hash) error {
	defer s.readLock()()
	if _, held := s.pending[h]; held || s.packed(h) {
		return nil
	}
	return s.Storer.HasEncodedObject(h)
}

// readIndexes reads the index of every pack the store has; one that does
// not read is left out, so its objects are looked for as before. Called
// with the lock held.
func (s *packStorer) readIndexes() []*idxfile.MemoryIndex {
	packs, err := s.fs.ObjectPacks()
	if err != nil {
		return []*idxfile.MemoryIndex{}
	}
	indexes := make([]*idxfile.MemoryIndex, 0, len(packs))
	for _, pack := range packs {
		if idx, err := readIndex(filepath.Join(s.gitDir, "objects", "pack", "pack-"+pack.String()+".idx")); err == nil {
			indexes = append(indexes, idx)
		}
	}
	return indexes
}

func (s *packStorer) Config() (*config.Config, error) { return s.config.Config() }

func (s *packStorer) SetConfig(c *config.Config) error { return s.config.SetConfig(c) }

// A fetched pack of fewer than storeLooseObjects objects and at most
// storeLooseBytes is stored as loose objects, as git's unpackLimit does: a
// running process fetches a few new objects every pass, and every pack
// adds an index each object lookup searches.
const (
	storeLooseObjects = 100
	storeLooseBytes   = 1 << 20
)

// PackfileWriter writes a fetched pack to disk as it arrives (a small one
// is held in memory and stored loose). A pack's index joins the store's on
// Close, under the lock readers take.
func (s *packStorer) PackfileWriter() (io.WriteCloser, error) {
	return &fetchedPack{s: s}, nil
}

type fetchedPack struct {
	s     *packStorer
	small bytes.Buffer
	pack  io.WriteCloser // once the pack is too large to store loose
}

func (w *fetchedPack) Write(p []byte) (int, error) {
	if w.pack != nil {
		return w.pack.Write(p)
	}
	w.small.Write(p)
	if w.small.Len() <= storeLooseBytes {
		return len(p), nil
	}
	if err := w.startPack(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// startPack writes what was held so far into a pack file.
func (w *fetchedPack) startPack() error {
	w.s.mu.Lock()
	pack, err := w.s.fs.PackfileWriter()
	w.s.mu.Unlock()
	if err != nil {
		return err
	}
	w.pack = pack
	_, err = w.pack.Write(w.small.Bytes())
	w.small = bytes.Buffer{}
	return err
}

func (w *fetchedPack) Close() error {
	if w.pack == nil {
		// The header is "PACK", the version and the object count.
		head := w.small.Bytes()
		if len(head) >= 12 && binary.BigEndian.Uint32(head[8:12]) < storeLooseObjects {
			loose := &fetchedLoose{lockedStorer: w.s.lockedStorer, s: w.s}
			if err := packfile.UpdateObjectStorage(loose, &w.small); err != nil {
				return err
			}
			return loose.storeTips()
		}
		if err := w.startPack(); err != nil {
			return err
		}
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.indexes = nil
	return w.pack.Close()
}
