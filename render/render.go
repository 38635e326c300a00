// Package render builds directories of a repository tree with kustomize,
// byte for byte like `kubectl kustomize`, without leaving the repository,
// and caches the output by the content of everything a build loads.
package render

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
)

// Options configures a Renderer.
type Options struct {
	AllowRemoteBases bool // remote bases (git/http URLs in resources) are refused unless true
	// CacheBytes bounds the memory the rendered-output cache holds;
	// zero means DefaultCacheBytes (64 MiB).
	CacheBytes int64
	// Limits bound every file a build reads, and all of them together.
	Limits Limits
}

// Renderer builds kustomizations and caches the output. It is safe for
// concurrent use; kustomize itself runs one build at a time because its
// OpenAPI schema is process-global.
type Renderer struct {
	opts  Options
	cache *renderCache

	buildMu    sync.Mutex
	kustomizer *krusty.Kustomizer
}

// NewRenderer returns a Renderer with an empty cache.
func NewRenderer(opts Options) *Renderer {
	kopts := krusty.MakeDefaultOptions()
	// The kustomize CLI's --reorder default; without it the order differs.
	kopts.Reorder = krusty.ReorderOptionLegacy
	return &Renderer{
		opts:       opts,
		cache:      newRenderCache(opts.CacheBytes),
		kustomizer: krusty.MakeKustomizer(kopts),
	}
}

// Build renders dir of tree, byte for byte what `kubectl kustomize <dir>` prints.
// Loads that leave the repository fail with an *EscapeError, kustomize
// failures with a *BuildError. Builds that used a remote base are not cached.
func (r *Renderer) Build(tree Tree, dir string) ([]byte, error) {
	dir, err := cleanDir(dir)
	if err != nil {
		return nil, err
	}
	if out, ok := r.cache.lookup(tree, dir); ok {
		return slices.Clone(out), nil
	}
	out, fsys, err := r.render(tree, dir)
	if err != nil {
		return nil, err
	}
	if !fsys.remote {
		r.cache.store(dir, fsys.deps, out)
	}
	return slices.Clone(out), nil
}

// Stats reports cache hits and misses, for tests and metrics.
func (r *Renderer) Stats() Stats { return r.cache.stats() }

func (r *Renderer) render(tree Tree, dir string) (out []byte, fsys *buildFS, err error) {
	fsys = newBuildFS(tree, r.opts.AllowRemoteBases, r.opts.Limits)
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &BuildError{Dir: dir, File: fsys.lastKust, Err: fmt.Errorf("kustomize panicked: %v", p)}
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
	m, err := r.kustomizer.Run(fsys, path.Join(mountRoot, dir))
	if err != nil {
		return nil, fsys, buildError(tree, dir, fsys.lastRead, err)
	}
	out, err = m.AsYaml()
	if err != nil {
		return nil, fsys, buildError(tree, dir, fsys.lastRead, err)
	}
	return out, fsys, nil
}

// cleanDir accepts a directory name relative to the repository root.
func cleanDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	clean := path.Clean(strings.ReplaceAll(dir, `\`, "/"))
	switch {
	case path.IsAbs(clean):
		return "", &EscapeError{Dir: dir, Ref: dir, Kind: ErrAbsolutePath}
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "", &EscapeError{Dir: dir, Ref: dir, Kind: ErrOutsideRoot}
	}
	return clean, nil
}

var mountedPath = regexp.MustCompile(regexp.QuoteMeta(mountRoot) + `(/[^\s'"\x60:,;()\[\]{}]*)?`)

// buildError names the directory and the file kustomize complained about,
// with paths shown relative to the repository root. Kustomize names most
// files relative to the kustomization it was in, so when its message holds
// no full path the file is the last one the build read: the one whose
// content kustomize was processing when it failed.
func buildError(tree Tree, dir, lastRead string, err error) error {
	be := &BuildError{Dir: dir, File: lastRead, Err: &kustomizeError{cause: err}}
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
