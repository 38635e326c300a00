package source

// Repository returns the loader's repository for url, the one its loads
// fetch into, so the shell can read older commits of a branch it loaded
// (the overlay at a revision a deployer reported) without a second clone.
func (l *Loader) Repository(url string) (*Repository, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.repository(url)
}
