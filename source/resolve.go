package source

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// resolver fills a snapshot's indexes from the decoded objects and reports
// every reference that does not resolve as a Problem on the referring field.
type resolver struct {
	loader    *Loader
	ctx       context.Context
	snap      *Snapshot
	old, next *loadCache
	// vectorsRead counts the overlays whose vector was read, not cached.
	vectorsRead int
	// overlaysOpened counts the overlays read to find their kustomization
	// file, not found in a cache.
	overlaysOpened int
	// files is where each object came from, by kind and key.
	files      map[objectID]string
	landscapes map[string]landscapeRoot
	// fetched are landscape repositories already fetched for this load,
	// by URL and branch: the check whether the last snapshot still holds
	// fetched them.
	fetched map[[2]string]fetchedTree
	// last is the last load of the repository when old is its cache: the
	// stages it resolved may be taken as they are (reuseStage).
	last *loadedSnapshot
	// reusable are the stages the next load may take as they are, by key;
	// stagesReused counts the stages this load took from last.
	reusable     map[string]bool
	stagesReused int
	// conflictsReused is set when the configs' conflicts were last's.
	conflictsReused bool
	// sameDirs says, by landscape and directory, whether the directory
	// holds what it held in last (sameDir).
	sameDirs map[[2]string]bool
	// betweenSeen are the directories in between that
	// dropStagesBuiltOnStages read, with what each held ("" for nothing):
	// while they and every overlay hold the same, its answer stands.
	betweenSeen map[betweenDir]string
	// builtOnReused is set when that answer was last's.
	builtOnReused bool
}

// fetchedTree is one fetch of a landscape's own repository.
type fetchedTree struct {
	tree   repofs.Tree
	commit string
	err    error
}

// landscapeRoot is the tree a landscape's stages live in; ok is false when
// it could not be read (the Landscape then carries a Problem).
type landscapeRoot struct {
	url, branch, commit string
	tree                repofs.Tree
	root                string
	ok                  bool
	// own is true for a landscape in a repository (or branch) of its own.
	own bool
}

// index fills the per-kind maps, dropping duplicates (the first in file
// order wins) with a Problem on the later ones.
func (r *resolver) index(objects []Object) {
	s := r.snap
	rank := map[string]int{}
	for i, k := range ConfigKinds {
		rank[k] = i
	}
	// In kind order, then by key; each object's rank and key are made once,
	// not at each of the sort's comparisons, and each map is made at its
	// size, not grown through thousands of objects.
	ranks, keys, order := make([]int, len(objects)), make([]string, len(objects)), make([]int, len(objects))
	perKind := map[string]int{}
	for i, o := range objects {
		ranks[i], keys[i], order[i] = rank[o.Kind], objectKey(o), i
		perKind[o.Kind]++
	}
	s.Landscapes = make(map[string]*v1alpha1.Landscape, perKind[v1alpha1.LandscapeKind])
	s.Stages = make(map[string]*v1alpha1.Stage, perKind[v1alpha1.StageKind])
	s.Templates = make(map[string]*v1alpha1.VectorTemplate, perKind[v1alpha1.VectorTemplateKind])
	s.Configs = make(map[string]*v1alpha1.VectorPromotionConfig, perKind[v1alpha1.VectorPromotionConfigKind])
	s.Usages = make(map[string]*v1alpha1.StageVersionUsage, perKind[v1alpha1.StageVersionUsageKind])
	s.StageIndex = make(map[string]StageRef, perKind[v1alpha1.StageKind])
	s.Objects = make([]Object, 0, len(objects))
	r.files = make(map[objectID]string, len(objects))
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(ranks[a], ranks[b]); c != 0 {
			return c
		}
		return strings.Compare(keys[a], keys[b])
	})
	for _, i := range order {
		o := objects[i]
		id := objectID{o.Kind, keys[i]}
		if first, dup := r.files[id]; dup {
			r.problem(o, "metadata.name", fmt.Sprintf("duplicate %s %q: already defined in %s; rename or remove one", o.Kind, keys[i], first))
			continue
		}
		r.files[id] = o.File
		s.add(o, keys[i])
	}
}

// objectID is an object's kind and key (objectKey).
type objectID struct{ kind, key string }

// add appends an object to the snapshot and files its value under key
// (objectKey) in the map of its kind.
func (s *Snapshot) add(o Object, key string) {
	s.Objects = append(s.Objects, o)
	switch v := o.Value.(type) {
	case *v1alpha1.Landscape:
		s.Landscapes[o.Name] = v
	case *v1alpha1.Stage:
		s.Stages[key] = v
	case *v1alpha1.VectorTemplate:
		s.Templates[o.Name] = v
	case *v1alpha1.VectorPromotionConfig:
		s.Configs[o.Name] = v
	case *v1alpha1.StageVersionUsage:
		s.Usages[o.Name] = v
	}
}

func (r *resolver) problem(o Object, fieldPath, reason string) {
	r.snap.Problems = append(r.snap.Problems, Problem{File: o.File, Kind: o.Kind, Name: o.Name, Field: fieldPath, Reason: reason})
}

// landscape reads the tree a landscape's stages live in, once per load.
func (r *resolver) landscape(name string) (landscapeRoot, bool) {
	if lr, done := r.landscapes[name]; done {
		return lr, true
	}
	l, found := r.snap.Landscapes[name]
	if !found {
		return landscapeRoot{}, false
	}
	o := Object{File: r.files[objectID{v1alpha1.LandscapeKind, name}], Kind: v1alpha1.LandscapeKind, Name: name}
	s := r.snap
	lr := landscapeRoot{url: s.URL, branch: s.Branch, commit: s.Commit, tree: s.Tree, root: path.Clean(l.Spec.Path), ok: true}
	if repo := l.Spec.Repository; repo != nil && !(repo.URL == s.URL && (repo.Branch == "" || repo.Branch == s.Branch)) {
		// A landscape in another repository follows the config branch name
		// unless it names its own; a plain-directory config has none, so "main".
		lr.url, lr.branch = repo.URL, repo.Branch
		if lr.branch == "" {
			lr.branch = s.Branch
		}
		if lr.branch == "" {
			lr.branch = "main"
		}
		lr.own = true
		f, done := r.fetched[[2]string{lr.url, lr.branch}]
		if !done {
			f.tree, f.commit, f.err = r.loader.tree(r.ctx, lr.url, lr.branch)
		}
		tree, commit, err := f.tree, f.commit, f.err
		if err != nil {
			r.problem(o, "spec.repository.url", "cannot read the landscape repository: "+err.Error())
			lr.ok = false
		}
		lr.tree, lr.commit = tree, commit
	}
	if lr.ok && lr.root != "." {
		if st, err := lr.tree.Stat(lr.root); err != nil || !st.IsDir() {
			r.problem(o, "spec.path", fmt.Sprintf("directory %q does not exist in %s", lr.root, describeRepo(lr)))
			lr.ok = false
		}
	}
	if r.landscapes == nil {
		r.landscapes = map[string]landscapeRoot{}
	}
	r.landscapes[name] = lr
	return lr, true
}

// resolveStages indexes every stage whose landscape and overlay resolve,
// with the vector its overlay carries now.
func (r *resolver) resolveStages() {
	r.reusable = make(map[string]bool, len(r.snap.Stages))
	// An overlay whose vector no cache holds is read in the walk, in the
	// stages' order (a read budget then runs out at the same overlay every
	// time), and parsed once the walk is done, on every core: a cold load
	// parses thousands of kustomizations (1.8 s on one core at 10,000
	// stages).
	var unparsed []stageRead
	for _, o := range r.snap.Objects {
		stage, ok := o.Value.(*v1alpha1.Stage)
		if !ok {
			continue
		}
		lr, found := r.landscape(stage.Spec.Landscape)
		if !found {
			r.problem(o, "spec.landscape", fmt.Sprintf("Landscape %q not found: define it in %s or fix the name", stage.Spec.Landscape, r.snap.ConfigPath))
			continue
		}
		if !lr.ok {
			continue
		}
		overlay := path.Join(lr.root, stage.Spec.Path)
		if !within(lr.root, overlay) {
			r.problem(o, "spec.path", fmt.Sprintf("must stay inside the landscape root %q: %q resolves to %q", lr.root, stage.Spec.Path, overlay))
			continue
		}
		if r.reuseStage(o, stage, lr, overlay) {
			continue
		}
		if st, err := lr.tree.Stat(overlay); err != nil || !st.IsDir() {
			r.problem(o, "spec.path", fmt.Sprintf("overlay %q does not exist in %s", overlay, describeRepo(lr)))
			continue
		}
		hash, hashErr := lr.tree.Hash(overlay)
		files, known := r.old.kustomizations[hash]
		if hashErr != nil || !known {
			r.overlaysOpened++
			if kustomizationFile(lr.tree, overlay) == "" {
				r.problem(o, "spec.path", fmt.Sprintf("overlay %q has no kustomization.yaml", overlay))
				continue
			}
			if hashErr != nil {
				r.problem(o, "spec.path", fmt.Sprintf("cannot hash overlay %q: %v", overlay, hashErr))
				continue
			}
			files, known = kustomizationHashes(lr.tree, overlay)
		}
		if known {
			r.next.kustomizations[hash] = files
		}
		s := stageRead{o: o, stage: stage, lr: lr, overlay: overlay, hash: hash, key: hash + ":" + files,
			reusable: known && repofs.Unlinked(lr.tree, overlay)}
		var cached bool
		if s.vr, cached = r.old.vectors[s.key]; !cached {
			s.file, s.data, s.vr.err = overlays.ReadKustomization(lr.tree, overlay)
			unparsed = append(unparsed, s)
			continue
		}
		r.addStage(s)
	}
	parallel.Each(len(unparsed), func(i int) {
		if s := &unparsed[i]; s.vr.err == nil {
			s.vr.vector, s.vr.err = overlays.ParseStageVector(s.file, s.data)
		}
	})
	r.vectorsRead += len(unparsed)
	for _, s := range unparsed {
		r.addStage(s)
	}
}

// dropStagesBuiltOnStages takes out of the index, with a problem, each
// stage whose overlay's kustomization names another stage's overlay to
// build on (see builtOnStage), itself or through directories in between:
// a change to one of those moves the stage as much as one to its own
// file. validate's builds find it from what each build read too
// (BuildStages).
func (r *resolver) dropStagesBuiltOnStages() {
	if r.builtOnAsLast() {
		// Every overlay and directory in between holds what it held: no
		// stage builds on another's overlay now either (10 ms at 10,000
		// stages to find again).
		r.betweenSeen, r.builtOnReused = r.last.betweenSeen, true
		return
	}
	stageAt := r.snap.stageAt()
	between := betweenDirs{stageAt: stageAt, reached: map[betweenDir]reachedStage{}, seen: map[betweenDir]string{}}
	defer func() { r.betweenSeen = between.seen }()
	for _, o := range r.snap.Objects {
		if o.Kind != v1alpha1.StageKind {
			continue
		}
		k := objectKey(o)
		ref, ok := r.snap.StageIndex[k]
		if !ok {
			continue
		}
		for _, rel := range ref.Vector.BuildsOn {
			dir := path.Join(ref.Overlay, rel)
			if dir == ref.Overlay {
				continue
			}
			what := ""
			if other, ok := stageAt(ref, dir); ok {
				what = builtOnStage(ref.Overlay, dir+", the overlay", other, k)
			} else if via := between.stageUnder(ref, dir); via.stage != "" && via.stage != k {
				what = builtOnStage(ref.Overlay, via.path+", which builds on "+via.overlay+", the overlay", via.stage, k)
			}
			if what != "" {
				r.problem(o, "spec.path", what)
				delete(r.snap.StageIndex, k)
				delete(r.reusable, k)
				break
			}
		}
	}
}

// betweenDirs follows the directories an overlay builds on that are no
// stage's overlay, each once per load, to the first stage overlay one of
// them builds on. A file resource (.yaml, .yml, .json) is not followed,
// nor is a directory without a kustomization file that reads: kustomize
// would not build it, and validate says so.
type betweenDirs struct {
	stageAt func(ref StageRef, dir string) (string, bool)
	reached map[betweenDir]reachedStage
	seen    map[betweenDir]string // what each directory read held
}

// builtOnAsLast reports whether the last load's answer to which stages
// build on another's overlay still holds: it took every stage as it was
// (the same overlays, none refused then), and every directory in between
// it read holds what it held.
func (r *resolver) builtOnAsLast() bool {
	last := r.last
	if last == nil || last.betweenSeen == nil || r.stagesReused != len(r.snap.Stages) || len(r.snap.StageIndex) != len(last.snap.StageIndex) {
		return false
	}
	trees := map[[2]string]repofs.Tree{}
	for _, lr := range r.landscapes {
		if lr.ok {
			trees[[2]string{lr.url, lr.branch}] = lr.tree
		}
	}
	for d, then := range last.betweenSeen {
		tree := trees[[2]string{d.url, d.branch}]
		if tree == nil || treeHash(tree, d.dir) != then {
			return false
		}
	}
	return true
}

// linkedDir is what betweenDirs.seen holds for a directory its hash does
// not describe: no tree hash matches it.
const linkedDir = "\x00linked"

// treeHash is the hash of name in tree, "" when it cannot be read.
func treeHash(tree repofs.Tree, name string) string {
	h, err := tree.Hash(name)
	if err != nil {
		return ""
	}
	return h
}

type betweenDir struct{ url, branch, dir string }

// reachedStage is the stage whose overlay a directory builds on, and the
// directories in between, from the first ("a, which builds on b").
type reachedStage struct {
	stage, overlay, path string
}

func (b *betweenDirs) stageUnder(ref StageRef, dir string) reachedStage {
	key := betweenDir{ref.URL, ref.Branch, dir}
	if got, done := b.reached[key]; done {
		return got
	}
	b.reached[key] = reachedStage{} // a cycle back here reaches nothing more
	switch path.Ext(dir) {
	case ".yaml", ".yml", ".json":
		return reachedStage{}
	}
	if ref.Tree == nil {
		return reachedStage{}
	}
	file, data, err := overlays.ReadKustomization(ref.Tree, dir)
	// A link could take the directory or its kustomization from elsewhere,
	// which its hash does not cover: such a directory is read again.
	b.seen[key] = linkedDir
	if repofs.Unlinked(ref.Tree, dir) && (err != nil || repofs.Unlinked(ref.Tree, file)) {
		b.seen[key] = treeHash(ref.Tree, dir)
	}
	if err != nil {
		return reachedStage{}
	}
	sv, err := overlays.ParseStageVector(file, data)
	if err != nil {
		return reachedStage{}
	}
	var got reachedStage
	for _, rel := range sv.BuildsOn {
		next := path.Join(dir, rel)
		if next == dir {
			continue
		}
		if other, ok := b.stageAt(ref, next); ok {
			got = reachedStage{stage: other, overlay: next, path: dir}
			break
		}
		if via := b.stageUnder(ref, next); via.stage != "" {
			got = reachedStage{stage: via.stage, overlay: via.overlay, path: dir + ", which builds on " + via.path}
			break
		}
	}
	b.reached[key] = got
	return got
}

// stageAt finds the stage whose overlay is dir of the repository and
// branch holding ref's overlay.
func (s *Snapshot) stageAt() func(ref StageRef, dir string) (string, bool) {
	type place struct{ url, branch, dir string }
	overlayOf := make(map[place]string, len(s.StageIndex))
	for k, ref := range s.StageIndex {
		overlayOf[place{ref.URL, ref.Branch, ref.Overlay}] = k
	}
	return func(ref StageRef, dir string) (string, bool) {
		k, ok := overlayOf[place{ref.URL, ref.Branch, dir}]
		return k, ok
	}
}

// builtOnStage says why stage self, whose overlay builds on what (another
// stage's overlay or its kustomization file), is refused.
func builtOnStage(overlay, what, other, self string) string {
	return fmt.Sprintf("overlay %q builds on %s of Stage %s: promotions into %s rewrite its kustomization file, "+
		"so each would change what %s runs without a promotion of its own or its approvals, and %s would report a vector it does not run; "+
		"build both overlays on a shared base, not one on the other", overlay, what, other, other, self, self)
}

// reuseStage takes the stage as the last load resolved it when nothing it
// was resolved from changed: the same name, landscape (in the same
// repository, branch and root) and overlay path, and an overlay with the
// same content, as the directory holding it tells at once for all its
// overlays, or else its own hash. Only a stage the last load marked
// reusable qualifies: its overlay was no link, so its content is that of
// the directory holding it, and its vector was decided by that content
// (no kustomization file was a link). A commit that changes one overlay,
// or none (a template bumped), then reads no other: resolving every
// overlay again took 45-65 ms at 10,000 stages.
func (r *resolver) reuseStage(o Object, stage *v1alpha1.Stage, lr landscapeRoot, overlay string) bool {
	last := r.last
	if last == nil {
		return false
	}
	key := objectKey(o)
	ref, ok := last.snap.StageIndex[key]
	if !ok || !last.reusable[key] || ref.Overlay != overlay || ref.Landscape != stage.Spec.Landscape || ref.Name != stage.Name ||
		!r.sameLandscape(stage.Spec.Landscape, lr) {
		return false
	}
	if !r.sameDir(stage.Spec.Landscape, lr, path.Dir(overlay)) {
		if h, err := lr.tree.Hash(overlay); err != nil || h != ref.OverlayHash || !repofs.Unlinked(lr.tree, overlay) {
			return false
		}
	}
	files, decided := r.old.kustomizations[ref.OverlayHash]
	vkey := ref.OverlayHash + ":" + files
	vr, cached := r.old.vectors[vkey]
	if !decided || !cached || vr.err != nil {
		return false
	}
	r.next.kustomizations[ref.OverlayHash], r.next.vectors[vkey] = files, vr
	ref.Tree, ref.Commit = lr.tree, lr.commit
	r.snap.StageIndex[key] = ref
	r.reusable[key] = true
	r.stagesReused++
	return true
}

// sameLandscape reports whether landscape name resolved to lr in the same
// repository, branch and root as in the last load.
func (r *resolver) sameLandscape(name string, lr landscapeRoot) bool {
	before, ok := r.last.roots[name]
	return ok && before.ok && lr.url == before.url && lr.branch == before.branch && lr.root == before.root
}

// sameDir reports whether dir of landscape name's tree holds what it held
// in the last load, once per directory and load.
func (r *resolver) sameDir(name string, lr landscapeRoot, dir string) bool {
	k := [2]string{name, dir}
	if same, ok := r.sameDirs[k]; ok {
		return same
	}
	now, err := lr.tree.Hash(dir)
	same := err == nil
	if same {
		then, err := r.last.roots[name].tree.Hash(dir)
		same = err == nil && now == then
	}
	if r.sameDirs == nil {
		r.sameDirs = map[[2]string]bool{}
	}
	r.sameDirs[k] = same
	return same
}

// stageRead is a stage whose overlay resolved, and its vector once read:
// from a cache, or parsed from its kustomization file's data.
type stageRead struct {
	o                  Object
	stage              *v1alpha1.Stage
	lr                 landscapeRoot
	overlay, hash, key string
	file               string
	data               []byte
	vr                 vectorResult
	// reusable says the next load may take the stage as it is, when the
	// directory holding its overlay keeps its content (reuseStage).
	reusable bool
}

// addStage indexes a stage by its overlay's vector, or reports why the
// vector could not be read.
func (r *resolver) addStage(s stageRead) {
	r.next.vectors[s.key] = s.vr
	if s.vr.err != nil {
		r.problem(s.o, "spec.path", fmt.Sprintf("cannot read the vector of overlay %q: %v", s.overlay, s.vr.err))
		return
	}
	key := objectKey(s.o)
	if s.reusable {
		r.reusable[key] = true
	}
	r.snap.StageIndex[key] = StageRef{
		Landscape: s.stage.Spec.Landscape, Name: s.stage.Name,
		URL: s.lr.url, Branch: s.lr.branch, Commit: s.lr.commit,
		Overlay: s.overlay, OverlayHash: s.hash, Vector: s.vr.vector, Tree: s.lr.tree,
	}
}

// kustomizationHashes is the content, through links, of every file name
// kustomize looks for in overlay: what its vector is read from (a link out
// of the overlay reads as where it leads; two files are refused). decided
// says the overlay's own hash decides it: none of those names is a link,
// whose target could appear or change while the overlay stays the same.
func kustomizationHashes(tree repofs.Tree, overlay string) (hashes string, decided bool) {
	names := konfig.RecognizedKustomizationFileNames()
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = "-"
		if h, err := tree.Hash(path.Join(overlay, name)); err == nil {
			parts[i] = h
		}
	}
	entries, err := tree.ReadDir(overlay)
	decided = err == nil
	for _, e := range entries {
		if slices.Contains(names, e.Name()) && e.Type()&fs.ModeSymlink != 0 {
			decided = false
		}
	}
	return strings.Join(parts, ","), decided
}

// resolveTemplates checks every base exists and that no base chain loops.
func (r *resolver) resolveTemplates() {
	templates := r.snap.Templates
	for _, o := range r.snap.Objects {
		t, ok := o.Value.(*v1alpha1.VectorTemplate)
		if !ok || t.Spec.Base == nil {
			continue
		}
		if _, found := templates[t.Spec.Base.Name]; !found {
			r.problem(o, "spec.base.name", fmt.Sprintf("VectorTemplate %q not found", t.Spec.Base.Name))
			continue
		}
		if cycle := baseCycle(templates, o.Name); cycle != nil {
			r.problem(o, "spec.base.name", "base chain forms a cycle: "+strings.Join(cycle, " → ")+"; one template must have no base")
		}
	}
}

// baseCycle follows the base chain from start and returns it when it comes
// back to start (start → ... → start), or nil when start is not on a cycle.
// Templates that only lead into a cycle are not on it, and their chain
// ends in the cycle's own Problem.
func baseCycle(templates map[string]*v1alpha1.VectorTemplate, start string) []string {
	chain := []string{start}
	seen := map[string]bool{start: true}
	for cur := templates[start]; cur != nil && cur.Spec.Base != nil; {
		next := cur.Spec.Base.Name
		chain = append(chain, next)
		if next == start {
			return chain
		}
		if seen[next] {
			return nil
		}
		seen[next] = true
		cur = templates[next]
	}
	return nil
}

// resolveConfigs checks every config's source and target exist, and that
// the configs can work together (no cycle, one config per target stage).
func (r *resolver) resolveConfigs() {
	if r.last != nil && r.stagesReused == len(r.snap.Stages) && len(r.snap.StageIndex) == len(r.last.snap.StageIndex) &&
		sameConfigGraph(r.last.snap.Configs, r.snap.Configs) {
		// The same configs between the same stages conflict as they did
		// (20 ms at 10,000 configs to find again).
		r.snap.conflicts = r.last.snap.conflicts
		r.conflictsReused = true
	} else {
		r.snap.conflicts = configConflicts(r.snap)
	}
	var conflicts map[string]field.ErrorList
	if len(r.snap.conflicts) > 0 {
		// A problem names each other config's file too: worded again,
		// which only a repository with conflicts pays for.
		conflicts = r.snap.validateConfigs(func(name string) string {
			return fmt.Sprintf("%s (%s)", name, r.files[objectID{v1alpha1.VectorPromotionConfigKind, name}])
		})
	}
	for _, o := range r.snap.Objects {
		c, ok := o.Value.(*v1alpha1.VectorPromotionConfig)
		if !ok {
			continue
		}
		for _, e := range conflicts[c.Name] {
			r.problem(o, e.Field, e.ErrorBody())
		}
		src := c.Spec.Source
		switch src.Kind {
		case v1alpha1.VectorTemplateKind:
			if _, found := r.snap.Templates[src.Name]; !found {
				r.problem(o, "spec.source.name", fmt.Sprintf("VectorTemplate %q not found", src.Name))
			}
		case v1alpha1.StageKind:
			r.checkStageRef(o, "spec.source", src.Landscape, src.Name)
		}
		r.checkStageRef(o, "spec.target", c.Spec.Target.Landscape, c.Spec.Target.Name)
	}
}

// sameConfigGraph reports whether now holds the configs before did as far
// as their conflicts go (v1alpha1.ValidateConfigsAt): the same names, each
// from the same source to the same target. A file rewritten for anything
// else (an approval policy, a TTL) decodes into new objects of the same
// graph; an unchanged one is the very same objects (the decode cache's).
func sameConfigGraph(before, now map[string]*v1alpha1.VectorPromotionConfig) bool {
	if len(before) != len(now) {
		return false
	}
	for name, c := range now {
		b := before[name]
		if b != c && (b == nil || b.Spec.Source != c.Spec.Source || b.Spec.Target != c.Spec.Target) {
			return false
		}
	}
	return true
}

func (r *resolver) checkStageRef(o Object, fieldPath, landscape, name string) {
	if _, found := r.snap.Landscapes[landscape]; !found {
		r.problem(o, fieldPath+".landscape", fmt.Sprintf("Landscape %q not found", landscape))
		return
	}
	if _, found := r.snap.Stages[StageKey(landscape, name)]; !found {
		r.problem(o, fieldPath+".name", fmt.Sprintf("Stage %q not found in landscape %q", name, landscape))
	}
}

// within reports whether p is root or below it; both are clean and relative.
func within(root, p string) bool {
	if p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return false
	}
	return root == "." || p == root || strings.HasPrefix(p, root+"/")
}

func describeRepo(lr landscapeRoot) string {
	if lr.branch == "" {
		return RedactURL(lr.url)
	}
	return RedactURL(lr.url) + "@" + lr.branch
}
