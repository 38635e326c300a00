package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/readonly"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// DefaultConfigPath is where the promotion configs live in a repository.
const DefaultConfigPath = "vectorflow"

// Snapshot is one consistent reading of a declarative repository: the config
// objects at one commit, their resolved references, and every stage overlay
// with the vector it carries. Treat it as read-only: a snapshot may share
// trees with the next one.
type Snapshot struct {
	URL    string `json:"url"`
	Branch string `json:"branch,omitempty"`
	// Commit is empty for a plain directory.
	Commit     string      `json:"commit,omitempty"`
	ConfigPath string      `json:"configPath"`
	Tree       repofs.Tree `json:"-"`

	// Objects are all config objects that decoded and validated, ordered by
	// kind (ConfigKinds) then name.
	Objects    []Object                                   `json:"-"`
	Landscapes map[string]*v1alpha1.Landscape             `json:"-"`
	Stages     map[string]*v1alpha1.Stage                 `json:"-"` // by StageKey
	Templates  map[string]*v1alpha1.VectorTemplate        `json:"-"`
	Configs    map[string]*v1alpha1.VectorPromotionConfig `json:"-"`
	// Usages are the StageVersionUsages users declare, by name.
	Usages map[string]*v1alpha1.StageVersionUsage `json:"-"`

	// StageIndex holds the resolved overlay of every stage whose landscape
	// and overlay resolve, by StageKey.
	StageIndex map[string]StageRef `json:"-"`

	// Problems are every fault found, sorted by file, object and field.
	Problems []Problem `json:"problems,omitempty"`

	// conflicts are what the load found wrong between its configs, for
	// ConfigConflicts; nil in a snapshot no Loader made.
	conflicts map[string][]string
	// configNames, stageKeys and resolvedKeys are the keys of Configs,
	// Stages and StageIndex, sorted once by the load (see ConfigNames).
	configNames, stageKeys, resolvedKeys []string
}

// ConfigNames are the names of the configs, sorted; StageKeys and
// ResolvedStageKeys are the keys of Stages and of StageIndex, sorted. A
// pass walks them in order a dozen times, so a loaded snapshot sorts them
// once; one made or changed by hand has them sorted at each call. The
// slices are shared: do not change them.
func (s *Snapshot) ConfigNames() []string { return sortedOnce(s.configNames, s.Configs) }

// StageKeys: see ConfigNames.
func (s *Snapshot) StageKeys() []string { return sortedOnce(s.stageKeys, s.Stages) }

// ResolvedStageKeys: see ConfigNames.
func (s *Snapshot) ResolvedStageKeys() []string { return sortedOnce(s.resolvedKeys, s.StageIndex) }

// sortedOnce is sorted, the keys of m, when they are still m's (a map
// changed by hand has other keys, and most often another count of them),
// or m's keys sorted afresh.
func sortedOnce[V any](sorted []string, m map[string]V) []string {
	if sorted != nil && len(sorted) == len(m) {
		return sorted
	}
	return slices.Sorted(maps.Keys(m))
}

// sortKeys sorts the keys ConfigNames and the others return, once the
// snapshot is resolved.
func (s *Snapshot) sortKeys(last *Snapshot) {
	if last == nil {
		last = &Snapshot{}
	}
	s.configNames = keys.SortedLike(s.Configs, last.configNames)
	s.stageKeys = keys.SortedLike(s.Stages, last.stageKeys)
	s.resolvedKeys = keys.SortedLike(s.StageIndex, last.resolvedKeys)
}

// ConfigConflicts are the problems configs have together (a cycle, a
// shared target stage), by config name, worded as a config's status says
// them. A loaded snapshot knows them (the load checks them anyway, and a
// decision over 10,000 configs would spend a tenth of its time again) and
// keeps what its load found; one made by hand has them worked out at each
// call, so it may change between calls.
func (s *Snapshot) ConfigConflicts() map[string][]string {
	if s.conflicts != nil {
		return s.conflicts
	}
	return configConflicts(s)
}

// configConflicts checks the snapshot's configs together, naming the other
// configs of a conflict by name.
func configConflicts(s *Snapshot) map[string][]string {
	out := map[string][]string{}
	for name, errs := range s.validateConfigs(nil) {
		for _, e := range errs {
			out[name] = append(out[name], e.Error())
		}
	}
	return out
}

// validateConfigs is ValidateConfigsAt over the snapshot's configs, stages
// compared by overlay; describe names the other configs of a conflict.
func (s *Snapshot) validateConfigs(describe func(name string) string) map[string]field.ErrorList {
	configs := make([]*v1alpha1.VectorPromotionConfig, 0, len(s.Configs))
	for _, c := range s.Configs {
		configs = append(configs, c)
	}
	return v1alpha1.ValidateConfigsAt(configs, describe, s.OverlayOf)
}

// StageRef is where a stage's overlay lives and what it holds now.
type StageRef struct {
	Landscape string `json:"landscape"`
	Name      string `json:"name"`
	// URL, Branch and Commit name the repository holding the overlay: the
	// config repository, or the landscape's own.
	URL    string `json:"url"`
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Overlay is the overlay directory inside that repository.
	Overlay     string               `json:"overlay"`
	OverlayHash string               `json:"overlayHash"`
	Vector      overlays.StageVector `json:"vector"`
	Tree        repofs.Tree          `json:"-"`
}

// OverlayOf names where a resolved stage's overlay is, its directory in its
// repository and branch, so that two stages on one overlay are seen as one;
// "" for a stage that does not resolve.
func (s *Snapshot) OverlayOf(landscape, name string) string {
	ref, ok := s.StageIndex[StageKey(landscape, name)]
	if !ok {
		return ""
	}
	return ref.Overlay + " of " + RedactURL(ref.URL) + "@" + ref.Branch
}

// StageKey is how stages are keyed: stage names are unique per landscape.
func StageKey(landscape, name string) string { return landscape + "/" + name }

// Object looks up a config object by kind and name (a Stage by StageKey).
func (s *Snapshot) Object(kind, name string) (Object, bool) {
	for _, o := range s.Objects {
		if o.Kind == kind && objectKey(o) == name {
			return o, true
		}
	}
	return Object{}, false
}

// filesOf indexes the file of each object of kind by its name (a Stage's:
// landscape/name), the first one as Object finds it: a problem per object
// names its file without a scan of every object.
func (s *Snapshot) filesOf(kind string) map[string]string {
	files := map[string]string{}
	for _, o := range s.Objects {
		if o.Kind != kind {
			continue
		}
		k := objectKey(o)
		if _, seen := files[k]; !seen {
			files[k] = o.File
		}
	}
	return files
}

// Builder is what source asks of render: kustomize builds of a directory
// of a tree. *render.Renderer is one. The shell (controller, cmd) passes it
// in, so that source never imports render and data goes one way:
// source → render.
type Builder interface {
	Build(tree repofs.Tree, dir string) ([]byte, error)
	BuildContext(ctx context.Context, tree repofs.Tree, dir string) ([]byte, error)
	// BuildReads is BuildContext that also names, sorted, the files of
	// tree the build read.
	BuildReads(ctx context.Context, tree repofs.Tree, dir string) ([]byte, []string, error)
	// BuildWithOrigins is BuildContext with every object annotated with
	// the file it came from (repofs.OriginAnnotation).
	BuildWithOrigins(ctx context.Context, tree repofs.Tree, dir string) ([]byte, error)
}

// Options configure a Loader.
type Options struct {
	// ConfigPath is the config directory inside the repository; default
	// DefaultConfigPath.
	ConfigPath string
	// Auth gives the credentials for a repository URL; nil means none.
	Auth func(url string) Auth
	// Renderer builds a config directory holding a kustomization file
	// (render.NewRenderer gives one); a load of such a directory fails
	// without it.
	Renderer Builder
	// Progress receives the servers' fetch progress (for a terminal); nil
	// means none.
	Progress io.Writer
	// Limits bound what one load reads from each repository, and every file
	// before kustomize or kyaml parse it; zero fields take the defaults.
	Limits repofs.Limits
	// CacheDir holds, for the next Loader or process, the fetched objects
	// of every repository (OpenCached) and the decoded config directories
	// of commits (CacheDir/configs); "" keeps them in memory.
	CacheDir string
	// SaveInBackground writes the stage vectors to disk beside what the
	// process does next, instead of inside the load that read them (tens
	// of milliseconds at 10,000 stages); SaveCaches waits for the writes.
	// For a caller that calls SaveCaches before it exits.
	SaveInBackground bool
	// ReadOnlySnapshots makes a load hand out the snapshot the loader
	// keeps instead of a copy (60 ms at 10,000 stages, every load): its
	// caller, and whatever that hands it to, only ever reads its maps,
	// objects and slices. In a test binary the next load checks it did.
	ReadOnlySnapshots bool
}

// Loader loads snapshots. It keeps one in-memory Repository per URL, so
// every load after the first fetches only new objects, and caches decoded
// configs by the config directory's tree hash and stage vectors by the
// overlay's tree hash, so an unchanged repository reloads without decoding.
type Loader struct {
	opts Options

	mu     sync.Mutex
	repos  map[string]*Repository
	caches map[string]*loadCache // by URL and branch
	disk   *configDisk           // nil: memory only
	// diskHits counts config decodes found on disk, filesDecoded the
	// config files decoded rather than reused, vectorsRead the stage
	// overlays read rather than found in a cache, and overlaysOpened the
	// overlay directories read to find their kustomization file, for tests.
	diskHits, filesDecoded, vectorsRead, overlaysOpened int
	// keys remembers the verdict on each approver and signer key the
	// configs name: a monorepo names the same few in thousands of them.
	keys *v1alpha1.KeyVerdicts
	// trees are the commit trees last loaded, by URL: a load of the same
	// commit again (an unchanged pass) reuses the tree, and a load of a
	// new commit the directories and sizes the last one decoded, instead of
	// reading each from the store once more.
	trees map[string]loadedTree
	// snaps are the snapshots last resolved, by URL and branch: a load of
	// the same commit, every landscape repository at the same commit too,
	// is a copy of it (see reuse).
	snaps map[string]loadedSnapshot
	// snapshotsReused counts the loads that were, for tests,
	// stagesReused the stages loads took from the load before, and
	// conflictsReused the loads that took its configs' conflicts, and
	// builtOnReused those that took which stages build on another's overlay.
	snapshotsReused, stagesReused, conflictsReused, builtOnReused int
	// vectorsSaved is when the stage vectors of each repository and
	// branch were last written to disk, and unsaved the caches of later
	// loads whose vectors wait to be (see saveVectors).
	vectorsSaved map[string]time.Time
	unsaved      map[string]*loadCache
	// checkSnapshots keeps a copy of each snapshot handed out read-only
	// to check it against (readonly.Checked).
	checkSnapshots bool
	// saving is closed when the background write started last has ended
	// (each waits for the one before: the last word is the latest).
	saving chan struct{}
}

// vectorsSaveEvery bounds how often a loader writes a repository's stage
// vectors to disk: each write is the whole set (19 ms at 10,000 stages,
// BenchmarkStoreVectors), and a running run, or a run --once carrying a
// change down a chain of stages, loads a new commit after every promotion.
// What waits costs a restart only the overlays that changed meanwhile.
const vectorsSaveEvery = time.Minute

// loadedSnapshot is the last resolution of a repository and branch: its
// commit, the commit of each landscape repository of its own it read, and
// the snapshot, which no caller changes (each holds a copy, or reads it).
type loadedSnapshot struct {
	commit    string
	landscape []landscapeCommit
	snap      *Snapshot
	// roots are the landscapes its stages live in, as resolved, cache the
	// load cache it left, and reusable the stages a later load may take
	// as they are (resolver.reuseStage).
	roots    map[string]landscapeRoot
	cache    *loadCache
	reusable map[string]bool
	// betweenSeen is resolver.betweenSeen: what dropStagesBuiltOnStages
	// read beyond the overlays.
	betweenSeen map[betweenDir]string
	// pristine is a copy of snap to check it against, kept in a test
	// binary when snap is handed out read-only.
	pristine *Snapshot
}

type landscapeCommit struct {
	url, branch, commit string
	tree                repofs.Tree
}

type loadedTree struct {
	// store is the object store the tree reads from: one fetched afresh
	// (a damaged or deleted cache) holds none of the old one's objects.
	store   *git.Repository
	commit  plumbing.Hash
	tree    repofs.Tree
	objects *repofs.GitObjects // of store
}

type loadCache struct {
	configs map[string]decodedConfig
	vectors map[string]vectorResult
	// kustomizations are the hashes of each overlay's kustomization files
	// (kustomizationHashes), by the overlay's hash, for overlays where no
	// kustomization file is a link: the overlay's hash then decides them,
	// so a new process need not read thousands of overlay directories.
	kustomizations map[string]string
}

type decodedConfig struct {
	objects  []Object
	problems []Problem
	// files say which of objects and problems each plain config file gave,
	// in order, so the next load decodes only the files that changed; none
	// for a directory kustomize built.
	files []fileDecode
}

// fileDecode is one config file's share of a decodedConfig: its path, the
// hash of the content decoded ("" when it could not be read, which is never
// reused), and how many objects and problems it gave.
type fileDecode struct {
	file, hash        string
	objects, problems int
}

type vectorResult struct {
	vector overlays.StageVector
	err    error
	// kept: the vector's JSON on disk gives it back exactly (it was read
	// from there, or checked when stored), so a store need not check it.
	kept bool
}

// NewLoader returns a Loader with empty caches.
func NewLoader(opts Options) *Loader {
	if opts.ConfigPath == "" {
		opts.ConfigPath = DefaultConfigPath
	}
	return &Loader{opts: opts, repos: map[string]*Repository{}, caches: map[string]*loadCache{},
		disk: newConfigDisk(opts.CacheDir, opts.ConfigPath, opts.Limits), keys: v1alpha1.NewKeyVerdicts(),
		vectorsSaved: map[string]time.Time{}, unsaved: map[string]*loadCache{}, checkSnapshots: readonly.Checked()}
}

// Load reads branch of the repository at url (or the plain directory at a
// local path that is not a Git repository; branch is then ignored). The
// error is only for a repository that cannot be read at all; every fault
// inside it is a Problem in the snapshot.
func (l *Loader) Load(ctx context.Context, url, branch string) (*Snapshot, error) {
	return l.load(ctx, url, branch, func() (repofs.Tree, string, error) { return l.tree(ctx, url, branch) })
}

// LoadThen is Load calling fetched once the fetch has brought the branch,
// and what it fetches along (Repository.FetchAlso), while the snapshot is
// still to be resolved: the caller reads what came along meanwhile, on
// the core the resolving leaves idle. fetched is not called when the
// fetch fails. It runs under the loader's lock: it must not wait for the
// loader.
func (l *Loader) LoadThen(ctx context.Context, url, branch string, fetched func()) (*Snapshot, error) {
	return l.load(ctx, url, branch, func() (repofs.Tree, string, error) {
		tree, commit, err := l.tree(ctx, url, branch)
		if err == nil {
			fetched()
		}
		return tree, commit, err
	})
}

// LoadAt reads commit of the repository at url as Load reads branch's
// tip, without fetching: the commit must be in the store already, as one
// this process fetched or wrote is. It is how a run that holds its own
// writes back (gitwriter.Writer.Hold) reads what it wrote: a fetch would
// bring back the remote's older tip.
func (l *Loader) LoadAt(ctx context.Context, url, branch string, commit plumbing.Hash) (*Snapshot, error) {
	return l.load(ctx, url, branch, func() (repofs.Tree, string, error) { return l.treeAt(url, commit) })
}

// LoadDir reads the directory dir as it is on disk, whether or not it is a
// Git checkout: what a pre-merge check of a working tree wants.
func (l *Loader) LoadDir(ctx context.Context, dir string) (*Snapshot, error) {
	// Bounded like a commit's tree: a working tree's files are as
	// untrusted as a pushed commit's.
	return l.load(ctx, dir, "", func() (repofs.Tree, string, error) { return l.limited(dirTree(dir)) })
}

// LoadRevision reads the commit that revision names in the repository at
// url: anything git understands (a commit hash, a tag, a branch, HEAD,
// HEAD~1). A local repository is read in place, detached HEAD included; a
// remote one is fetched with its branches and tags first.
func (l *Loader) LoadRevision(ctx context.Context, url, revision string) (*Snapshot, error) {
	return l.load(ctx, url, "", func() (repofs.Tree, string, error) { return l.revisionTree(ctx, url, revision) })
}

func (l *Loader) load(ctx context.Context, url, branch string, read func() (repofs.Tree, string, error)) (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap := &Snapshot{URL: url, Branch: branch, ConfigPath: l.opts.ConfigPath}
	// A new process reads the stage vectors an earlier one kept while its
	// fetch waits for the server (19 ms at 1,000 stages).
	keptFor := url + "#" + branch
	var kept chan loadCache
	if l.disk != nil && branch != "" && l.caches[keptFor] == nil {
		kept = make(chan loadCache, 1)
		go func() {
			vectors, kustomizations := l.disk.loadVectors(keptFor)
			kept <- loadCache{vectors: vectors, kustomizations: kustomizations}
		}()
	}
	tree, commit, err := read()
	if err != nil {
		return nil, err
	}
	if commit == "" {
		snap.Branch = ""
	}
	snap.Tree, snap.Commit = tree, commit

	cacheKey := url + "#" + snap.Branch
	l.checkReadOnly(cacheKey)
	l.saveDueVectors()
	// Everything a snapshot holds follows from the commits it read: an
	// idle pass of a running run takes the last one instead of resolving
	// thousands of stages again.
	reused, fetched := l.reuse(ctx, cacheKey, snap, commit)
	if reused != nil {
		return reused, nil
	}
	persist := commit != "" && l.disk != nil // a directory on disk may change while read
	old := l.caches[cacheKey]
	if old == nil {
		old = &loadCache{}
		switch {
		case persist && kept != nil && cacheKey == keptFor:
			k := <-kept
			old.vectors, old.kustomizations = k.vectors, k.kustomizations
		case persist:
			old.vectors, old.kustomizations = l.disk.loadVectors(cacheKey)
		}
	}
	// Only what this load used is kept, so the caches never outgrow the
	// repository.
	// Sized as the last load's: most loads hold what it held.
	next := &loadCache{configs: map[string]decodedConfig{}, vectors: make(map[string]vectorResult, len(old.vectors)),
		kustomizations: make(map[string]string, len(old.kustomizations))}
	defer func() { l.caches[cacheKey] = next }()

	decoded, err := l.decodeConfig(ctx, tree, old, next, persist)
	if err != nil {
		return nil, err
	}
	snap.Problems = append(snap.Problems, decoded.problems...)
	r := resolver{loader: l, ctx: ctx, snap: snap, old: old, next: next, fetched: fetched}
	if last, ok := l.snaps[cacheKey]; ok && last.cache == old {
		r.last = &last
	}
	r.index(decoded.objects)
	r.resolveStages()
	r.dropStagesBuiltOnStages()
	r.resolveTemplates()
	r.resolveConfigs()
	if err := ctx.Err(); err != nil {
		return nil, err // a snapshot cut short is not a true one
	}
	l.vectorsRead += r.vectorsRead
	l.overlaysOpened += r.overlaysOpened
	l.stagesReused += r.stagesReused
	if r.builtOnReused {
		l.builtOnReused++
	}
	if r.conflictsReused {
		l.conflictsReused++
	}
	if persist && (r.vectorsRead > 0 || len(next.kustomizations) > len(old.kustomizations)) {
		l.saveVectors(cacheKey, next)
	}
	sortProblems(snap.Problems)
	snap.sortKeys(l.snaps[cacheKey].snap)
	l.remember(cacheKey, snap, &r)
	// snap holds the decode cache's own objects, as its memory does: the
	// caller gets a copy it may change, or snap to read.
	return l.handOut(snap, &Snapshot{URL: snap.URL, Branch: snap.Branch, Commit: snap.Commit, ConfigPath: snap.ConfigPath, Tree: snap.Tree}, nil), nil
}

// handOut fills into, whose identity and tree are set, with s for a
// caller: a copy, or s itself with ReadOnlySnapshots. Its stages read
// through the trees through maps s's trees to (a tree not in it stays).
func (l *Loader) handOut(s, into *Snapshot, through map[repofs.Tree]repofs.Tree) *Snapshot {
	if !l.opts.ReadOnlySnapshots {
		return s.copyThrough(into, through)
	}
	c := into
	// Clipped, so that an append makes a slice of its own.
	c.Objects, c.Problems = slices.Clip(s.Objects), slices.Clip(s.Problems)
	c.Landscapes, c.Stages, c.Templates, c.Configs, c.Usages = s.Landscapes, s.Stages, s.Templates, s.Configs, s.Usages
	c.StageIndex = s.StageIndex
	for _, ref := range s.StageIndex {
		if _, ok := through[ref.Tree]; ok {
			c.StageIndex = stageIndexThrough(s.StageIndex, through)
			break
		}
	}
	c.conflicts, c.configNames, c.stageKeys, c.resolvedKeys = s.conflicts, s.configNames, s.stageKeys, s.resolvedKeys
	return c
}

// checkReadOnly panics, in a test binary, when the snapshot last handed out
// read-only for cacheKey was changed since: a change would reach every
// later snapshot that shares its objects.
func (l *Loader) checkReadOnly(cacheKey string) {
	last, ok := l.snaps[cacheKey]
	if !ok || last.pristine == nil {
		return
	}
	if what := snapshotChange(last.pristine, last.snap); what != "" {
		panic(fmt.Sprintf("source: the snapshot of %s was changed after a load handed it out read-only: %s", cacheKey, what))
	}
}

// snapshotChange names what differs between a snapshot and its copy (the
// trees aside, whose caches fill as they are read), or is "".
func snapshotChange(pristine, s *Snapshot) string {
	if len(pristine.Objects) != len(s.Objects) {
		return fmt.Sprintf("%d objects, were %d", len(s.Objects), len(pristine.Objects))
	}
	for i, o := range s.Objects {
		p := pristine.Objects[i]
		if o.File != p.File || o.Kind != p.Kind || o.Name != p.Name || !reflect.DeepEqual(o.Value, p.Value) {
			return fmt.Sprintf("%s/%s of %s", o.Kind, o.Name, o.File)
		}
	}
	if what := sameObjects(pristine.Landscapes, s.Landscapes) + sameObjects(pristine.Stages, s.Stages) +
		sameObjects(pristine.Templates, s.Templates) + sameObjects(pristine.Configs, s.Configs) + sameObjects(pristine.Usages, s.Usages); what != "" {
		return what
	}
	if len(pristine.StageIndex) != len(s.StageIndex) {
		return "the stage index"
	}
	for k, ref := range s.StageIndex {
		p, ok := pristine.StageIndex[k]
		ref.Tree, p.Tree = nil, nil
		if !ok || !reflect.DeepEqual(ref, p) {
			return "the stage index at " + k
		}
	}
	if !reflect.DeepEqual(pristine.Problems, s.Problems) {
		return "the problems"
	}
	return ""
}

// sameObjects names a key whose object differs between two maps, or is "".
func sameObjects[T any](pristine, m map[string]*T) string {
	if len(pristine) != len(m) {
		return fmt.Sprintf("a map of %d objects, was %d", len(m), len(pristine))
	}
	for k, o := range m {
		if !reflect.DeepEqual(pristine[k], o) {
			return "the object at " + k
		}
	}
	return ""
}

// saveVectors writes the stage vectors a load used to disk, for the next
// process: at once the first time for a repository and branch, then at
// most once a vectorsSaveEvery; meanwhile the last load's vectors wait in
// unsaved. Called with l.mu held.
func (l *Loader) saveVectors(cacheKey string, next *loadCache) {
	if saved, ok := l.vectorsSaved[cacheKey]; ok && l.disk.now().Sub(saved) < vectorsSaveEvery {
		l.unsaved[cacheKey] = next
		return
	}
	l.writeVectors(cacheKey, next)
}

// writeVectors writes the stage vectors of next to disk now. Called with
// l.mu held.
func (l *Loader) writeVectors(cacheKey string, next *loadCache) {
	l.vectorsSaved[cacheKey] = l.disk.now()
	delete(l.unsaved, cacheKey)
	if !l.opts.SaveInBackground {
		markKept(next.vectors, l.disk.storeVectors(cacheKey, next.vectors, next.kustomizations))
		return
	}
	// next is only read once its load has ended, and marked under l.mu.
	before, done := l.saving, make(chan struct{})
	l.saving = done
	go func() {
		defer close(done)
		if before != nil {
			<-before
		}
		written := l.disk.storeVectors(cacheKey, next.vectors, next.kustomizations)
		l.mu.Lock()
		defer l.mu.Unlock()
		markKept(next.vectors, written)
	}()
}

// markKept marks the vectors written to disk, so the next write takes them
// as they are instead of checking that they read back the same.
func markKept(vectors map[string]vectorResult, written []string) {
	for _, k := range written {
		v := vectors[k]
		v.kept = true
		vectors[k] = v
	}
}

// saveDueVectors writes the waiting vectors whose time has come, so that an
// idle running run writes what its last promotions read. Called with l.mu
// held.
func (l *Loader) saveDueVectors() {
	for cacheKey, next := range l.unsaved {
		l.saveVectors(cacheKey, next)
	}
}

// SaveCaches writes to disk what the loader holds back for the next
// process (the stage vectors of its latest loads); call it when a run
// settles and before the process exits. Without a cache directory it does
// nothing.
func (l *Loader) SaveCaches() {
	l.mu.Lock()
	for cacheKey, next := range l.unsaved {
		l.writeVectors(cacheKey, next)
	}
	saving := l.saving
	l.mu.Unlock()
	if saving != nil {
		<-saving
	}
}

// reuse hands out the snapshot last resolved for cacheKey when it
// read commit and each landscape repository of its own is still at the
// commit it read, reading through this load's trees (snap's, and the
// landscapes' fetched now, whose read budgets are fresh). Otherwise it
// returns nil and the landscape repositories it fetched, for the resolver.
func (l *Loader) reuse(ctx context.Context, cacheKey string, snap *Snapshot, commit string) (*Snapshot, map[[2]string]fetchedTree) {
	last, ok := l.snaps[cacheKey]
	if !ok || commit == "" || last.commit != commit {
		return nil, nil
	}
	fetched := map[[2]string]fetchedTree{}
	through := map[repofs.Tree]repofs.Tree{last.snap.Tree: snap.Tree}
	same := true
	for _, lc := range last.landscape {
		var f fetchedTree
		f.tree, f.commit, f.err = l.tree(ctx, lc.url, lc.branch)
		fetched[[2]string{lc.url, lc.branch}] = f
		if f.err != nil || f.commit == "" || f.commit != lc.commit {
			same = false
			continue
		}
		through[lc.tree] = f.tree
	}
	if !same {
		return nil, fetched
	}
	l.snapshotsReused++
	return l.handOut(last.snap, snap, through), nil
}

// remember keeps a snapshot resolved from a commit, with the commits of
// the landscape repositories it read. It is kept as it is: its objects are
// the decode cache's, which nothing changes (a load and a reuse hand out
// copies, or the snapshot itself to read).
func (l *Loader) remember(cacheKey string, snap *Snapshot, r *resolver) {
	landscapes := r.landscapes
	if snap.Commit == "" {
		delete(l.snaps, cacheKey)
		return
	}
	last := loadedSnapshot{commit: snap.Commit}
	seen := map[[2]string]bool{}
	for _, lr := range landscapes {
		if !lr.own || seen[[2]string{lr.url, lr.branch}] {
			continue
		}
		if lr.commit == "" {
			delete(l.snaps, cacheKey) // a plain directory may change unseen
			return
		}
		seen[[2]string{lr.url, lr.branch}] = true
		last.landscape = append(last.landscape, landscapeCommit{url: lr.url, branch: lr.branch, commit: lr.commit, tree: lr.tree})
	}
	last.snap = snap
	last.roots, last.cache, last.reusable, last.betweenSeen = landscapes, r.next, r.reusable, r.betweenSeen
	if l.opts.ReadOnlySnapshots && l.checkSnapshots {
		last.pristine = snap.copyThrough(&Snapshot{}, nil)
	}
	if l.snaps == nil {
		l.snaps = map[string]loadedSnapshot{}
	}
	l.snaps[cacheKey] = last
}

// stageIndexThrough is a copy of index whose stages read through the
// trees through maps their trees to (a tree not in it stays).
func stageIndexThrough(index map[string]StageRef, through map[repofs.Tree]repofs.Tree) map[string]StageRef {
	out := make(map[string]StageRef, len(index))
	for k, ref := range index {
		if t, ok := through[ref.Tree]; ok {
			ref.Tree = t
		}
		out[k] = ref
	}
	return out
}

// copyThrough fills into, whose identity and tree are set, with a copy of
// s that no caller of s can change, its stages reading through the trees
// through maps s's trees to (a tree not in it stays).
func (s *Snapshot) copyThrough(into *Snapshot, through map[repofs.Tree]repofs.Tree) *Snapshot {
	c := into
	c.Objects = make([]Object, 0, len(s.Objects))
	c.Landscapes = make(map[string]*v1alpha1.Landscape, len(s.Landscapes))
	c.Stages = make(map[string]*v1alpha1.Stage, len(s.Stages))
	c.Templates = make(map[string]*v1alpha1.VectorTemplate, len(s.Templates))
	c.Configs = make(map[string]*v1alpha1.VectorPromotionConfig, len(s.Configs))
	c.Usages = make(map[string]*v1alpha1.StageVersionUsage, len(s.Usages))
	for _, o := range s.Objects {
		o.Value = o.Value.DeepCopyObject().(configObject)
		c.add(o, objectKey(o))
	}
	c.StageIndex = stageIndexThrough(s.StageIndex, through)
	c.Problems = slices.Clone(s.Problems)
	// Never changed once made, so shared.
	c.conflicts, c.configNames, c.stageKeys, c.resolvedKeys = s.conflicts, s.configNames, s.stageKeys, s.resolvedKeys
	return c
}

// tree returns the root tree of branch at url and its commit, or a plain
// directory's tree and an empty commit. Every tree is bounded by the
// Limits, afresh for each load.
func (l *Loader) tree(ctx context.Context, url, branch string) (repofs.Tree, string, error) {
	if IsLocalPath(url) && !isGitRepository(url) {
		return l.limited(dirTree(url))
	}
	repo, err := l.repository(url)
	if err != nil {
		return nil, "", err
	}
	hash, err := repo.Fetch(ctx, branch)
	if err != nil {
		return nil, "", err
	}
	return l.commitTree(repo, url, hash)
}

// treeAt is tree at a commit the store of url already holds.
func (l *Loader) treeAt(url string, commit plumbing.Hash) (repofs.Tree, string, error) {
	repo, err := l.repository(url)
	if err != nil {
		return nil, "", err
	}
	return l.commitTree(repo, url, commit)
}

// commitTree is the root tree of commit of repo at url; the trees of the
// commit read last are reused.
func (l *Loader) commitTree(repo *Repository, url string, hash plumbing.Hash) (repofs.Tree, string, error) {
	last, ok := l.trees[url]
	if !ok || last.store != repo.Repo() {
		last = loadedTree{store: repo.Repo(), objects: repofs.NewGitObjects()}
	} else if last.commit == hash {
		return l.limited(last.tree, hash.String(), nil)
	}
	tree, commit, err := commitTree(last.objects, repo.Repo(), hash, url)
	if err == nil {
		if l.trees == nil {
			l.trees = map[string]loadedTree{}
		}
		last.commit, last.tree = hash, tree
		l.trees[url] = last
	}
	return l.limited(tree, commit, err)
}

// revisionTree returns the tree of the commit revision names at url.
func (l *Loader) revisionTree(ctx context.Context, url, revision string) (repofs.Tree, string, error) {
	if revision == "" {
		return nil, "", fmt.Errorf("read %s: the revision is empty", url)
	}
	var repo *git.Repository
	if IsLocalPath(url) {
		// Read in place: a CI checkout is often shallow and on a detached
		// HEAD, and its commit may be on no branch at all.
		r, err := openInPlace(url)
		if err != nil {
			return nil, "", fmt.Errorf("read revision %s of %s: %w", revision, url, err)
		}
		repo = r
	} else {
		r, err := l.repository(url)
		if err != nil {
			return nil, "", err
		}
		if err := r.FetchAll(ctx); err != nil {
			return nil, "", err
		}
		repo = r.Repo()
	}
	hash, err := resolveRevision(repo, revision)
	if err != nil {
		return nil, "", fmt.Errorf("read revision %s of %s: %w", revision, url, err)
	}
	return l.limited(commitTree(repofs.NewGitObjects(), repo, hash, url))
}

// openInPlace opens the repository at path where it is (a checkout, a
// linked worktree, a bare repository) with its pack files kept open and
// the disk store's object cache: as git.PlainOpen opens it, every object
// read opened its pack file again and up to 96 MB of objects stayed in
// memory (a validate of 10,000 stages from a checkout took 17.8-18.2 s
// instead of 14.9-15.8 s). Its descriptors close with the repository, once
// nothing reads it.
func openInPlace(path string) (*git.Repository, error) {
	r, err := git.PlainOpenWithOptions(path, &git.PlainOpenOptions{DetectDotGit: false, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, err
	}
	plain, ok := r.Storer.(*filesystem.Storage)
	if !ok {
		return r, nil
	}
	objects, _ := objectStorage(plain.Filesystem())
	return git.Open(objects, nil)
}

// resolveRevision resolves revision, also as a remote branch (a fetched
// remote has its branches under refs/remotes/origin).
func resolveRevision(repo *git.Repository, revision string) (plumbing.Hash, error) {
	h, err := repo.ResolveRevision(plumbing.Revision(revision))
	if err == nil {
		return *h, nil
	}
	if h, err2 := repo.ResolveRevision(plumbing.Revision("refs/remotes/" + git.DefaultRemoteName + "/" + revision)); err2 == nil {
		return *h, nil
	}
	return plumbing.ZeroHash, fmt.Errorf("%w (use a commit hash, a tag, a branch or HEAD)", err)
}

func (l *Loader) repository(url string) (*Repository, error) {
	repo := l.repos[url]
	if repo == nil {
		var auth Auth
		if l.opts.Auth != nil {
			auth = l.opts.Auth(url)
		}
		var err error
		if repo, err = OpenCached(url, auth, l.opts.CacheDir); err != nil {
			return nil, err
		}
		repo.ShowProgress(l.opts.Progress)
		l.repos[url] = repo
	}
	return repo, nil
}

func (l *Loader) limited(tree repofs.Tree, commit string, err error) (repofs.Tree, string, error) {
	if err != nil {
		return nil, "", err
	}
	return repofs.LimitTree(tree, l.opts.Limits), commit, nil
}

func dirTree(dir string) (repofs.Tree, string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, "", fmt.Errorf("read %s: not a directory", dir)
	}
	return repofs.DirTree(dir), "", nil
}

// commitTree reads the tree of commit hash through objects, which must be
// repo's.
func commitTree(objects *repofs.GitObjects, repo *git.Repository, hash plumbing.Hash, url string) (repofs.Tree, string, error) {
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, "", fmt.Errorf("read commit %s of %s: %w", hash, url, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, "", fmt.Errorf("read the tree of commit %s of %s: %w", hash, url, err)
	}
	return objects.Tree(tree), hash.String(), nil
}

// decodeConfig decodes the config directory, or takes it from the caches
// (in memory, then on disk). Plain files are keyed by the directory's tree
// hash and the hashes of the files read (a file may be a link out of the
// directory). A kustomized directory is keyed by its rendered output
// instead: its bases and patches may live outside the directory, and the
// renderer caches the build by everything it read. The error is only for
// ctx being done. persist is false for a directory on disk, whose content
// may change while it is read: its decode is kept in memory only. The
// objects are the cache's own: the load reads them and copies what it
// hands out.
func (l *Loader) decodeConfig(ctx context.Context, tree repofs.Tree, old, next *loadCache, persist bool) (decodedConfig, error) {
	dir := l.opts.ConfigPath
	entries, err := tree.ReadDir(dir)
	if err != nil {
		return decodedConfig{problems: []Problem{readProblem(dir,
			"cannot read the config directory (create it, or point --config-path at it)", err)}}, nil
	}
	var key string
	var decode func() decodedConfig
	k := kustomizationFile(tree, dir)
	files, plain := []string(nil), false
	if k != "" {
		files, plain = plainResources(tree, dir, k)
	}
	if k != "" && !plain {
		// Built with origin annotations, so each object is attributed to
		// the file that holds it rather than to the kustomization.
		if l.opts.Renderer == nil {
			return decodedConfig{}, fmt.Errorf("config directory %s has a kustomization, and the loader was given no Renderer to build it", dir)
		}
		out, err := l.opts.Renderer.BuildWithOrigins(ctx, tree, dir)
		if ctx.Err() != nil {
			return decodedConfig{}, ctx.Err()
		}
		if err != nil {
			return decodedConfig{problems: []Problem{buildProblem(k, err)}}, nil
		}
		sum := sha256.Sum256(out)
		key = fmt.Sprintf("rendered:%s:%q", hex.EncodeToString(sum[:]), k)
		decode = func() decodedConfig {
			objects, problems := decodeRendered(dir, k, out, l.keys)
			return decodedConfig{objects: objects, problems: problems}
		}
	} else {
		if !plain {
			files = yamlFiles(dir, entries)
		}
		key, _ = configKey(tree, dir, files)
	}
	disk := l.disk
	if !persist {
		disk = nil
	}
	if decode == nil {
		// The directory changed: decode only the files that did, taking
		// the others from the last load or, in a new process, from disk.
		decode = func() decodedConfig {
			reuse := reuseIndex{}
			for _, d := range old.configs {
				reuse.add(d)
			}
			return l.decodeEach(ctx, tree, files, reuse, disk)
		}
	}
	d, cached := old.configs[key]
	if !cached && key != "" && disk != nil && files == nil {
		if d, cached = disk.lookup(key); cached {
			l.diskHits++
		}
	}
	if !cached || key == "" {
		d = decode()
		if ctx.Err() == nil && key != "" && disk != nil && files == nil {
			disk.store(key, d)
		}
	}
	if ctx.Err() != nil {
		return decodedConfig{}, ctx.Err() // a cut-short decode is neither used nor cached
	}
	if key != "" {
		next.configs[key] = d
	}
	return d, nil
}

// buildProblem is a failed build of the config directory, at the file
// that caused it where that is known: a link out of the repository, a file
// over a limit, or the file kustomize names.
func buildProblem(kustomization string, err error) Problem {
	var esc *repofs.EscapeError
	var le *repofs.LimitError
	var be *repofs.BuildError
	switch {
	case errors.As(err, &esc) && esc.Target != "":
		return symlinkProblem(esc)
	case errors.As(err, &le):
		return Problem{File: le.File, Reason: le.Reason}
	case errors.As(err, &be) && be.File != "":
		return Problem{File: be.File, Reason: "kustomize build of the config directory failed: " + err.Error()}
	}
	return Problem{File: kustomization, Reason: "kustomize build of the config directory failed: " + err.Error()}
}

// readProblem is a file or directory that cannot be read, at the link that
// leaves the repository when that is why.
func readProblem(file, what string, err error) Problem {
	var esc *repofs.EscapeError
	if errors.As(err, &esc) && esc.Target != "" {
		return symlinkProblem(esc)
	}
	var le *repofs.LimitError
	if errors.As(err, &le) {
		return Problem{File: le.File, Reason: le.Reason}
	}
	return Problem{File: file, Reason: what + ": " + err.Error()}
}

func symlinkProblem(esc *repofs.EscapeError) Problem {
	return Problem{File: esc.Ref, Reason: fmt.Sprintf(
		"symbolic link to %q points outside the repository: vectorflow reads only what the repository holds; copy the file in or make the link relative inside the repository",
		esc.Target)}
}

// yamlFiles are the YAML files among a directory's entries: the config
// files of a directory without a kustomization.
func yamlFiles(dir string, entries []fs.DirEntry) []string {
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		files = append(files, path.Join(dir, name))
	}
	return files
}

// kustomizationFile is the kustomization file in dir, or "" when there is
// none; kustomize accepts the names konfig lists.
func kustomizationFile(tree repofs.Tree, dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if st, err := tree.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

func objectKey(o Object) string {
	if s, ok := o.Value.(*v1alpha1.Stage); ok {
		return StageKey(s.Spec.Landscape, s.Name)
	}
	return o.Name
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Reason < b.Reason
	})
}
