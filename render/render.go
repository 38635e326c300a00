// Package render builds directories of a repository tree with kustomize,
// byte for byte like `kubectl kustomize`, without leaving the repository,
// and caches the output by the content of everything a build loads. It
// reads only the tree it is given, and remote bases only when allowed.
package render

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// Options configures a Renderer.
type Options struct {
	AllowRemoteBases bool // remote bases (git/http URLs in resources) are refused unless true
	// CacheBytes bounds the memory the rendered-output cache holds;
	// zero means DefaultCacheBytes (64 MiB).
	CacheBytes int64
	// Limits bound every file a build reads, and all of them together.
	Limits repofs.Limits
	// CacheDir, when set, keeps renderings under CacheDir/renders too, for
	// the next Renderer or process; "" keeps them in memory only.
	CacheDir string
}

// Renderer builds kustomizations and caches the output. It is safe for
// concurrent use, and builds run concurrently, except a build that loads a
// kustomization with an openapi: field, which runs alone (see schemaMu).
type Renderer struct {
	opts  Options
	cache *renderCache
	// images holds what Images read from each output, with the output's
	// dependencies but not the output: a check of every overlay on every
	// pass stays a lookup even where the outputs outgrow cache.
	images *renderCache
	memos  treeMemos
	work   workMemo
}

// NewRenderer returns a Renderer with an empty cache.
func NewRenderer(opts Options) *Renderer {
	return &Renderer{
		opts:   opts,
		cache:  newRenderCache(opts.CacheBytes, newDiskCache(opts.CacheDir, opts)),
		images: newRenderCache(imagesCacheBytes, nil),
	}
}

// Build renders dir of tree, byte for byte what `kubectl kustomize <dir>` prints.
// Loads that leave the repository fail with an *EscapeError, files over the
// Limits with a *LimitError, kustomize failures with a *repofs.BuildError. Builds
// that used a remote base are not cached.
func (r *Renderer) Build(tree repofs.Tree, dir string) ([]byte, error) {
	return r.BuildContext(context.Background(), tree, dir)
}

// BuildContext is Build that stops waiting when ctx is done. Kustomize
// itself cannot be interrupted: the build runs on in the background until
// its next file read (which fails once ctx is done) or its end, both
// bounded by the Limits.
func (r *Renderer) BuildContext(ctx context.Context, tree repofs.Tree, dir string) ([]byte, error) {
	built, err := r.build(ctx, tree, dir, false)
	if err != nil {
		return nil, err
	}
	return slices.Clone(built.out), nil
}

// imagesCacheBytes bounds what Images remembers: about a kilobyte per
// overlay, so room for tens of thousands whatever their outputs weigh.
const imagesCacheBytes = 32 << 20

// Images is BuildContext followed by overlays.Images: the images the
// output's containers run. They are remembered apart from the output, with
// what the build read, so asking again for an unchanged overlay costs a
// lookup even once its output has left the cache. The slice is shared:
// read it, do not change it.
func (r *Renderer) Images(ctx context.Context, tree repofs.Tree, dir string) ([]overlays.RenderedImage, error) {
	key, err := repofs.CleanDir(dir)
	if err != nil {
		return nil, err
	}
	if known, ok := r.images.lookup(r.memos.of(tree), key); ok {
		return known.images, known.imagesErr
	}
	built, err := r.build(ctx, tree, key, false)
	if err != nil {
		return nil, err
	}
	images, err := overlays.Images(built.out)
	if !built.remote {
		read := newRendering(key, built.deps, nil)
		read.images, read.imagesErr = images, err
		for _, img := range images {
			read.size += int64(len(img.Object)+len(img.Container)+len(img.Image)) + 48
		}
		r.images.store(read, false)
	}
	return images, err
}

// BuildReads is BuildContext that also names, sorted, the files of tree
// the build read: what its output depends on, bases and components
// included.
func (r *Renderer) BuildReads(ctx context.Context, tree repofs.Tree, dir string) ([]byte, []string, error) {
	built, err := r.build(ctx, tree, dir, false)
	if err != nil {
		return nil, nil, err
	}
	var read []string
	for _, d := range built.deps {
		if d.kind == depHash {
			read = append(read, d.name)
		}
	}
	return slices.Clone(built.out), read, nil
}

// build returns dir's rendering: its output (shared with the cache: do
// not change it) and what it depends on. A build that fails for what it
// read fails again for the same reads, so the failure is cached too, in
// memory only; one given up with ctx is not.
func (r *Renderer) build(ctx context.Context, tree repofs.Tree, dir string, origins bool) (*rendering, error) {
	dir, err := repofs.CleanDir(dir)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("build %s: %w", dir, err)
	}
	// Only a commit's tree may be kept on disk; ask before the memo wraps it.
	persist := repofs.Immutable(tree)
	tree = r.memos.of(tree)
	key := dir
	if origins {
		key += "\x00origins" // a different output of the same directory
	}
	if cached, ok := r.cache.lookup(tree, key); ok {
		if cached.err != nil {
			return nil, cached.err
		}
		return cached, nil
	}
	type result struct {
		out  []byte
		fsys *buildFS
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, fsys, err := r.render(ctx, tree, dir, origins)
		done <- result{out, fsys, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("build %s: %w", dir, ctx.Err())
	}
	built := newRendering(key, res.fsys.sortedDeps(), res.out)
	built.remote = res.fsys.remote
	switch {
	case res.err != nil && (res.fsys.unsure || res.fsys.remote || ctx.Err() != nil ||
		errors.Is(res.err, context.Canceled) || errors.Is(res.err, context.DeadlineExceeded)):
		return nil, res.err
	case res.err != nil:
		built.err = res.err
		r.cache.store(built, false)
		return nil, res.err
	case !res.fsys.remote:
		r.cache.store(built, persist)
	}
	return built, nil
}

// DeferCacheWrites holds back what builds store in the on-disk cache
// (Options.CacheDir) until flush is called, then writes it in a few files
// at once: a batch of builds costs a few file writes instead of one or
// more per build. Call flush (deferred) before the process exits, or the
// batch's renderings stay in memory only; it is safe to call twice.
// Batches may overlap; the last flush writes. Without CacheDir it does
// nothing.
func (r *Renderer) DeferCacheWrites() (flush func()) {
	if r.cache.disk == nil {
		return func() {}
	}
	return r.cache.disk.deferWrites()
}

// Stats reports cache hits and misses, for tests and metrics.
func (r *Renderer) Stats() Stats { return r.cache.stats() }

// render runs kustomize on dir alongside other builds; a build that meets
// an openapi: field stops there, before kustomize sees it, and runs again
// alone.
func (r *Renderer) render(ctx context.Context, tree repofs.Tree, dir string, origins bool) ([]byte, *buildFS, error) {
	out, fsys, err := r.renderLocked(ctx, tree, dir, origins, false)
	if fsys.wantsSchema {
		out, fsys, err = r.renderLocked(ctx, tree, dir, origins, true)
	}
	return out, fsys, err
}

// kyaml keeps the OpenAPI schema kustomize merges patches with in
// process-global state (openapi.SetSchema, initSchema). A kustomization
// without openapi: only reads it, so such builds share schemaMu; one that
// sets openapi: changes it, so it holds schemaMu alone, starts from the
// schema a fresh `kustomize build` process has, and puts the default back
// for the builds after it. The lock is a package variable because the
// state it guards is one: every Renderer of the process shares it.
var (
	schemaMu    sync.RWMutex
	schemaReady bool // the default schema is parsed; written under schemaMu held alone
	soloBuilds  int  // builds that ran alone with the schema unparsed; under schemaMu held alone
)

// lockSchema takes schemaMu shared (exclusive false) with the default
// schema parsed first, or alone with kyaml's schema reset. kyaml parses its
// schema lazily on first use, writing maps that other calls read without
// its lock, so shared builds must find it parsed already. The first
// soloBuilds builds of a process take schemaMu alone instead and leave the
// parse to kyaml, which a plain overlay never asks for: the few builds of
// a promotion in a fresh process run one after the other, a few
// milliseconds each, and save the 35-50 ms the parse costs.
func lockSchema(exclusive bool) (unlock func()) {
	if exclusive {
		schemaMu.Lock()
		openapi.ResetOpenAPI()
		return func() {
			openapi.ResetOpenAPI()
			_ = openapi.Schema() // parses the default schema
			schemaReady = true
			schemaMu.Unlock()
		}
	}
	for {
		schemaMu.RLock()
		if schemaReady {
			return schemaMu.RUnlock
		}
		schemaMu.RUnlock()
		schemaMu.Lock()
		if !schemaReady && soloBuilds < maxSoloBuilds {
			soloBuilds++
			return schemaMu.Unlock // alone: kyaml may parse as it goes
		}
		if !schemaReady {
			_ = openapi.Schema()
			schemaReady = true
		}
		schemaMu.Unlock()
	}
}

// maxSoloBuilds is about as many plain builds as the schema's parse costs.
const maxSoloBuilds = 16

func (r *Renderer) renderLocked(ctx context.Context, tree repofs.Tree, dir string, origins, exclusive bool) (out []byte, fsys *buildFS, err error) {
	fsys = newBuildFS(ctx, tree, r.opts.AllowRemoteBases, r.opts.Limits)
	fsys.work = &r.work
	fsys.schemaAlone = exclusive
	if origins {
		fsys.originsFor = path.Join(dir, "")
	}
	defer lockSchema(exclusive)()
	if err := ctx.Err(); err != nil {
		return nil, fsys, fmt.Errorf("build %s: %w", dir, err) // given up while waiting for the lock
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &repofs.BuildError{Dir: dir, File: fsys.lastKust, Err: fmt.Errorf("kustomize panicked: %v", p)}
		}
		if fsys.escape != nil {
			esc := *fsys.escape
			esc.Dir = dir
			out, err = nil, &esc
		}
		if fsys.limit != nil {
			out, err = nil, fmt.Errorf("build %s: %w", dir, fsys.limit)
		}
	}()
	m, err := newKustomizer().Run(fsys, path.Join(mountRoot, dir))
	if err != nil {
		return nil, fsys, buildError(tree, dir, fsys.lastRead, err)
	}
	out, err = m.AsYaml()
	if err != nil {
		return nil, fsys, buildError(tree, dir, fsys.lastRead, err)
	}
	return out, fsys, nil
}

// newKustomizer makes a Kustomizer per build: it is cheap, and holds no
// state a concurrent build could see.
func newKustomizer() *krusty.Kustomizer {
	kopts := krusty.MakeDefaultOptions()
	// The kustomize CLI's --reorder default; without it the order differs.
	kopts.Reorder = krusty.ReorderOptionLegacy
	return krusty.MakeKustomizer(kopts)
}

var mountedPath = regexp.MustCompile(regexp.QuoteMeta(mountRoot) + `(/[^\s'"\x60:,;()\[\]{}]*)?`)

// buildError names the directory and the file kustomize complained about,
// with paths shown relative to the repository root. Kustomize names most
// files relative to the kustomization it was in, so when its message holds
// no full path the file is the last one the build read: the one whose
// content kustomize was processing when it failed.
func buildError(tree repofs.Tree, dir, lastRead string, err error) error {
	be := &repofs.BuildError{Dir: dir, File: lastRead, Err: &kustomizeError{cause: err}}
	for _, m := range mountedPath.FindAllString(err.Error(), -1) {
		name := strings.TrimPrefix(strings.TrimPrefix(m, mountRoot), "/")
		if name == "" {
			continue
		}
		if info, statErr := tree.Stat(name); statErr == nil && !info.IsDir() {
			be.File = name
			break
		}
	}
	return be
}

// kustomizeError shows kustomize's message with repository-relative paths.
type kustomizeError struct{ cause error }

func (e *kustomizeError) Error() string {
	msg := strings.ReplaceAll(e.cause.Error(), mountRoot+"/", "")
	return strings.ReplaceAll(msg, mountRoot, ".")
}

func (e *kustomizeError) Unwrap() error { return e.cause }

// BuildWithOrigins is BuildContext with kustomize's originAnnotations build
// option on in dir's kustomization, so every resource names the file it came
// from (see repofs.OriginFile). The output differs from `kubectl kustomize` by
// these annotations; it is for telling users where an object is written.
func (r *Renderer) BuildWithOrigins(ctx context.Context, tree repofs.Tree, dir string) ([]byte, error) {
	built, err := r.build(ctx, tree, dir, true)
	if err != nil {
		return nil, err
	}
	return slices.Clone(built.out), nil
}

// withOriginAnnotations adds originAnnotations to a kustomization's
// buildMetadata; content that does not parse is left for kustomize to refuse.
func withOriginAnnotations(data []byte) []byte {
	node, err := yaml.Parse(string(data))
	if err != nil || node.YNode().Kind != yaml.MappingNode {
		return data
	}
	meta, err := node.Pipe(yaml.LookupCreate(yaml.SequenceNode, "buildMetadata"))
	if err != nil || meta.YNode().Kind != yaml.SequenceNode {
		return data
	}
	for _, n := range meta.Content() {
		if n.Value == "originAnnotations" {
			return data
		}
	}
	meta.YNode().Content = append(meta.YNode().Content, yaml.NewStringRNode("originAnnotations").YNode())
	out, err := node.String()
	if err != nil {
		return data
	}
	return []byte(out)
}

// Overlay is one directory of one tree, for BuildAll.
type Overlay struct {
	Tree repofs.Tree
	Dir  string
}

// ImagesAll runs Images for each of dirs on GOMAXPROCS goroutines and
// returns each answer at its index, as BuildAll does builds.
func (r *Renderer) ImagesAll(ctx context.Context, dirs []Overlay) ([][]overlays.RenderedImage, []error) {
	return eachOverlay(ctx, r, dirs, r.Images)
}

// BuildAll builds overlays on GOMAXPROCS goroutines and returns each
// output and error at its index, as BuildContext would one after another.
// Once ctx is done no further build starts (those left have ctx's error).
// What the builds store on disk is written before it returns.
func (r *Renderer) BuildAll(ctx context.Context, dirs []Overlay) ([][]byte, []error) {
	return eachOverlay(ctx, r, dirs, r.BuildContext)
}

// eachOverlay answers do for every overlay, on GOMAXPROCS goroutines, with
// the disk cache's writes held until all are done.
func eachOverlay[T any](ctx context.Context, r *Renderer, dirs []Overlay, do func(context.Context, repofs.Tree, string) (T, error)) ([]T, []error) {
	defer r.DeferCacheWrites()()
	answers, started := make([]T, len(dirs)), make([]bool, len(dirs))
	errs := parallel.EachContext(ctx, len(dirs), func(i int) error {
		started[i] = true
		var err error
		answers[i], err = do(ctx, dirs[i].Tree, dirs[i].Dir)
		return err
	})
	for i, ok := range started {
		if !ok {
			errs[i] = fmt.Errorf("build %s: %w", dirs[i].Dir, ctx.Err())
		}
	}
	return answers, errs
}
