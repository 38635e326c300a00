package source

import (
	"context"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// plainKustomization is a kustomization that only lists files of its own
// directory: kustomize's build of it is those files' objects, unchanged.
type plainKustomization struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Resources  []string `json:"resources,omitempty"`
}

// plainResources returns the files a kustomization in dir lists when it
// transforms nothing: only apiVersion, kind and resources, each resource a
// YAML file inside dir, named once. Then decoding those files one by one
// gives what kustomize's build would, without its cost, which grows with
// the square of the number of objects. (One difference: kustomize refuses
// two Stages of one name in different Landscapes, which vectorflow tells
// apart, as it does in a directory without a kustomization.) Anything else (a patch, a prefix, a
// generator, a base directory, a remote resource, a file kustomize would
// refuse) is for kustomize to build, with its own errors.
func plainResources(tree repofs.Tree, dir, kustomization string) ([]string, bool) {
	data, err := tree.ReadFile(kustomization)
	if err != nil {
		return nil, false
	}
	var k plainKustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, false
	}
	if k.Kind != "" && k.Kind != "Kustomization" || k.APIVersion != "" && !strings.HasPrefix(k.APIVersion, "kustomize.config.k8s.io/") {
		return nil, false
	}
	files := make([]string, 0, len(k.Resources))
	seen := make(map[string]bool, len(k.Resources))
	for _, r := range k.Resources {
		if r == "" || strings.Contains(r, "://") || strings.HasPrefix(r, "/") || strings.Contains(r, "\\") {
			return nil, false
		}
		file := path.Join(dir, r)
		if path.Clean(r) != r || strings.HasPrefix(r, "../") || r == ".." || seen[file] ||
			!(strings.HasSuffix(r, ".yaml") || strings.HasSuffix(r, ".yml")) {
			return nil, false
		}
		st, err := tree.Stat(file)
		if err != nil || !st.Mode().IsRegular() {
			return nil, false
		}
		seen[file] = true
		files = append(files, file)
	}
	return files, true
}

// decodeEach decodes files one by one, each attributed to itself, until
// ctx is done (Load then discards the result). A file whose decode reuse
// or disk (nil for none) holds for its content hash is not decoded again;
// a file decoded is stored on disk.
func (l *Loader) decodeEach(ctx context.Context, tree repofs.Tree, files []string, reuse reuseIndex, disk *configDisk) decodedConfig {
	// Files decode (or read their decode from disk) on every core: a
	// large repository's configs are a few files of thousands of objects.
	// The reads between the lookups and the decodes go one after the
	// other, in the files' order: the repository's read budget then runs
	// out at the same file every time, and that file is the one named.
	results := make([]fileResult, len(files))
	parallel.EachContext(ctx, len(files), func(i int) error {
		results[i] = l.lookupFile(tree, files[i], reuse, disk)
		return nil
	})
	for i, file := range files {
		if ctx.Err() != nil {
			break
		}
		if r := &results[i]; !r.found {
			r.data, r.readErr = tree.ReadFile(file)
		}
	}
	parallel.EachContext(ctx, len(files), func(i int) error {
		if r := &results[i]; !r.found && ctx.Err() == nil {
			l.decodeRead(ctx, files[i], r, disk)
		}
		return nil
	})
	// Made at their size: 20,000 objects appended one file at a time
	// were copied over and over (7 MB a load at 10,000 stages).
	objects := 0
	for i := range results {
		if !results[i].done {
			break
		}
		objects += len(results[i].objects)
	}
	d := decodedConfig{objects: make([]Object, 0, objects), files: make([]fileDecode, 0, len(files))}
	for i, file := range files {
		r := results[i]
		if !r.done {
			break // given up: the files before it, as a load cut short has them
		}
		if r.fromDisk {
			l.diskHits++
		}
		if r.decoded {
			l.filesDecoded++
		}
		d.objects = append(d.objects, r.objects...)
		d.problems = append(d.problems, r.problems...)
		d.files = append(d.files, fileDecode{file: file, hash: r.hash, objects: len(r.objects), problems: len(r.problems)})
	}
	return d
}

// fileResult is one file's part of decodeEach.
type fileResult struct {
	objects  []Object
	problems []Problem
	hash     string
	found    bool // an earlier load's decode, or the disk's
	done     bool // objects and problems are the file's
	// data is the file's content, read when no decode was found, or why
	// it could not be read.
	data              []byte
	readErr           error
	fromDisk, decoded bool
}

// lookupFile finds the decode of one plain config file an earlier load
// made, or the disk holds.
func (l *Loader) lookupFile(tree repofs.Tree, file string, reuse reuseIndex, disk *configDisk) fileResult {
	var r fileResult
	// A plain directory's file may change between the hash and the
	// read: a decode is filed under the hash of the bytes it decoded.
	hash, err := tree.Hash(file)
	if err != nil {
		hash = ""
	}
	r.hash = hash
	r.objects, r.problems, r.found = reuse.of(file, hash)
	if !r.found && hash != "" && disk != nil {
		var cached decodedConfig
		if cached, r.found = disk.lookup(fileKey(file, hash)); r.found {
			r.objects, r.problems, r.fromDisk = cached.objects, cached.problems, true
		}
	}
	r.done = r.found
	return r
}

// decodeRead decodes a file lookupFile found no decode of, from what was
// read of it, and keeps the decode on disk.
func (l *Loader) decodeRead(ctx context.Context, file string, r *fileResult, disk *configDisk) {
	r.done = true
	if r.readErr != nil {
		r.hash, r.objects, r.problems = "", nil, []Problem{readProblem(file, "cannot read", r.readErr)}
		return
	}
	r.hash = plumbing.ComputeHash(plumbing.BlobObject, r.data).String()
	r.objects, r.problems = decode(file, r.data, "", l.keys)
	r.data, r.decoded = nil, true
	if disk != nil && ctx.Err() == nil {
		disk.store(fileKey(file, r.hash), decodedConfig{objects: r.objects, problems: r.problems})
	}
}

// fileContent is a config file with the hash of its content.
type fileContent struct{ file, hash string }

// reusable is the decode of a file's content an earlier load made.
type reusable struct {
	objects  []Object
	problems []Problem
}

// reuseIndex holds the decodes of files an earlier load made.
type reuseIndex map[fileContent]reusable

// of returns the decode of file with content hash, if one was made.
func (r reuseIndex) of(file, hash string) ([]Object, []Problem, bool) {
	if hash == "" {
		return nil, nil, false
	}
	d, ok := r[fileContent{file, hash}]
	return d.objects, d.problems, ok
}

// add files the decodes of each plain file d holds.
func (r reuseIndex) add(d decodedConfig) {
	objects, problems := d.objects, d.problems
	for _, f := range d.files {
		if f.objects > len(objects) || f.problems > len(problems) {
			return // not what decodeEach made: reuse none of it
		}
		if f.hash != "" {
			r[fileContent{f.file, f.hash}] = reusable{objects: objects[:f.objects:f.objects], problems: problems[:f.problems:f.problems]}
		}
		objects, problems = objects[f.objects:], problems[f.problems:]
	}
}
