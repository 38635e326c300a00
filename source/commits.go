package source

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
)

// BranchCommit is the commit a branch of a repository was at; the zero
// hash for a branch that was not there.
type BranchCommit struct {
	URL    string `json:"url"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
}

// ReadCommits returns the branches the last load of branch of the
// repository at url read, each at the commit it read: that branch first,
// then those of the landscape repositories of its own. A load that finds
// each where it was reads the same snapshot. false when nothing was
// loaded, or when the load read a plain directory, which may change
// unseen.
func (l *Loader) ReadCommits(url, branch string) ([]BranchCommit, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.snaps[url+"#"+branch]
	if !ok || last.commit == "" {
		return nil, false
	}
	read := []BranchCommit{{URL: url, Branch: branch, Commit: last.commit}}
	for _, lc := range last.landscape {
		read = append(read, BranchCommit{URL: lc.url, Branch: lc.branch, Commit: lc.commit})
	}
	return read, true
}

// StillAt says whether every branch is still at its commit on its server.
// It lists each repository's branches once and fetches no object. A
// repository that cannot be listed, or a plain directory, is not still
// anywhere: a load says why.
func (l *Loader) StillAt(ctx context.Context, branches []BranchCommit) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	listed := map[string]map[string]plumbing.Hash{}
	for _, b := range branches {
		heads, ok := listed[b.URL]
		if !ok {
			if IsLocalPath(b.URL) && !isGitRepository(b.URL) {
				return false
			}
			repo, err := l.repository(b.URL)
			if err != nil {
				return false
			}
			if heads, err = repo.Heads(ctx); err != nil {
				return false
			}
			listed[b.URL] = heads
		}
		if heads[b.Branch].String() != b.Commit {
			return false
		}
	}
	return true
}
