// Package gitwriter executes promotions: it edits an overlay's
// kustomization, commits it signed with the promotion's trailers, and pushes
// it to the target branch with a compare-and-swap, refusing what the
// target's promotion history says is stale. Its files do I/O (fetch, push,
// signing); what to write is decided before, in reconcilers.
package gitwriter
