package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/gittree"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	statetrust "github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

// ReadState fetches the state branch of repo and decodes it. A branch that
// does not exist yet is an empty state at the zero hash.
func ReadState(ctx context.Context, repo *source.Repository, branch string) (plumbing.Hash, map[string][]byte, *reconcilers.State, error) {
	tip, err := FetchState(ctx, repo, branch)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	files, state, err := StateAt(repo, branch, tip)
	return tip, files, state, err
}

// FetchState fetches the state branch of repo: its tip, the zero hash when
// it does not exist yet.
func FetchState(ctx context.Context, repo *source.Repository, branch string) (plumbing.Hash, error) {
	tip, err := repo.Fetch(ctx, branch)
	if errors.Is(err, git.NoMatchingRefSpecError{}) {
		return plumbing.ZeroHash, nil
	}
	return tip, err
}

// FetchedState is the tip of the state branch as the last fetch of repo
// brought it along with the config branch (Repository.FetchAlso): both
// from one ref advertisement, so the state read is never newer than the
// config read beside it. The zero hash when it did not exist.
func FetchedState(repo *source.Repository, branch string) (plumbing.Hash, error) {
	ref, err := repo.Repo().Reference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read state branch %s fetched from %s: %w", branch, source.RedactURL(repo.URL()), err)
	}
	return ref.Hash(), nil
}

// StateAt decodes the state branch at tip, fetched before; the empty state
// at the zero hash. A state that does not decode whole is returned with
// the error.
func StateAt(repo *source.Repository, branch string, tip plumbing.Hash) (map[string][]byte, *reconcilers.State, error) {
	if tip.IsZero() {
		return map[string][]byte{}, reconcilers.NewState(), nil
	}
	files, err := readCommitFiles(repo, tip)
	if err != nil {
		return nil, nil, err
	}
	state, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		return files, state, fmt.Errorf("state branch %s of %s: %w", branch, repo.URL(), errors.Join(errs...))
	}
	return files, state, nil
}

func readCommitFiles(repo *source.Repository, commit plumbing.Hash) (map[string][]byte, error) {
	files, err := new(stateFiles).read(repo.Storer(), commit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", repo.URL(), err)
	}
	return files, nil
}

// stateFiles remembers the files of the state commit a controller read
// last, with their blob hashes: an unchanged pass reads no object, and a new
// commit only the blobs it changed. Objects in an on-disk store cost a read
// and an inflate each, and the state branch holds a file per stage.
type stateFiles struct {
	mu    sync.Mutex
	tip   plumbing.Hash
	files map[string][]byte
	blobs map[string]plumbing.Hash // each file's blob
	// trees are each directory's tree ("" the root), entries what it
	// holds, so a directory read before is taken without reading it.
	trees   map[string]plumbing.Hash
	entries map[string][]stateEntry
}

// seed offers files known from elsewhere (the state codec's memory of an
// earlier process): a file whose blob in the next commit read has the hash
// of its content is taken from here. The hash is computed here, so a
// damaged or altered memory is never read as the commit's content.
func (m *stateFiles) seed(files map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files != nil {
		return // what was read from a commit is the better guide
	}
	m.files, m.blobs = make(map[string][]byte, len(files)), make(map[string]plumbing.Hash, len(files))
	for name, data := range files {
		m.files[name] = data
		m.blobs[name] = plumbing.ComputeHash(plumbing.BlobObject, data)
	}
}

// read returns the files of commit; the map is the caller's to change.
// A directory whose tree is the one read last is taken whole from then,
// without reading it: a state commit changes a few of the state branch's
// directories, and each is a tree object to read and inflate.
func (m *stateFiles) read(s storer.EncodedObjectStorer, commit plumbing.Hash) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if commit == m.tip && !commit.IsZero() && m.files != nil {
		return maps.Clone(m.files), nil
	}
	c, err := object.GetCommit(s, commit)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", commit, err)
	}
	if m.trees == nil {
		err = m.readWhole(s, c)
	} else {
		err = m.update(s, c, "", c.TreeHash)
	}
	if err != nil {
		// What update changed is half a commit: the next read walks the
		// whole tree again, taking only the blobs whose hash it knows.
		m.tip, m.trees, m.entries = plumbing.ZeroHash, nil, nil
		return nil, err
	}
	m.tip = commit
	return maps.Clone(m.files), nil
}

// readWhole reads every directory of commit c, taking the files whose blob
// m holds (seeded, or left by a read that failed) from m.
func (m *stateFiles) readWhole(s storer.EncodedObjectStorer, c *object.Commit) error {
	// Sized as the files known, most often the commit's (seeded): growing
	// maps to 20,000 entries made a restarted process's first read 1.25
	// times as long (BenchmarkStateFilesSeededRead).
	next := stateFiles{files: make(map[string][]byte, len(m.files)), blobs: make(map[string]plumbing.Hash, len(m.blobs)),
		trees: map[string]plumbing.Hash{}, entries: map[string][]stateEntry{}}
	var walk func(dir string, tree plumbing.Hash) error
	walk = func(dir string, tree plumbing.Hash) error {
		next.trees[dir] = tree
		raw, err := gittree.Read(s, tree)
		if err != nil {
			return fmt.Errorf("read the tree of %s: %w", c.Hash, err)
		}
		for e, err := range gittree.Entries(raw) {
			if err != nil {
				return fmt.Errorf("read directory %q of %s: %w", dir, c.Hash, err)
			}
			name := path.Join(dir, string(e.Name))
			switch {
			case e.Mode == filemode.Dir:
				next.entries[dir] = append(next.entries[dir], stateEntry{name: name, dir: true})
				if err := walk(name, e.Hash); err != nil {
					return err
				}
			case e.Mode.IsFile():
				next.entries[dir] = append(next.entries[dir], stateEntry{name: name})
				next.blobs[name] = e.Hash
				if m.blobs[name] == e.Hash {
					next.files[name] = m.files[name]
					continue
				}
				content, err := readBlob(s, e.Hash)
				if err != nil {
					return fmt.Errorf("read %s of %s: %w", name, c.Hash, err)
				}
				next.files[name] = content
			}
		}
		return nil
	}
	if err := walk("", c.TreeHash); err != nil {
		return err
	}
	m.files, m.blobs, m.trees, m.entries = next.files, next.blobs, next.trees, next.entries
	return nil
}

// update makes m hold directory dir of commit c as the tree it names,
// changing only what differs from the tree m holds for it: a pass that
// wrote state changes a file or two in directories of 10,000, and copying
// every entry into new maps was most of a state read.
func (m *stateFiles) update(s storer.EncodedObjectStorer, c *object.Commit, dir string, tree plumbing.Hash) error {
	if m.trees[dir] == tree {
		return nil
	}
	raw, err := gittree.Read(s, tree)
	if err != nil {
		return fmt.Errorf("read the tree of %s: %w", c.Hash, err)
	}
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	old := m.entries[dir]
	entries := make([]stateEntry, 0, len(old))
	same := true // the same names, in the same places
	i := 0
	for e, err := range gittree.Entries(raw) {
		if err != nil {
			return fmt.Errorf("read directory %q of %s: %w", dir, c.Hash, err)
		}
		isDir := e.Mode == filemode.Dir
		if !isDir && !e.Mode.IsFile() {
			same = false
			continue
		}
		var name string
		if same && i < len(old) && old[i].dir == isDir && len(old[i].name) == len(prefix)+len(e.Name) && old[i].name[len(prefix):] == string(e.Name) {
			name = old[i].name // what path.Join made of this entry before
		} else {
			same = false
			name = path.Join(dir, string(e.Name))
		}
		i++
		entries = append(entries, stateEntry{name: name, dir: isDir})
		if isDir {
			if err := m.update(s, c, name, e.Hash); err != nil {
				return err
			}
			continue
		}
		if m.blobs[name] == e.Hash {
			continue
		}
		content, err := readBlob(s, e.Hash)
		if err != nil {
			return fmt.Errorf("read %s of %s: %w", name, c.Hash, err)
		}
		m.files[name], m.blobs[name] = content, e.Hash
	}
	if i != len(old) {
		same = false // entries at the end were removed
	}
	if !same {
		// Names the tree no longer holds go, whatever order its entries
		// come in; a file and a directory of the same name are two names.
		kept := make(map[stateEntry]bool, len(entries))
		for _, e := range entries {
			kept[e] = true
		}
		for _, e := range old {
			if !kept[e] {
				m.remove(e)
			}
		}
	}
	m.trees[dir], m.entries[dir] = tree, entries
	return nil
}

// remove forgets entry e of a directory, and everything under it.
func (m *stateFiles) remove(e stateEntry) {
	if !e.dir {
		delete(m.files, e.name)
		delete(m.blobs, e.name)
		return
	}
	for _, sub := range m.entries[e.name] {
		m.remove(sub)
	}
	delete(m.entries, e.name)
	delete(m.trees, e.name)
}

// stateEntry is a file or directory of a directory of the state branch.
type stateEntry struct {
	name string // its path from the root
	dir  bool
}

func readBlob(s storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	blob, err := object.GetBlob(s, h)
	if err != nil {
		return nil, err
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// VerifiedState is the state branch read and its history checked.
type VerifiedState struct {
	Tip   plumbing.Hash
	Files map[string][]byte
	State *reconcilers.State
	// Verdict is the tip's; Refusal describes it when the tip is not
	// trusted, and Unverified then names the files that differ from the
	// last trusted commit (every file when there is none).
	Verdict    statetrust.CommitVerdict
	Refusal    string
	Unverified map[string]bool
}

// ReadVerifiedState reads the state branch like ReadState and checks its
// whole history with trust, the check the controller makes before deciding.
// A tip that is not trusted is no error here: the caller decides whether to
// show such a state, marked.
func ReadVerifiedState(ctx context.Context, repo *source.Repository, branch string, trust *StateTrust,
	configs map[string]*v1alpha1.VectorPromotionConfig) (VerifiedState, error) {
	tip, err := FetchState(ctx, repo, branch)
	if err != nil {
		return VerifiedState{}, err
	}
	return VerifyState(repo, branch, tip, trust, configs)
}

// VerifyState is ReadVerifiedState of the state branch at tip, fetched
// before.
func VerifyState(repo *source.Repository, branch string, tip plumbing.Hash, trust *StateTrust,
	configs map[string]*v1alpha1.VectorPromotionConfig) (VerifiedState, error) {
	files, state, err := StateAt(repo, branch, tip)
	if err != nil {
		return VerifiedState{}, err
	}
	out := VerifiedState{Tip: tip, Files: files, State: state, Verdict: statetrust.CommitVerdict{Trusted: true}}
	if tip.IsZero() {
		return out, nil
	}
	if out.Verdict, err = trust.Verify(repo.Storer(), tip, configs); err != nil {
		return VerifiedState{}, fmt.Errorf("check the history of state branch %s of %s: %w", branch, repo.URL(), err)
	}
	if out.Verdict.Trusted {
		return out, nil
	}
	out.Refusal = out.Verdict.Refused.Describe(branch, out.Verdict.LastTrusted)
	trustedFiles := map[string][]byte{}
	if out.Verdict.LastTrusted != "" {
		if trustedFiles, err = readCommitFiles(repo, plumbing.NewHash(out.Verdict.LastTrusted)); err != nil {
			return VerifiedState{}, err
		}
	}
	out.Unverified = map[string]bool{}
	for p, data := range files {
		if old, ok := trustedFiles[p]; !ok || !bytes.Equal(old, data) {
			out.Unverified[p] = true
		}
	}
	return out, nil
}

// DefaultStateBranch is the branch of the config repository that holds
// vectorflow's runtime objects.
const DefaultStateBranch = "vectorflow/state"

// shareFetches makes one fetch per pass read both branches: the loader's
// fetch of the config branch brings the state branch along in the same
// request, and the writer keeps its objects in the loader's store, so it
// builds on what the pass read without fetching it again, and the next
// pass's fetch finds what the writer pushed already there (an
// advertisement, no pack). A directory that is not a Git repository has
// no store to share.
func (c *Controller) shareFetches() {
	repo, err := c.opts.Loader.Repository(c.opts.URL)
	if err != nil {
		return
	}
	repo.FetchAlso(c.opts.StateBranch)
	c.opts.Writer.ShareStore(c.remote(c.opts.URL).URL, repo.Storer())
	c.shared = repo
}

// readState reads the state branch as the pass's fetch brought it, or
// through the writer (its own fetch) when there is no shared fetch.
func (c *Controller) readState(ctx context.Context) (plumbing.Hash, map[string][]byte, error) {
	if c.shared == nil {
		return c.opts.Writer.Read(ctx, c.stateTarget(), "")
	}
	var tip plumbing.Hash
	var err error
	if c.held != nil && c.held.read {
		tip = c.heldStateTip() // a fetch would bring back the remote's older tip
	} else {
		tip, err = FetchedState(c.shared, c.opts.StateBranch)
	}
	if err != nil || tip.IsZero() {
		return plumbing.ZeroHash, map[string][]byte{}, err // not written yet, or unreadable
	}
	files, err := c.stateFiles.read(c.shared.Storer(), tip)
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("read the state branch fetched from %s: %w", c.name, err)
	}
	// The state commit compares and swaps from this tip without a fetch.
	if _, err := c.opts.Writer.Saw(ctx, c.stateTarget(), tip); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return tip, files, nil
}

// stateRead is the state branch as a pass read it: its tip, its files,
// and the state they decode to, with the files skipped.
type stateRead struct {
	tip     plumbing.Hash
	files   map[string][]byte
	state   *reconcilers.State
	skipped []error
	err     error
}

// readDecodedState reads the state branch (readState) and decodes it.
func (c *Controller) readDecodedState(ctx context.Context) stateRead {
	tip, files, err := c.readState(ctx)
	if err != nil {
		return stateRead{err: err}
	}
	state, skipped := c.codec.Decode(files)
	return stateRead{tip: tip, files: files, state: state, skipped: skipped}
}

// errNotAlong declines to write a promotion with the state commit.
var errNotAlong = errors.New("the promotion's target is not on the state branch's remote")

// writeStateAlong writes the state commit that starts a promotion together
// with the promotion's commit, in one atomic push, when the pass starts
// exactly one promotion and its target lives in the config repository: one
// request instead of two, and never one without the other. It returns the
// state commit and the promotion's result; a zero commit means the state
// is still to be written (then executed, when set, holds the result of a
// promotion that wrote nothing, so it is not executed again). A
// ConflictError means nothing was written and the state moved.
func (c *Controller) writeStateAlong(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, start []string,
	tip plumbing.Hash, diff map[string][]byte, message string) (plumbing.Hash, map[string]reconcilers.Result, error) {
	if c.shared == nil || len(start) != 1 || state.Promotions[start[0]] == nil {
		return plumbing.ZeroHash, nil, nil
	}
	p := state.Promotions[start[0]]
	stateTarget := c.stateTarget()
	var commit plumbing.Hash
	r, err := c.executeOneWith(ctx, snap, state, p, func(target gitwriter.Target, change gitwriter.Change) ([]gitwriter.Result, error) {
		if target.Remote.URL != stateTarget.Remote.URL || target.Branch == stateTarget.Branch {
			return nil, errNotAlong
		}
		res, next, err := c.opts.Writer.ApplyAlong(ctx, target, change,
			gitwriter.Swap{Branch: stateTarget.Branch, Expected: tip, Files: diff, Message: message})
		if err != nil {
			return nil, err
		}
		commit = next
		return []gitwriter.Result{res}, nil
	})
	switch {
	case err == nil && !commit.IsZero():
		return commit, map[string]reconcilers.Result{p.Name: r}, nil
	case errors.Is(err, gitwriter.ErrConflict):
		return plumbing.ZeroHash, nil, err
	case err == nil:
		// The promotion failed without writing anything: its result is
		// recorded with the state commit, written alone.
		return plumbing.ZeroHash, map[string]reconcilers.Result{p.Name: r}, nil
	}
	// Declined, or an outcome the push left open (a lost answer, a branch
	// that kept moving): the state commit alone compares and swaps from
	// tip (refused if the pair landed after all), then the promotion is
	// executed as always, finding its commit if it is there.
	c.opts.Log.V(1).Info("state and promotion written apart", "promotion", p.Name, "why", err.Error())
	return plumbing.ZeroHash, nil, nil
}

// shareStageStores offers the writer the loader's store of every
// repository the snapshot's stages live in, as shareFetches does for the
// config repository: a promotion into a landscape of another repository
// builds on the tip the loader just fetched, without fetching it again.
// Each repository is offered once; the writer keeps the first store it was
// offered for a URL.
func (c *Controller) shareStageStores(snap *source.Snapshot) {
	if c.sharedURLs == nil {
		c.sharedURLs = map[string]bool{c.opts.URL: true}
	}
	for _, ref := range snap.StageIndex {
		if ref.Branch == "" || c.sharedURLs[ref.URL] {
			continue
		}
		c.sharedURLs[ref.URL] = true
		if repo, err := c.opts.Loader.Repository(ref.URL); err == nil {
			c.opts.Writer.ShareStore(c.remote(ref.URL).URL, repo.Storer())
		}
	}
}
