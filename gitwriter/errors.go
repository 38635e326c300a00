package gitwriter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ErrConflict is wrapped by a ConflictError: the branch tip is not the one a
// compare-and-swap expected. Re-read, re-decide, retry.
var ErrConflict = errors.New("branch tip moved")

// errBranchMoved is a push that found the branch elsewhere than where the
// new commits were built.
var errBranchMoved = errors.New("non-fast-forward update: the branch moved")

// ConflictError says whose write won a compare-and-swap.
type ConflictError struct {
	URL, Branch      string
	Expected, Actual plumbing.Hash
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("branch %s of %s is at %s, expected %s: someone else wrote; re-read the branch and retry",
		e.Branch, e.URL, hashOrNone(e.Actual), hashOrNone(e.Expected))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// EditError is a file edit that failed: the file is missing when the edit
// needs it, or its content does not parse. Retrying does not help.
type EditError struct {
	Change string
	Path   string
	Err    error
}

func (e *EditError) Error() string {
	return fmt.Sprintf("change %q: edit %s: %v", e.Change, e.Path, e.Err)
}

func (e *EditError) Unwrap() error { return e.Err }

// CheckError is a change whose edited tree its Check refused, such as an
// overlay that no longer builds or does not run what the change wrote.
// Retrying does not help: the edit itself is wrong for this tree.
type CheckError struct {
	Change string
	Err    error
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("change %q: %v", e.Change, e.Err)
}

func (e *CheckError) Unwrap() error { return e.Err }

// SignError is a commit that could not be signed, usually a wrong key or
// passphrase in the signing secret.
type SignError struct {
	Change string
	Err    error
}

func (e *SignError) Error() string {
	return fmt.Sprintf("change %q: sign commit: %v (check the signing key and its passphrase)", e.Change, e.Err)
}

func (e *SignError) Unwrap() error { return e.Err }

// RemoteError is a fetch or push the remote refused for a reason other than
// a moved branch: authentication, a hook, a missing repository.
type RemoteError struct {
	Op     string // "fetch" or "push"
	URL    string
	Branch string
	Err    error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s branch %s of %s: %v", e.Op, e.Branch, e.URL, e.Err)
}

func (e *RemoteError) Unwrap() error { return e.Err }

// UncertainPushError is a push whose answer was lost (the connection broke,
// the server went away after receiving it) while the branch could not be
// read back: the commits may or may not be on the branch. It is not a
// failure; the next read of the branch settles it.
type UncertainPushError struct {
	URL, Branch string
	Err         error
}

func (e *UncertainPushError) Error() string {
	return fmt.Sprintf("push to branch %s of %s: the answer was lost and the branch could not be read back (%v); the next attempt reads it again",
		e.Branch, e.URL, e.Err)
}

func (e *UncertainPushError) Unwrap() error { return e.Err }

// RetriesExhaustedError is a push that kept losing the race against other
// writers of the branch.
type RetriesExhaustedError struct {
	URL, Branch string
	Attempts    int
	Err         error
}

func (e *RetriesExhaustedError) Error() string {
	return fmt.Sprintf("push to branch %s of %s: branch moved on each of %d attempts: %v",
		e.Branch, e.URL, e.Attempts, e.Err)
}

func (e *RetriesExhaustedError) Unwrap() error { return e.Err }

// isMovedBranch reports whether a push failed only because the branch moved
// under it. go-git has no sentinel for this; servers phrase it in several
// ways.
func isMovedBranch(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errBranchMoved) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{
		"non-fast-forward",
		"stale info",
		"incorrect old value",
		"failed to update ref",
		"fetch first",
		"cannot lock ref",
		"failed to lock",
		"but is absent",  // go-git RequireRemoteRefs: the branch was deleted
		"required to be", // go-git RequireRemoteRefs: the branch moved
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func hashOrNone(h plumbing.Hash) string {
	if h.IsZero() {
		return "(no branch)"
	}
	return h.String()
}
