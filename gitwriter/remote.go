package gitwriter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/vectorflow-dev/vectorflow/internal/gitpack"
)

// repo is the copy of the branches of one remote that a Writer works on. It
// is kept between calls so each fetch brings only new objects. Not safe for
// concurrent use; branchState's lock guards it.
type repo struct {
	s      storage.Storer
	remote *git.Remote
	trees  *treeCache // the trees commits are built from, decoded once
	// made is what the Writer's commits wrote, for listing what a push sends.
	made *madeCommits
	// held, when set, keeps back this remote's pushes (Writer.Hold).
	held *held
	// receivers is what the Writer learned of its remotes' receive-packs.
	receivers *receivers
}

// receivers remembers, by remote URL, whether the receive-pack of the
// remote took thin packs when its advertisement was read last (an atomic
// push, a push over SSH), so that a push which skips the advertisement (a
// single branch over HTTP, to save a round trip) sends a thin pack too,
// but only to a remote known to take one. Safe for concurrent use.
type receivers struct {
	mu   sync.Mutex
	thin map[string]bool
}

func newReceivers() *receivers { return &receivers{thin: map[string]bool{}} }

// advertised records what url's receive-pack offered, and says whether it
// takes thin packs.
func (rs *receivers) advertised(url string, offered *capability.List) bool {
	thin := takesThinPacks(offered)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.thin[url] = thin
	return thin
}

// takesThin says whether url's receive-pack took thin packs when last
// asked; false when never asked.
func (rs *receivers) takesThin(url string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.thin[url]
}

// forget drops what was learned of url: a push it refused is sent again
// whole, whatever it advertised before.
func (rs *receivers) forget(url string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.thin, url)
}

// newRepo keeps objects in objects when it is set (a store shared with the
// reader that fetched the branch, so the writer builds on what was just
// read without fetching it again), in memory otherwise. The references,
// where this writer saw each branch last, are always its own: a reader
// fetching into the shared store never moves them.
func newRepo(url string, objects storer.EncodedObjectStorer, made *madeCommits, receivers *receivers) *repo {
	var s storage.Storer = memory.NewStorage()
	if objects != nil {
		s = sharedStorage{EncodedObjectStorer: objects, Storer: s}
	}
	return &repo{s: s, remote: git.NewRemote(s, &config.RemoteConfig{Name: "origin", URLs: []string{url}}), trees: newTreeCache(s), made: made,
		receivers: receivers}
}

// sharedStorage is a private memory store whose objects live elsewhere.
// Only the interfaces' methods are promoted: a memory store's transaction
// (Begin) would otherwise take a fetched pack into the private half.
type sharedStorage struct {
	storer.EncodedObjectStorer
	storage.Storer
}

func (s sharedStorage) NewEncodedObject() plumbing.EncodedObject {
	return s.EncodedObjectStorer.NewEncodedObject()
}
func (s sharedStorage) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	return s.EncodedObjectStorer.SetEncodedObject(o)
}
func (s sharedStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	return s.EncodedObjectStorer.EncodedObject(t, h)
}
func (s sharedStorage) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return s.EncodedObjectStorer.IterEncodedObjects(t)
}
func (s sharedStorage) HasEncodedObject(h plumbing.Hash) error {
	return s.EncodedObjectStorer.HasEncodedObject(h)
}
func (s sharedStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	return s.EncodedObjectStorer.EncodedObjectSize(h)
}

// StoredEntry and AppendStoredEntry offer a push the entries of the
// shared store's packs (gitpack.Stored), when it keeps its own.
func (s sharedStorage) StoredEntry(h plumbing.Hash) (plumbing.Hash, bool) {
	if stored, ok := s.EncodedObjectStorer.(gitpack.Stored); ok {
		return stored.StoredEntry(h)
	}
	return plumbing.ZeroHash, false
}
func (s sharedStorage) AppendStoredEntry(b []byte, h plumbing.Hash) ([]byte, error) {
	if stored, ok := s.EncodedObjectStorer.(gitpack.Stored); ok {
		return stored.AppendStoredEntry(b, h)
	}
	return nil, fmt.Errorf("the store offers no entry of %s", h)
}
func (s sharedStorage) AddAlternate(remote string) error {
	return s.EncodedObjectStorer.AddAlternate(remote)
}

// saw records that branch was read at tip by whoever fetched into the
// shared store, when the store holds tip: the next write builds on it
// without a fetch, and the push's compare-and-swap finds out if it moved.
func (r *repo) saw(branch string, tip plumbing.Hash) bool {
	if tip.IsZero() {
		return false
	}
	if h, ok := r.held.tip(branch); ok {
		return h == tip // a held branch moves only with its held writes
	}
	if _, err := object.GetCommit(r.s, tip); err != nil {
		return false
	}
	return r.s.SetReference(plumbing.NewHashReference(trackingRef(branch), tip)) == nil
}

// fetch brings branch's objects into memory and returns its tip, zero when
// the branch (or the whole repository) is empty. Force-fetching follows a
// rewritten vectorflow/promote/ branch.
func (r *repo) fetch(ctx context.Context, remote Remote, branch string) (plumbing.Hash, error) {
	tracking := trackingRef(branch)
	if tip, ok := r.held.tip(branch); ok {
		// The remote's tip is older than what this process holds back.
		return tip, r.s.SetReference(plumbing.NewHashReference(tracking, tip))
	}
	err := r.remote.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec("+" + plumbing.NewBranchReferenceName(branch).String() + ":" + tracking.String())},
		Auth:       remote.Auth,
		Tags:       git.NoTags,
	})
	var noMatch git.NoMatchingRefSpecError
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.As(err, &noMatch), errors.Is(err, transport.ErrEmptyRemoteRepository):
		// The branch was never created or was deleted: forget our copy.
		_ = r.s.RemoveReference(tracking)
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, &RemoteError{Op: "fetch", URL: remote.URL, Branch: branch, Err: err}
	}
	ref, err := r.s.Reference(tracking)
	if err != nil {
		return plumbing.ZeroHash, &RemoteError{Op: "fetch", URL: remote.URL, Branch: branch, Err: err}
	}
	return ref.Hash(), nil
}

// cachedTip is the tip of branch as this process last fetched or pushed it.
func (r *repo) cachedTip(branch string) (plumbing.Hash, bool) {
	ref, err := r.s.Reference(trackingRef(branch))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	return ref.Hash(), true
}

// push sets branch to commit, only if the remote still has it at old
// (zero: absent). The command carries old, and the server swaps the ref
// atomically, so a concurrent writer's commit is never overwritten; a moved
// branch comes back as an error isMovedBranch recognizes. The pack holds only
// the objects made on top of base (the commit the new ones were built on,
// which the remote has): go-git's own push walks the whole history to find
// them, which grows with the repository.
func (r *repo) push(ctx context.Context, remote Remote, branch string, old, commit, base plumbing.Hash) error {
	if kept, err := r.keep([]refUpdate{{branch: branch, old: old, new: commit, base: base}}); kept {
		return err
	}
	objects, bases, err := r.newObjects(commit, base)
	if err != nil {
		return err
	}
	ep, sess, err := receivePackSession(remote)
	if err != nil {
		return err
	}
	defer sess.Close()
	dst := plumbing.NewBranchReferenceName(branch)
	req := packp.NewReferenceUpdateRequest()
	// Side-band carries hook output apart from the protocol, so a refusal
	// arrives with the server's reason.
	var messages bytes.Buffer
	req.Progress = &messages
	thin := r.receivers.takesThin(remote.URL) // as the remote last advertised
	if ep.Protocol == "http" || ep.Protocol == "https" {
		// Smart HTTP needs no advertisement before the POST: the server's
		// atomic check of old is the compare-and-swap, and skipping the
		// GET saves a round trip (and a server process) per push. Every
		// git server speaks report-status and side-band-64k.
		_ = req.Capabilities.Set(capability.ReportStatus)
		_ = req.Capabilities.Set(capability.Sideband64k)
	} else {
		adv, err := sess.AdvertisedReferencesContext(ctx)
		if err != nil {
			return err
		}
		refs, err := adv.AllReferences()
		if err != nil {
			return err
		}
		now := plumbing.ZeroHash
		if ref, err := refs.Reference(dst); err == nil {
			now = ref.Hash()
		}
		if now != old {
			return fmt.Errorf("%w: %s is at %s, expected %s", errBranchMoved, dst, hashOrNone(now), hashOrNone(old))
		}
		req = updateRequest(adv.Capabilities, &messages)
		thin = r.receivers.advertised(remote.URL, adv.Capabilities)
	}
	req.Commands = []*packp.Command{{Name: dst, Old: old, New: commit}}
	if err := r.sendPack(ctx, sess, req, objects, bases, thin, &messages); err != nil {
		// A refusal may mean the remote no longer takes thin packs; a
		// branch another writer moved says nothing of that.
		var answered *answeredPush
		if thin && errors.As(err, &answered) && !isMovedBranch(err) {
			r.receivers.forget(remote.URL)
		}
		return err
	}
	r.made.forget(commit, base)
	return r.s.SetReference(plumbing.NewHashReference(trackingRef(branch), commit))
}

// receivePackSession opens a push session to remote.
func receivePackSession(remote Remote) (*transport.Endpoint, transport.ReceivePackSession, error) {
	ep, err := transport.NewEndpoint(remote.URL)
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, err
	}
	sess, err := cl.NewReceivePackSession(ep, remote.Auth)
	if err != nil {
		return nil, nil, err
	}
	return ep, sess, nil
}

// updateRequest is a push request asking for what the server offers:
// side-band carries hook output apart from the protocol (into messages), so
// a refusal arrives with the server's reason.
func updateRequest(offered *capability.List, messages io.Writer) *packp.ReferenceUpdateRequest {
	req := packp.NewReferenceUpdateRequestFromCapabilities(offered)
	req.Progress = messages
	switch {
	case offered.Supports(capability.Sideband64k):
		_ = req.Capabilities.Set(capability.Sideband64k)
	case offered.Supports(capability.Sideband):
		_ = req.Capabilities.Set(capability.Sideband)
	default:
		req.Progress = nil
	}
	return req
}

// noThin is the capability a receive-pack advertises when it cannot fix
// thin packs (go-git names only the upload-pack side, thin-pack).
const noThin capability.Capability = "no-thin"

// takesThinPacks reports whether a server that advertised offered fixes
// thin packs: every git receive-pack does, unless it says no-thin.
func takesThinPacks(offered *capability.List) bool { return !offered.Supports(noThin) }

// sendPack sends req with objects packed (as deltas of the bases named,
// where the pack holds them; with thin, the newest version of a file or
// directory as a delta of the version the server holds, as git pushes),
// and reads the server's report: a refusal comes back as an *answeredPush
// carrying the server's messages, so the caller knows the push did not
// land.
func (r *repo) sendPack(ctx context.Context, sess transport.ReceivePackSession, req *packp.ReferenceUpdateRequest,
	objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash, thin bool, messages *bytes.Buffer) error {
	var held map[plumbing.Hash]plumbing.Hash
	if thin {
		held = heldVersions(objects, bases)
	}
	var pack bytes.Buffer
	if err := gitpack.WriteThin(&pack, r.s, objects, bases, held); err != nil {
		return fmt.Errorf("pack %d objects: %w", len(objects), err)
	}
	req.Packfile = io.NopCloser(&pack)
	status, err := sess.ReceivePack(ctx, req)
	switch {
	case err == nil && status == nil:
		err = errors.New("the remote sent no report of the push")
	case err == nil:
		err = status.Error()
	}
	if err == nil {
		return nil
	}
	if m := strings.TrimSpace(messages.String()); m != "" {
		err = fmt.Errorf("%w (remote: %s)", err, oneLine(m))
	}
	if status != nil || refusedOverHTTP(err) {
		err = &answeredPush{err}
	}
	return err
}

// answeredPush is a push the remote answered with a refusal (its report
// says why, or an HTTP status said no): the remote decided, unlike a push
// whose connection broke before the answer came.
type answeredPush struct{ err error }

func (e *answeredPush) Error() string { return e.err.Error() }
func (e *answeredPush) Unwrap() error { return e.err }

// refusedOverHTTP reports whether err is an HTTP answer refusing the
// request (4xx). A 5xx may come from a proxy after the server took the
// push, so it decides nothing.
func refusedOverHTTP(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrRepositoryNotFound) {
		return true
	}
	// go-git wraps other statuses in an UnexpectedError without Unwrap.
	var unexpected *plumbing.UnexpectedError
	var status *githttp.Err
	return errors.As(err, &unexpected) && errors.As(unexpected.Err, &status) &&
		status.StatusCode() >= 400 && status.StatusCode() < 500
}

// heldVersions names, for the newest version in objects of a file or
// directory, the version the server holds: the oldest of its versions,
// which bases names as replaced and objects does not list. A commit's
// tree is its parent's with what it wrote, so a replaced object the push
// does not send is in the tree of the commit it builds on, which the
// server has (the push compares and swaps from it): a promotion's push
// then sends each wide directory it rewrote as a few bytes, not whole.
func heldVersions(objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash) map[plumbing.Hash]plumbing.Hash {
	sent := make(map[plumbing.Hash]bool, len(objects))
	for _, h := range objects {
		sent[h] = true
	}
	held := map[plumbing.Hash]plumbing.Hash{}
	olders := slices.SortedFunc(maps.Keys(bases), func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, older := range olders {
		if sent[older] {
			continue
		}
		newest := bases[older]
		for range len(objects) { // bases has no cycle; bounded all the same
			next, ok := bases[newest]
			if !ok || !sent[next] {
				break
			}
			newest = next
		}
		if _, named := held[newest]; sent[newest] && !named {
			held[newest] = older
		}
	}
	return held
}

// newObjects lists the commits from commit back to base and the trees and
// blobs they changed relative to their parents: everything the remote, which
// has base, lacks. Commits this Writer made list what they wrote; others
// (a branch's commits the writer did not make) are found by walking trees.
// bases names, for a tree or blob that a newer commit replaced, the newer
// version (madeCommits.chain).
func (r *repo) newObjects(commit, base plumbing.Hash) (objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash, err error) {
	if objects, bases, ok := r.made.chain(commit, base); ok {
		return objects, bases, nil
	}
	return changedObjects(r.s, commit, base)
}

// changedObjects is newObjects found by comparing each commit's trees with
// its parent's.
func changedObjects(s storer.EncodedObjectStorer, commit, base plumbing.Hash) ([]plumbing.Hash, map[plumbing.Hash]plumbing.Hash, error) {
	seen := map[plumbing.Hash]bool{}
	bases := map[plumbing.Hash]plumbing.Hash{}
	// replaces records that newer took older's place at one path.
	replaces := func(newer, older plumbing.Hash) {
		if _, named := bases[older]; !named && !older.IsZero() && older != newer {
			bases[older] = newer
		}
	}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) bool {
		if seen[h] {
			return false
		}
		seen[h] = true
		out = append(out, h)
		return true
	}
	var diffTree func(tree, old plumbing.Hash) error
	diffTree = func(tree, old plumbing.Hash) error {
		if tree == old || !add(tree) {
			return nil
		}
		replaces(tree, old)
		t, err := object.GetTree(s, tree)
		if err != nil {
			return err
		}
		before := map[string]object.TreeEntry{}
		if !old.IsZero() {
			o, err := object.GetTree(s, old)
			if err != nil {
				return err
			}
			for _, e := range o.Entries {
				before[e.Name] = e
			}
		}
		for _, e := range t.Entries {
			prev, had := before[e.Name]
			switch {
			case had && prev.Hash == e.Hash:
			case e.Mode == filemode.Dir:
				oldSub := plumbing.ZeroHash
				if had && prev.Mode == filemode.Dir {
					oldSub = prev.Hash
				}
				if err := diffTree(e.Hash, oldSub); err != nil {
					return err
				}
			case e.Mode == filemode.Submodule:
			default:
				add(e.Hash)
				if had && prev.Mode != filemode.Dir && prev.Mode != filemode.Submodule {
					replaces(e.Hash, prev.Hash)
				}
			}
		}
		return nil
	}
	for h := commit; h != base && !h.IsZero(); {
		c, err := object.GetCommit(s, h)
		if err != nil {
			return nil, nil, err
		}
		add(h)
		parentTree := plumbing.ZeroHash
		next := plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			next = c.ParentHashes[0]
			p, err := object.GetCommit(s, next)
			if err != nil {
				return nil, nil, err
			}
			parentTree = p.TreeHash
		}
		if err := diffTree(c.TreeHash, parentTree); err != nil {
			return nil, nil, err
		}
		h = next
	}
	return out, bases, nil
}

func trackingRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", branch)
}

// pushOutcome is what a failed push turned out to be.
type pushOutcome int

const (
	pushRefused   pushOutcome = iota // the remote said no: terminal
	pushMoved                        // the branch moved: fetch, re-apply, retry
	pushLanded                       // the update took effect, the answer was lost
	pushUncertain                    // unknown yet: retry, reading the branch first
)

// classifyPush decides what a push error means. A moved branch is
// recognized by the message, a refusal by the remote's answer. Anything
// else (a broken connection, a server gone after receiving the push, a
// cancelled wait) says nothing about the push, which may well have been
// applied, so the remote is asked where the branch is now: at our commit
// the push landed, elsewhere than where we started it moved; still at the
// start, or when the remote cannot be asked, it is uncertain and retried
// from a fresh read, never reported as failed.
func (r *repo) classifyPush(ctx context.Context, remote Remote, branch string, old, pushed plumbing.Hash, err error) pushOutcome {
	if isMovedBranch(err) {
		return pushMoved
	}
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
		return pushRefused // nothing was written with credentials the remote refuses
	}
	var answered *answeredPush
	refused := errors.As(err, &answered)
	refs, lerr := r.remote.ListContext(ctx, &git.ListOptions{Auth: remote.Auth})
	if lerr != nil {
		if refused {
			return pushRefused
		}
		return pushUncertain
	}
	now := plumbing.ZeroHash
	for _, ref := range refs {
		if ref.Name() == plumbing.NewBranchReferenceName(branch) {
			now = ref.Hash()
		}
	}
	switch {
	case now == pushed:
		_ = r.s.SetReference(plumbing.NewHashReference(trackingRef(branch), pushed))
		return pushLanded
	case now != old:
		// Moved, perhaps on top of our commit: the retry's fresh read finds
		// our commits in the history if so.
		return pushMoved
	case refused:
		return pushRefused
	default:
		return pushUncertain
	}
}
