package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/webhook"
)

// watchSet is what a controller's decisions depend on outside its state
// branch: repositories (normalized URLs) and images.
type watchSet struct {
	repositories map[string]bool
	images       map[string]bool
}

// watchedBy lists the config repository, every landscape repository, and
// every image a template names.
func watchedBy(snap *source.Snapshot) watchSet {
	w := watchSet{repositories: map[string]bool{webhook.NormalizeRepoURL(snap.URL): true}, images: map[string]bool{}}
	// Thousands of stages live in a few repositories: each URL is
	// normalized once (7 ms a pass at 10,000 stages otherwise).
	seen := map[string]bool{snap.URL: true}
	for _, ref := range snap.StageIndex {
		if !seen[ref.URL] {
			seen[ref.URL] = true
			w.repositories[webhook.NormalizeRepoURL(ref.URL)] = true
		}
	}
	for _, t := range snap.Templates {
		for _, c := range t.Spec.Components {
			image := c.Image
			if image == "" {
				image = c.Name
			}
			w.images[normalizeImage(image)] = true
		}
	}
	return w
}

// Watches reports whether an event about repository url (any spelling) or
// image concerns this controller.
func (c *Controller) Watches(url, image string) bool {
	c.watchMu.RLock()
	defer c.watchMu.RUnlock()
	if url != "" {
		n := webhook.NormalizeRepoURL(url)
		if n == webhook.NormalizeRepoURL(c.opts.URL) || c.watched.repositories[n] {
			return true
		}
	}
	return image != "" && c.watched.images[normalizeImage(image)]
}

// normalizeImage is the repository image names, tag and digest dropped and
// Docker Hub's defaults spelled out (nginx is index.docker.io/library/nginx),
// so a registry's event matches however the template writes the image. An
// image the name package refuses is compared as written, in lower case.
func normalizeImage(image string) string {
	if repo, ok := overlays.RepositoryOf(image); ok {
		return repo
	}
	name, _, _ := overlays.SplitImage(strings.ToLower(image))
	return name
}

// inputsKey identifies what a decision depends on: the config commit, every
// overlay, the state tip and the registry's answers.
func inputsKey(snap *source.Snapshot, stateTip plumbing.Hash, reg registryResolution) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", snap.Commit, stateTip)
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", key, ref.OverlayHash, ref.Vector.Vector)
	}
	for _, t := range keys.Sorted(reg.resolved) {
		for _, comp := range keys.Sorted(reg.resolved[t]) {
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", t, comp, reg.resolved[t][comp])
		}
	}
	for _, t := range keys.Sorted(reg.problems) {
		fmt.Fprintf(h, "%s\x00%s\x00", t, reg.problems[t])
	}
	return hex.EncodeToString(h.Sum(nil))
}
