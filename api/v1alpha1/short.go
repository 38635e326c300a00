package v1alpha1

import "strings"

// The short forms of the commits and digests that status fields hold, as
// logs, tables and messages show them: 12 hex characters, as `git log
// --abbrev=12` and `docker images` do, enough to tell them apart, short
// enough to read.

// ShortCommit is the first 12 characters of a commit hash.
func ShortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// ShortDigest keeps the algorithm and 12 hex characters of a digest.
func ShortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}
