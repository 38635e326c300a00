package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// mountRoot is where the repository appears inside kustomize's in-memory
// file system. Anything kustomize asks for outside it is outside the repository.
const mountRoot = "/repository"

// buildFS is the file system one build sees: an in-memory kustomize file
// system filled lazily from the Tree. It records what the build looked at
// (the cache key) and refuses every load that leaves the repository.
type buildFS struct {
	ctx         context.Context // once done, every read fails, so kustomize stops early
	tree        repofs.Tree
	mem         filesys.FileSystem
	allowRemote bool
	limits      repofs.Limits
	budget      *repofs.ReadBudget
	work        *workMemo
	mappingWork int64 // mapping work of the files read (Limits.MaxMappingWork)

	deps   map[string]dep // tree name -> what the build learnt about it
	loaded map[string]bool
	escape *repofs.EscapeError // the first refusal; the build fails with it
	limit  *repofs.LimitError  // the first file refused by Limits; the build fails with it
	remote bool                // the build used a remote base: its output is not cacheable
	// unsure is set when the tree failed to answer (not "no such file"):
	// a failure of the build is not what its reads decide.
	unsure   bool
	lastKust string // the last kustomization file read, to name in escape errors
	lastRead string // the last file read, to name in build errors
	// schemaAlone is set when the build holds schemaMu alone and may let
	// kustomize set the OpenAPI schema; wantsSchema records that a shared
	// build stopped at a kustomization with an openapi: field.
	schemaAlone, wantsSchema bool
	// originsFor is the directory whose kustomization gets originAnnotations
	// (BuildWithOrigins); empty for none.
	originsFor string
}

// dep is one fact a build depended on: a content hash, or just whether the
// name was absent, a file or a directory.
type dep struct {
	name string
	kind depKind
	hash string
}

// sortedDeps is what the build learnt, sorted by name: a rendering's
// dependencies.
func (b *buildFS) sortedDeps() []dep {
	sorted := make([]dep, 0, len(b.deps))
	for _, d := range b.deps {
		sorted = append(sorted, d)
	}
	slices.SortFunc(sorted, func(a, b dep) int { return strings.Compare(a.name, b.name) })
	return sorted
}

type depKind uint8

const (
	depAbsent depKind = iota
	depFile
	depDir
	depHash
	// depTree is a directory's tree hash, only in rendering.checks.
	depTree
)

// errSchemaAlone stops a shared build at a kustomization that sets the
// OpenAPI schema, before kustomize reads it; the build runs again alone.
var errSchemaAlone = errors.New("the kustomization sets openapi: it is built alone")

var errReadOnly = errors.New("the repository is read-only during a build")

func newBuildFS(ctx context.Context, tree repofs.Tree, allowRemote bool, limits repofs.Limits) *buildFS {
	limits = limits.WithDefaults()
	return &buildFS{
		ctx:         ctx,
		tree:        tree,
		mem:         filesys.MakeFsInMemory(),
		allowRemote: allowRemote,
		limits:      limits,
		budget:      repofs.NewReadBudget(limits.MaxRepositorySize),
		deps:        map[string]dep{},
		loaded:      map[string]bool{},
	}
}

// rel maps a kustomize path to a tree name; ok is false for paths outside
// the mount. Ancestors of the mount are reported as dir with name "".
func (b *buildFS) rel(p string) (name string, ok bool) {
	p = filepath.ToSlash(filepath.Clean(p))
	switch {
	case p == mountRoot:
		return ".", true
	case strings.HasPrefix(p, mountRoot+"/"):
		return p[len(mountRoot)+1:], true
	case p == "/" || p == "." || p == "":
		return "", true
	}
	return "", false
}

// onDisk says whether p is a directory kustomize cloned a remote base into.
func (b *buildFS) onDisk(p string) bool {
	if !b.allowRemote {
		return false
	}
	tmp := filepath.Join(os.TempDir(), "kustomize-")
	return strings.HasPrefix(filepath.Clean(p), tmp)
}

func (b *buildFS) outside(p string) error {
	if b.escape == nil {
		b.escape = &repofs.EscapeError{Ref: strings.TrimPrefix(p, mountRoot+"/"), Kind: repofs.ErrOutsideRoot}
		if b.lastKust != "" {
			b.escape.File = b.lastKust
		}
	}
	return &fs.PathError{Op: "open", Path: p, Err: b.escape}
}

func (b *buildFS) record(d dep) {
	if old, ok := b.deps[d.name]; ok && old.kind == depHash {
		return
	}
	b.deps[d.name] = d
}

// stat answers from the tree and records the kind it saw.
func (b *buildFS) stat(name string) (fs.FileInfo, error) {
	info, err := b.tree.Stat(name)
	switch {
	case err == nil && info.IsDir():
		b.record(dep{name: name, kind: depDir})
	case err == nil:
		b.record(dep{name: name, kind: depFile})
	default:
		b.noteTreeError(name, err)
	}
	return info, err
}

// noteTreeError records what a failed answer of the tree about name says:
// that name is absent, that it leaves the repository, or, for any other
// failure, that the build's result is not what its reads decide.
func (b *buildFS) noteTreeError(name string, err error) {
	var esc *repofs.EscapeError
	var le *repofs.LimitError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b.record(dep{name: name, kind: depAbsent})
	case errors.As(err, &esc):
		b.noteEscape(err)
	case errors.As(err, &le):
		b.noteLimit(err)
	default:
		b.unsure = true
	}
}

func (b *buildFS) noteLimit(err error) {
	var le *repofs.LimitError
	if b.limit == nil && errors.As(err, &le) {
		b.limit = le
	}
}

func (b *buildFS) noteEscape(err error) {
	var esc *repofs.EscapeError
	if b.escape == nil && errors.As(err, &esc) {
		c := *esc
		c.File = b.lastKust
		b.escape = &c
	}
}

// load copies a file from the tree into memory and checks kustomization
// files. Every file is bounded by the Limits before kustomize parses it.
func (b *buildFS) load(name string) ([]byte, error) {
	if err := b.ctx.Err(); err != nil {
		return nil, err
	}
	if b.loaded[name] {
		// Read from the tree once per build: kustomize asks for a file
		// more than once (CleanedAbs, then ReadFile), and a folder's file
		// read again costs the disk, and may no longer be what the build's
		// cache key hashed.
		b.noteRead(name)
		return b.mem.ReadFile(path.Join(mountRoot, name))
	}
	data, err := repofs.CheckedRead(b.tree, name, b.limits, b.budget)
	if err == nil {
		var work int64
		work, err = b.checkYAML(name, data)
		if err == nil {
			b.mappingWork += work
			if b.mappingWork > b.limits.MaxMappingWork {
				err = &repofs.LimitError{File: name, Reason: fmt.Sprintf(
					"the YAML mappings this build reads are too large together (their keys squared add up to more than %d; kyaml's decode costs that much); split the build or shrink the largest mappings",
					b.limits.MaxMappingWork)}
			}
		}
	}
	if err != nil {
		b.noteTreeError(name, err)
		return nil, err
	}
	h, err := b.tree.Hash(name)
	if err != nil {
		b.noteTreeError(name, err)
		return nil, err
	}
	b.record(dep{name: name, kind: depHash, hash: h})
	b.noteRead(name)
	if isKustomizationFile(name) {
		facts := b.kustomization(data)
		if !b.schemaAlone && facts.setsOpenAPI {
			b.wantsSchema = true
			return nil, errSchemaAlone
		}
		if err := b.checkRefs(name, facts.refs); err != nil {
			return nil, err
		}
		if b.originsFor != "" && path.Dir(name) == b.originsFor {
			data = withOriginAnnotations(data)
		}
	}
	full := path.Join(mountRoot, name)
	if err := b.mem.MkdirAll(path.Dir(full)); err != nil {
		return nil, err
	}
	if err := b.mem.WriteFile(full, data); err != nil {
		return nil, err
	}
	b.loaded[name] = true
	return data, nil
}

// noteRead remembers name as the file kustomize read last, for the
// errors of the build to name.
func (b *buildFS) noteRead(name string) {
	b.lastRead = name
	if isKustomizationFile(name) {
		b.lastKust = name
	}
}

func (b *buildFS) kustomization(data []byte) kustomizationFacts {
	if b.work == nil {
		return parseKustomization(data)
	}
	return b.work.kustomization(data)
}

func (b *buildFS) checkYAML(name string, data []byte) (int64, error) {
	if b.work == nil {
		return repofs.CheckYAMLWork(name, data, b.limits)
	}
	return b.work.check(name, data, b.limits)
}

// checkRefs refuses a kustomization that points outside the repository
// before kustomize acts on it (kustomize would clone or fetch a remote base).
func (b *buildFS) checkRefs(file string, refs []string) error {
	for _, ref := range refs {
		kind := refEscape(path.Dir(file), ref)
		if kind == repofs.ErrRemoteBase && b.allowRemote {
			b.remote = true
			continue
		}
		if kind != nil {
			if b.escape == nil {
				b.escape = &repofs.EscapeError{File: file, Ref: ref, Kind: kind}
			}
			return &fs.PathError{Op: "read", Path: file, Err: b.escape}
		}
	}
	return nil
}

// fill copies a whole directory into memory, for Walk and Glob.
func (b *buildFS) fill(name string) error {
	h, err := b.tree.Hash(name)
	if err != nil {
		b.noteTreeError(name, err)
		return err
	}
	b.record(dep{name: name, kind: depHash, hash: h})
	return fs.WalkDir(b.tree, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			b.noteTreeError(p, err)
			return err
		}
		if d.IsDir() {
			return b.mem.MkdirAll(path.Join(mountRoot, p))
		}
		if _, err := b.load(p); err != nil {
			return err
		}
		return nil
	})
}

func isKustomizationFile(name string) bool {
	base := path.Base(name)
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if base == n {
			return true
		}
	}
	return false
}

// The filesys.FileSystem methods kustomize calls.

func (b *buildFS) Create(p string) (filesys.File, error) {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().Create(p)
	}
	return nil, fmt.Errorf("create %s: %w", p, errReadOnly)
}

func (b *buildFS) Mkdir(p string) error {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().Mkdir(p)
	}
	return fmt.Errorf("mkdir %s: %w", p, errReadOnly)
}

func (b *buildFS) MkdirAll(p string) error {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().MkdirAll(p)
	}
	return fmt.Errorf("mkdir %s: %w", p, errReadOnly)
}

func (b *buildFS) RemoveAll(p string) error {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().RemoveAll(p)
	}
	return fmt.Errorf("remove %s: %w", p, errReadOnly)
}

func (b *buildFS) WriteFile(p string, _ []byte) error {
	return fmt.Errorf("write %s: %w", p, errReadOnly)
}

func (b *buildFS) Open(p string) (filesys.File, error) {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().Open(p)
	}
	name, ok := b.rel(p)
	if !ok {
		return nil, b.outside(p)
	}
	if name != "" {
		info, err := b.stat(name)
		if err != nil {
			return nil, err
		}
		if info.IsDir() {
			if err := b.mem.MkdirAll(path.Join(mountRoot, name)); err != nil {
				return nil, err
			}
		} else if _, err := b.load(name); err != nil {
			return nil, err
		}
	}
	return b.mem.Open(p)
}

func (b *buildFS) IsDir(p string) bool {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().IsDir(p)
	}
	name, ok := b.rel(p)
	if !ok {
		_ = b.outside(p)
		return false
	}
	if name == "" {
		return true
	}
	info, err := b.stat(name)
	return err == nil && info.IsDir()
}

func (b *buildFS) Exists(p string) bool {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().Exists(p)
	}
	name, ok := b.rel(p)
	if !ok {
		_ = b.outside(p)
		return false
	}
	if name == "" {
		return true
	}
	_, err := b.stat(name)
	return err == nil
}

func (b *buildFS) ReadDir(p string) ([]string, error) {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().ReadDir(p)
	}
	name, ok := b.rel(p)
	if !ok {
		return nil, b.outside(p)
	}
	if name == "" {
		return []string{strings.TrimPrefix(mountRoot, "/")}, nil
	}
	h, err := b.tree.Hash(name)
	if err != nil {
		b.noteTreeError(name, err)
		return nil, err
	}
	b.record(dep{name: name, kind: depHash, hash: h})
	entries, err := b.tree.ReadDir(name)
	if err != nil {
		b.noteTreeError(name, err)
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (b *buildFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().CleanedAbs(p)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(mountRoot, p)
	}
	name, ok := b.rel(p)
	if !ok {
		return "", "", b.outside(p)
	}
	if name != "" {
		info, err := b.stat(name)
		if err != nil {
			return "", "", err
		}
		if info.IsDir() {
			if err := b.mem.MkdirAll(path.Join(mountRoot, name)); err != nil {
				return "", "", err
			}
		} else if _, err := b.load(name); err != nil {
			return "", "", err
		}
	}
	return b.mem.CleanedAbs(p)
}

func (b *buildFS) Glob(pattern string) ([]string, error) {
	dir := pattern
	for strings.ContainsAny(dir, `*?[\`) {
		dir = filepath.Dir(dir)
	}
	name, ok := b.rel(dir)
	if !ok {
		return nil, b.outside(dir)
	}
	if name == "" {
		name = "."
	}
	if err := b.fill(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return b.mem.Glob(pattern)
}

func (b *buildFS) ReadFile(p string) ([]byte, error) {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().ReadFile(p)
	}
	name, ok := b.rel(p)
	if !ok || name == "" {
		return nil, b.outside(p)
	}
	return b.load(name)
}

func (b *buildFS) Walk(p string, walkFn filepath.WalkFunc) error {
	if b.onDisk(p) {
		return filesys.MakeFsOnDisk().Walk(p, walkFn)
	}
	name, ok := b.rel(p)
	if !ok || name == "" {
		return b.outside(p)
	}
	if err := b.fill(name); err != nil {
		return err
	}
	return b.mem.Walk(p, walkFn)
}
