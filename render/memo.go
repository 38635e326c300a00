package render

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// What one build reads, every other build of the same tree reads again: a
// thousand overlays of one base stat, hash and read the base's files a
// thousand times, and go-git decodes each object every time. A commit's
// tree never changes, so the Renderer remembers those answers per tree
// (treeMemo), for the few most recent trees. The YAML limit check is
// remembered by content (workMemo), for any tree. Neither changes what is
// checked: every read still passes repofs.CheckedRead and the budget of its
// build. (A loader's LimitTree charges its load once per file, for the first
// build that reads it; later builds take the file from memory.)

// maxMemoTrees bounds the trees remembered: a controller sees a new commit
// every pass, and only the latest ones are built from.
const maxMemoTrees = 4

// maxMemoBlobBytes bounds the file contents remembered per tree.
const maxMemoBlobBytes = 32 << 20

// maxMemoWork bounds the contents whose YAML check is remembered.
const maxMemoWork = 1 << 16

type treeMemos struct {
	mu    sync.Mutex
	trees []*memoTree // most recent last
}

// of returns tree with its reads remembered, or tree itself when it may change.
func (m *treeMemos) of(tree repofs.Tree) repofs.Tree {
	if !repofs.Immutable(tree) {
		return tree
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, t := range m.trees {
		if t.Tree == tree {
			m.trees = append(slices.Delete(m.trees, i, i+1), t)
			return t
		}
	}
	t := &memoTree{Tree: tree}
	if len(m.trees) >= maxMemoTrees {
		m.trees = slices.Delete(m.trees, 0, 1)
	}
	m.trees = append(m.trees, t)
	return t
}

// immutable says whether tree never changes: a commit's, or one the memo
// wraps (treeMemos.of wraps only those).
func immutable(tree repofs.Tree) bool {
	if _, ok := tree.(*memoTree); ok {
		return true
	}
	return repofs.Immutable(tree)
}

// memoTree is an immutable tree whose answers are remembered. Concurrent
// builds read it; sync.Map suits keys written once and read many times.
type memoTree struct {
	repofs.Tree
	stats, hashes, dirs, blobs sync.Map // name -> statResult, hashResult, dirResult, []byte
	blobBytes                  atomic.Int64
}

type statResult struct {
	info fs.FileInfo
	err  error
}

type hashResult struct {
	hash string
	err  error
}

type dirResult struct {
	entries []fs.DirEntry
	err     error
}

func (t *memoTree) Stat(name string) (fs.FileInfo, error) {
	if r, ok := t.stats.Load(name); ok {
		return r.(statResult).info, r.(statResult).err
	}
	info, err := t.Tree.Stat(name)
	if lasting(err) {
		t.stats.Store(name, statResult{info, err})
	}
	return info, err
}

func (t *memoTree) Hash(name string) (string, error) {
	if r, ok := t.hashes.Load(name); ok {
		return r.(hashResult).hash, r.(hashResult).err
	}
	h, err := t.Tree.Hash(name)
	if lasting(err) {
		t.hashes.Store(name, hashResult{h, err})
	}
	return h, err
}

func (t *memoTree) ReadDir(name string) ([]fs.DirEntry, error) {
	if r, ok := t.dirs.Load(name); ok {
		return slices.Clone(r.(dirResult).entries), r.(dirResult).err
	}
	entries, err := t.Tree.ReadDir(name)
	if lasting(err) {
		t.dirs.Store(name, dirResult{slices.Clone(entries), err})
	}
	return entries, err
}

// lasting says whether an answer holds for as long as the tree: success,
// an absent name or a link out of the repository. An I/O error (an object
// store deleted under a running process) may not.
func lasting(err error) bool {
	var esc *repofs.EscapeError
	return err == nil || errors.Is(err, fs.ErrNotExist) || errors.As(err, &esc)
}

// ReadFile remembers contents up to maxMemoBlobBytes per tree; errors are
// not remembered (they are rare, and some depend on the moment).
func (t *memoTree) ReadFile(name string) ([]byte, error) {
	if data, ok := t.blobs.Load(name); ok {
		return slices.Clone(data.([]byte)), nil
	}
	data, err := t.Tree.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if t.blobBytes.Add(int64(len(data))) <= maxMemoBlobBytes {
		t.blobs.Store(name, slices.Clone(data))
	} else {
		t.blobBytes.Add(-int64(len(data)))
	}
	return data, nil
}

// workMemo remembers the mapping work of contents that passed
// repofs.CheckYAMLWork under the Renderer's limits. Failures are not
// remembered: they are checked again and fail again.
// It also remembers what the checks before a build found in each
// kustomization's content (parseKustomization).
type workMemo struct {
	m     sync.Map // [sha256.Size]byte -> int64
	n     atomic.Int64
	kusts sync.Map // [sha256.Size]byte -> kustomizationFacts
	nk    atomic.Int64
}

func (w *workMemo) kustomization(data []byte) kustomizationFacts {
	key := sha256.Sum256(data)
	if f, ok := w.kusts.Load(key); ok {
		return f.(kustomizationFacts)
	}
	f := parseKustomization(data)
	if w.nk.Add(1) <= maxMemoWork {
		w.kusts.Store(key, f)
	}
	return f
}

func (w *workMemo) check(name string, data []byte, limits repofs.Limits) (int64, error) {
	key := sha256.Sum256(data)
	if work, ok := w.m.Load(key); ok {
		return work.(int64), nil
	}
	work, err := repofs.CheckYAMLWork(name, data, limits)
	if err == nil && w.n.Add(1) <= maxMemoWork {
		w.m.Store(key, work)
	}
	return work, err
}
