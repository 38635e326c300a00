package source

import "context"

// Commits are what a load of a branch read: the branch's commit and the
// commits of the landscape repositories of its own it read. A load that
// finds each where it was reads the same snapshot.
type Commits struct {
	Commit     string         `json:"commit"`
	Landscapes []BranchCommit `json:"landscapes,omitempty"`
}

// BranchCommit is the commit a branch of a repository was at.
type BranchCommit struct {
	URL    string `json:"url"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
}

// ReadCommits returns the commits the last load of branch of the repository
// at url read; false when nothing was loaded, or when the load read a plain
// directory, which may change unseen.
func (l *Loader) ReadCommits(url, branch string) (Commits, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.snaps[url+"#"+branch]
	if !ok || last.commit == "" {
		return Commits{}, false
	}
	read := Commits{Commit: last.commit}
	for _, lc := range last.landscape {
		read.Landscapes = append(read.Landscapes, BranchCommit{URL: lc.url, Branch: lc.branch, Commit: lc.commit})
	}
	return read, true
}

// StillAt fetches branch of the repository at url and each landscape
// branch read names, and says whether every one is still at the commit
// read. A branch that cannot be fetched is not: a load says why.
func (l *Loader) StillAt(ctx context.Context, url, branch string, read Commits) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range append([]BranchCommit{{URL: url, Branch: branch, Commit: read.Commit}}, read.Landscapes...) {
		if b.Commit == "" || IsLocalPath(b.URL) && !isGitRepository(b.URL) {
			return false
		}
		repo, err := l.repository(b.URL)
		if err != nil {
			return false
		}
		if at, err := repo.Fetch(ctx, b.Branch); err != nil || at.String() != b.Commit {
			return false
		}
	}
	return true
}
