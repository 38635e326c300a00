package render

import "fmt"

// BuildError is kustomize refusing a kustomization.
type BuildError struct {
	Dir  string // the directory being built
	File string // the file kustomize names in its error, relative to the root, when it names one
	Err  error
}

func (e *BuildError) Error() string {
	if e.File != "" && e.File != e.Dir {
		return fmt.Sprintf("kustomize build %s (in %s): %v", e.Dir, e.File, e.Err)
	}
	return fmt.Sprintf("kustomize build %s: %v", e.Dir, e.Err)
}

func (e *BuildError) Unwrap() error { return e.Err }
