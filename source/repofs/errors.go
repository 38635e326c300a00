package repofs

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// The kinds of EscapeError; test with errors.Is.
var (
	// ErrOutsideRoot: a reference climbs above the repository root with "..".
	ErrOutsideRoot = errors.New("reference leaves the repository root")
	// ErrAbsolutePath: a reference is an absolute path.
	ErrAbsolutePath = errors.New("absolute paths are not allowed")
	// ErrSymlinkEscape: a symbolic link points outside the repository root.
	ErrSymlinkEscape = errors.New("symbolic link points outside the repository root")
	// ErrRemoteBase: a reference is a git or http URL and remote bases are disabled.
	ErrRemoteBase = errors.New("remote bases are disabled (Options.AllowRemoteBases)")
)

// EscapeError is a build that would load something from outside the
// repository. It is never cached and never partially rendered.
type EscapeError struct {
	Dir    string // the directory being built; empty when raised by a Tree directly
	File   string // the kustomization file holding Ref, when known
	Ref    string // the offending reference as written, or the symlink's path
	Target string // a symlink's target
	Kind   error  // ErrOutsideRoot, ErrAbsolutePath, ErrSymlinkEscape or ErrRemoteBase
}

func (e *EscapeError) Error() string {
	msg := ""
	if e.Dir != "" {
		msg = fmt.Sprintf("build %s: ", e.Dir)
	}
	if e.File != "" {
		msg += e.File + ": "
	}
	if e.Target != "" {
		msg += fmt.Sprintf("symlink %q -> %q", e.Ref, e.Target)
	} else {
		msg += fmt.Sprintf("reference %q", e.Ref)
	}
	msg += ": " + e.Kind.Error()
	if e.Kind == ErrRemoteBase {
		return msg + "; vendor the base into the repository"
	}
	return msg + "; keep every reference a relative path inside the repository"
}

func (e *EscapeError) Unwrap() error { return e.Kind }

// CleanDir accepts a directory name relative to the repository root.
func CleanDir(dir string) (string, error) {
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
