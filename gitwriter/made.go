package gitwriter

import (
	"maps"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// madeCommits remembers, for each commit a Writer made, its parent and
// the objects its edit wrote: all a remote holding the parent lacks, and
// what each of them replaced, so a push of several commits sends the
// versions of a directory or file as deltas of one another. A
// push then lists what it sends from memory instead of decoding the
// changed trees and their old versions again (two 400 KB trees for each
// wide directory of a large repository: 40 ms of a promotion at 10,000
// stages). It is shared by the repos of one Writer, since a state commit
// made on one branch's repo is pushed with another's (ApplyAlong). Safe
// for concurrent use.
type madeCommits struct {
	mu      sync.Mutex
	commits map[plumbing.Hash]madeCommit
}

type madeCommit struct {
	parent   plumbing.Hash
	objects  []plumbing.Hash // the commit's trees and blobs, then the commit
	replaced map[plumbing.Hash]plumbing.Hash
}

// maxMadeCommits bounds the record: a commit leaves it when pushed, so
// only pushes that failed for good leave theirs behind. Past the bound the
// record starts again, and a push of a forgotten commit walks its trees.
// A held run (run --once) pushes all its passes' commits at once: 10,000
// promotions and their state commits at 10,000 automatic stages, so the
// bound is well above that; an entry is about 0.7 KB (45 MB at the bound).
const maxMadeCommits = 1 << 16

func newMadeCommits() *madeCommits {
	return &madeCommits{commits: map[plumbing.Hash]madeCommit{}}
}

// add records commit, made on parent with the trees and blobs written,
// and what each of them replaced at its path.
func (m *madeCommits) add(commit, parent plumbing.Hash, written []plumbing.Hash, replaced map[plumbing.Hash]plumbing.Hash) {
	if m == nil {
		return
	}
	objects := make([]plumbing.Hash, 0, len(written)+1)
	objects = append(append(objects, written...), commit)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.commits) >= maxMadeCommits {
		m.commits = map[plumbing.Hash]madeCommit{}
	}
	m.commits[commit] = madeCommit{parent: parent, objects: objects, replaced: maps.Clone(replaced)}
}

// chain returns the objects of the commits from commit back to base, the
// newest first, when every one of them was made here; ok is false
// otherwise, and for a commit that is base (nothing to send is then
// decided by the caller). bases names, for an object an older commit
// wrote, the newer version that replaced it: git's own packs keep the
// newest version whole and older ones as deltas of it.
func (m *madeCommits) chain(commit, base plumbing.Hash) (objects []plumbing.Hash, bases map[plumbing.Hash]plumbing.Hash, ok bool) {
	if m == nil || commit == base {
		return nil, nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Once each: two files of one content are one blob, and a pack
	// holding an object twice is refused.
	seen := map[plumbing.Hash]bool{}
	bases = map[plumbing.Hash]plumbing.Hash{}
	for h := commit; h != base; {
		c, found := m.commits[h]
		if !found {
			return nil, nil, false
		}
		for _, o := range c.objects {
			if !seen[o] {
				seen[o] = true
				objects = append(objects, o)
			}
			if older, ok := c.replaced[o]; ok {
				if _, named := bases[older]; !named {
					bases[older] = o
				}
			}
		}
		h = c.parent
	}
	return objects, bases, true
}

// forget drops the commits from commit back to base: the remote has them.
func (m *madeCommits) forget(commit, base plumbing.Hash) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for h := commit; h != base; {
		c, found := m.commits[h]
		if !found {
			return
		}
		delete(m.commits, h)
		h = c.parent
	}
}
