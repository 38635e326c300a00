package source

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlowImportsOneWay: data flows source → render → reconcilers →
// gitwriter (DESIGN.md), so no package of the flow may depend, directly or
// through another vectorflow package, on one further along it. Tests may
// (render's tests read through source's trees); only the built code counts.
func TestFlowImportsOneWay(t *testing.T) {
	const module = "github.com/vectorflow-dev/vectorflow/"
	flow := []string{"source", "render", "reconcilers", "gitwriter"}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// deps are the vectorflow packages that the packages at and below
	// start (reconcilers/pass is part of reconcilers) depend on.
	deps := func(start string) map[string]bool {
		seen := map[string]bool{}
		var walk func(rel string)
		walk = func(rel string) {
			pkg, err := build.ImportDir(filepath.Join(root, rel), 0)
			if err != nil {
				t.Fatalf("read package %s: %v", rel, err)
			}
			for _, imp := range pkg.Imports {
				if dep, ok := strings.CutPrefix(imp, module); ok && !seen[dep] {
					seen[dep] = true
					walk(dep)
				}
			}
		}
		err := filepath.WalkDir(filepath.Join(root, start), func(dir string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if e.Name() == "testdata" {
				return filepath.SkipDir
			}
			if _, err := build.ImportDir(dir, 0); err != nil {
				return nil // no Go files here
			}
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return err
			}
			walk(filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen
	}
	for i, pkg := range flow {
		got := deps(pkg)
		for _, later := range flow[i+1:] {
			for dep := range got {
				if dep == later || strings.HasPrefix(dep, later+"/") {
					t.Errorf("%s depends on %s, which comes after it in the flow %s", pkg, dep, strings.Join(flow, " → "))
				}
			}
		}
	}
}
