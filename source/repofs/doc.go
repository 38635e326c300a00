// Package repofs is the file tree of a repository as the flow reads it: a
// commit (GitTree) or a directory (DirTree), every read bounded by Limits and
// kept inside the repository (EscapeError). source reads configs and
// overlays through it and render builds from it; it is its own package, a
// leaf that imports nothing of vectorflow, so that source never imports
// render and data goes one way: source → render.
package repofs
