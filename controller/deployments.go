package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// reportGrace is how long a report on a revision the landscape's branch
// does not hold yet is kept for later passes: the deployer may have fetched
// a commit the pass's snapshot had not seen. After it, the report is
// dropped, so a report on a revision that never comes cannot linger.
const reportGrace = 10 * time.Minute

// maxLineage bounds the first-parent history read to order revisions; a
// revision deeper than that is not on the branch as far as reports go.
const maxLineage = 100_000

// stageFacts is what a pass reads from Git for the StageVersions and the
// reports: the overlays to render, and each report resolved to its stages
// with the vector the overlay names at its revision.
type stageFacts struct {
	renders map[string]reconcilers.StageRender
	// rendersOther is Inputs.RendersOther.
	rendersOther map[string]string
	reports      map[string][]reconcilers.StageReport
	positions    func(stage, revision string) (int, bool)
	// later are reports on revisions the branch does not hold yet, to be
	// tried again by a later pass.
	later []deployments.Report
	// ignored says, per report that concerns no stage, why; logged only.
	ignored []string
}

// readStageFacts renders the overlays whose vector has no StageVersion yet
// and resolves the reports. An error is for Git failing to answer; the
// caller puts the reports back.
func (c *Controller) readStageFacts(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, reports []deployments.Report, now time.Time) (stageFacts, error) {
	f := stageFacts{renders: map[string]reconcilers.StageRender{}, rendersOther: map[string]string{}, reports: map[string][]reconcilers.StageReport{}}
	keys := pass.NeedsRender(snap, state)
	named := stagesNamingVectors(snap, state)
	// Built on every core first (a cold pass renders every overlay); the
	// loops below then take each from the render cache, so a later pass
	// builds only the overlays whose build reads something that changed.
	// The StageVersions need the outputs, the checks only their images.
	if c.renderer != nil {
		c.renderer.BuildAll(ctx, overlaysOf(snap, keys))
	}
	images, errs := c.overlayRenderer().ImagesAll(ctx, overlaysOf(snap, named))
	if err := ctx.Err(); err != nil {
		return stageFacts{}, err
	}
	for i, key := range named {
		ref := snap.StageIndex[key]
		if why := rendersOtherThan(images[i], errs[i], ref.Vector, state.Vectors[ref.Vector.Vector].Spec.Components, c.imageNames.Parts); why != "" {
			f.rendersOther[key] = why
		}
	}
	for _, key := range keys {
		ref := snap.StageIndex[key]
		r, err := c.renderStage(ctx, ref.Tree, ref.Overlay, ref.Commit)
		if ctx.Err() != nil {
			return stageFacts{}, ctx.Err()
		}
		if err == nil {
			f.renders[key] = r
		} else {
			c.opts.Log.Info("StageVersion recorded without its render", "stage", key, "error", err.Error())
		}
	}
	lineages := map[string]*lineage{}
	lineageOf := func(ref source.StageRef) (*lineage, error) {
		id := ref.URL + "#" + ref.Branch
		if l, ok := lineages[id]; ok {
			return l, nil
		}
		l, err := c.lineage(ref)
		if err != nil {
			return nil, err
		}
		lineages[id] = l
		return l, nil
	}
	rendered := map[string]bool{}
	deployedBy := stagesByDeployment(snap)
	for _, rep := range reports {
		keys := deployedBy.stages(rep.Deployment)
		if len(keys) == 0 {
			f.ignored = append(f.ignored, fmt.Sprintf("%s %s/%s: no stage names it in spec.deployment",
				rep.Deployment.Kind, rep.Deployment.Namespace, rep.Deployment.Name))
			continue
		}
		revision := normalizeRevision(rep.Revision)
		for _, key := range keys {
			ref := snap.StageIndex[key]
			if ref.Branch == "" || !plumbing.IsHash(revision) {
				f.ignored = append(f.ignored, fmt.Sprintf("stage %s: revision %q is not a commit of a Git branch", key, rep.Revision))
				continue
			}
			l, err := lineageOf(ref)
			if err != nil {
				return stageFacts{}, err
			}
			if _, ok := l.positions[plumbing.NewHash(revision)]; !ok {
				if now.Sub(rep.At) < reportGrace {
					f.later = append(f.later, rep)
				} else {
					f.ignored = append(f.ignored, fmt.Sprintf("stage %s: revision %s is not on branch %s", key, revision, ref.Branch))
				}
				continue
			}
			sr := reconcilers.StageReport{Revision: revision, Outcome: rep.Outcome, Reason: rep.Reason, Message: rep.Message,
				At: rep.At, Channel: rep.Channel}
			sv, err := l.vector(revision, ref.Overlay)
			if err != nil {
				return stageFacts{}, err
			}
			sr.Vector = sv.Vector
			// What runs there is what the overlay's render runs: a
			// report is a deployment, rare beside passes, so its revision
			// is rendered (from the cache when it was before) even where
			// the entries seem to decide, since a change outside the
			// overlay (a base running the image from another repository)
			// can leave them matching no container.
			if v := state.Vectors[sv.Vector]; v != nil {
				why := sv.Contradiction(v.Spec.Components)
				if why == "" {
					tree, err := l.tree(revision)
					if err != nil {
						return stageFacts{}, err
					}
					if why, err = c.rendersOther(ctx, tree, ref.Overlay, sv, v.Spec.Components); err != nil {
						return stageFacts{}, err
					}
				}
				if why != "" {
					f.ignored = append(f.ignored, fmt.Sprintf("stage %s: revision %s runs no vector: its overlay names %s, but %s", key, revision, sv.Vector, why))
					sr.Vector = ""
				}
			}
			name := reconcilers.StageVersionName(ref.Landscape, ref.Name, sr.Vector)
			if _, known := state.StageVersions[name]; sr.Vector != "" && !known && !rendered[name] {
				tree, err := l.tree(revision)
				if err != nil {
					return stageFacts{}, err
				}
				if r, err := c.renderStage(ctx, tree, ref.Overlay, revision); err == nil {
					sr.Render = &r
					rendered[name] = true
				}
			}
			f.reports[key] = append(f.reports[key], sr)
		}
	}
	f.positions = func(stage, revision string) (int, bool) {
		ref, ok := snap.StageIndex[stage]
		if !ok || ref.Branch == "" {
			return 0, false
		}
		l, err := lineageOf(ref)
		if err != nil {
			return 0, false
		}
		if !plumbing.IsHash(revision) {
			return 0, false
		}
		p, ok := l.positions[plumbing.NewHash(revision)]
		return p, ok
	}
	return f, nil
}

// overlaysOf lists the overlays of the stages keys names, each read
// (stagesNamingVectors names only those).
func overlaysOf(snap *source.Snapshot, keys []string) []render.Overlay {
	out := make([]render.Overlay, 0, len(keys))
	for _, key := range keys {
		if ref := snap.StageIndex[key]; ref.Tree != nil {
			out = append(out, render.Overlay{Tree: ref.Tree, Dir: ref.Overlay})
		}
	}
	return out
}

// stagesNamingVectors lists the stages (by StageKey) whose overlay names a
// vector the state holds and contradicts none of its components in its
// entries. Whether they run it only their render tells: a base, a patch, a
// transformer or a missing entry can run something else, with no entry
// saying so.
func stagesNamingVectors(snap *source.Snapshot, state *reconcilers.State) []string {
	var out []string
	for _, key := range snap.ResolvedStageKeys() {
		ref := snap.StageIndex[key]
		v := state.Vectors[ref.Vector.Vector]
		if ref.Vector.Vector == "" || v == nil || ref.Tree == nil {
			continue
		}
		if ref.Vector.Contradiction(v.Spec.Components) == "" {
			out = append(out, key)
		}
	}
	return out
}

// deploymentIndex finds the stages a deployment deploys.
type deploymentIndex map[string][]string

func deploymentKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// stagesByDeployment indexes the resolved stages by their spec.deployment.
func stagesByDeployment(snap *source.Snapshot) deploymentIndex {
	x := deploymentIndex{}
	for _, key := range snap.StageKeys() {
		d := snap.Stages[key].Spec.Deployment
		if _, ok := snap.StageIndex[key]; !ok || d == nil {
			continue
		}
		k := deploymentKey(d.Kind, d.Namespace, d.Name)
		x[k] = append(x[k], key)
	}
	return x
}

// stages lists the stages whose spec.deployment names d. A stage that
// leaves the namespace out matches any namespace.
func (x deploymentIndex) stages(d v1alpha1.DeploymentReference) []string {
	keys := x[deploymentKey(d.Kind, d.Namespace, d.Name)]
	if d.Namespace != "" {
		keys = append(slices.Clip(keys), x[deploymentKey(d.Kind, "", d.Name)]...)
	}
	return keys
}

// normalizeRevision takes the commit out of a deployer's revision: Flux
// writes `main@sha1:<commit>`, older Flux `main/<commit>`.
func normalizeRevision(rev string) string {
	if i := strings.LastIndex(rev, "sha1:"); i >= 0 {
		return rev[i+len("sha1:"):]
	}
	if i := strings.LastIndex(rev, "/"); i >= 0 {
		return rev[i+1:]
	}
	return rev
}

// renderStage renders overlay in tree: the digest and inventory a
// StageVersion records.
func (c *Controller) renderStage(ctx context.Context, tree repofs.Tree, overlay, commit string) (reconcilers.StageRender, error) {
	if tree == nil {
		return reconcilers.StageRender{}, errors.New("the stage's tree was not read")
	}
	out, err := c.overlayRenderer().BuildContext(ctx, tree, overlay)
	if err != nil {
		return reconcilers.StageRender{}, err
	}
	inv, err := overlays.Inventory(out)
	if err != nil {
		return reconcilers.StageRender{}, err
	}
	return reconcilers.StageRender{Commit: commit, Digest: overlays.RenderDigest(out), Inventory: inv}, nil
}

// lineage is a branch's first-parent history: the position of each commit
// counted from the branch's root, so a report's revision is ordered by the
// branch's history, never by a timestamp.
type lineage struct {
	tip       string
	positions map[plumbing.Hash]int
	repo      *git.Repository
	// vectors remembers an overlay's vector and entries at a revision, by
	// `<revision> <overlay>`: a deployer reports the same revision on every
	// reconcile, and a commit never changes.
	vectors map[string]overlays.StageVector
}

// vector is what overlay names at revision, and its images entries (no
// vector for none, or for an overlay that does not read there).
func (l *lineage) vector(revision, overlay string) (overlays.StageVector, error) {
	key := revision + " " + overlay
	if v, ok := l.vectors[key]; ok {
		return v, nil
	}
	tree, err := l.tree(revision)
	if err != nil {
		return overlays.StageVector{}, err
	}
	var v overlays.StageVector
	if sv, err := overlays.ReadStageVector(tree, overlay); err == nil {
		v = sv
	}
	if len(l.vectors) >= maxRememberedVectors {
		clear(l.vectors)
	}
	l.vectors[key] = v
	return v, nil
}

// maxRememberedVectors bounds lineage.vectors.
const maxRememberedVectors = 1 << 16

func (l *lineage) tree(revision string) (repofs.Tree, error) {
	commit, err := l.repo.CommitObject(plumbing.NewHash(revision))
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", revision, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read the tree of commit %s: %w", revision, err)
	}
	return repofs.GitTree(tree), nil
}

// lineage reads the first-parent history of the branch ref was read from,
// at the snapshot's commit. The loader fetched it; a branch whose tip did not
// move is not walked again.
func (c *Controller) lineage(ref source.StageRef) (*lineage, error) {
	repo, err := c.opts.Loader.Repository(ref.URL)
	if err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", source.RedactURL(ref.URL), err)
	}
	id := ref.URL + "#" + ref.Branch
	old, ok := c.lineages[id]
	if ok && old.tip == ref.Commit {
		return old, nil
	}
	l := &lineage{tip: ref.Commit, repo: repo.Repo(), vectors: map[string]overlays.StageVector{}}
	if ok {
		l.vectors = old.vectors // commits do not change with the tip
	}
	// Walk back from the tip until a commit the last walk placed: its
	// position, and those of its ancestors, stand (a commit's first-parent
	// history never changes); the old tip's commits above it that the new
	// tip does not hold (a force push) are left out.
	var chain []plumbing.Hash
	base := 0
	for h := plumbing.NewHash(ref.Commit); len(chain) < maxLineage; {
		if ok {
			if p, known := old.positions[h]; known {
				base = p
				break
			}
		}
		commit, err := repo.Repo().CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("read the history of branch %s of %s at %s: %w", ref.Branch, source.RedactURL(ref.URL), h, err)
		}
		chain = append(chain, h)
		if commit.NumParents() == 0 {
			break
		}
		h = firstParent(commit)
	}
	l.positions = make(map[plumbing.Hash]int, base+len(chain))
	if base > 0 {
		for h, p := range old.positions {
			if p <= base {
				l.positions[h] = p
			}
		}
	}
	for i, h := range chain {
		l.positions[h] = base + len(chain) - i
	}
	c.lineages[id] = l
	return l, nil
}

func firstParent(c *object.Commit) plumbing.Hash { return c.ParentHashes[0] }
