// Package overlays is what a stage runs, read two ways: from its overlay's
// kustomization file (ReadStageVector: the vector annotation and the images
// entries), and from a build of it (Images: every container's image), with
// kustomize's own rules for matching the two. source reads overlays and
// render checks builds with the same rules; it is a leaf below both, so
// that source never imports render.
package overlays
