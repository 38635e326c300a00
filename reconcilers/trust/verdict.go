package trust

import (
	"fmt"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// The trust rule of the state branch, as a pure function over one commit
// and its parents' verdicts (the walk in trust.go feeds it oldest first):
//
//   - A commit signed by a trusted state signer (the controller's key,
//     run --trust keys) may change anything, when every parent is
//     trusted.
//   - Any other commit (unsigned, signed by an approver or an unknown key)
//     may only add files under approvals/, requests/ and holds/: paths
//     absent in every parent. Approvals, requests and holds are then judged
//     one by one by the signature of the commit that added them.
//   - A commit on a tainted parent is tainted, except one signed by a
//     trusted state signer whose content (its tree without approvals/ and
//     requests/) equals the content of the last trusted commit: the revert
//     that heals the branch.

// ChangeAction is what a commit did to a path against one parent.
type ChangeAction string

const (
	PathAdded    ChangeAction = "added"
	PathModified ChangeAction = "modified"
	PathDeleted  ChangeAction = "deleted"
	// PathMalformed is a tree entry git would not write: a name given
	// twice in one tree, or one that is not a plain name.
	PathMalformed ChangeAction = "wrote a malformed tree entry (a name twice, or not a plain name) at"
)

// PathChange is one changed path; a directory path ends with "/" and stands
// for everything under it.
type PathChange struct {
	Path   string
	Action ChangeAction
}

func (c PathChange) String() string { return string(c.Action) + " " + c.Path }

// CommitFacts are what judging one state commit needs.
type CommitFacts struct {
	// Commit is the commit's hash, as git prints it.
	Commit string
	Author string
	// StateSigner is the trusted state signer whose signature verifies, ""
	// when none does.
	StateSigner string
	// Changes are the commit's changes against each parent, in parent
	// order (one list against nothing for a root commit). Only needed for
	// a commit no state signer signed.
	Changes [][]PathChange
	// Content identifies the commit's tree without approvals/ and requests/.
	Content string
}

// CommitVerdict is what the walk concluded about a commit and its history.
type CommitVerdict struct {
	// Trusted means everything outside approvals/ and requests/ was
	// written by a trusted state signer.
	Trusted bool
	// LastTrusted is the newest trusted commit of the history (the commit
	// itself when it is trusted); "" when there is none.
	LastTrusted string
	// Content is LastTrusted's content: what a healing commit restores.
	Content string
	// Refused is the commit that tainted the history; nil when trusted.
	Refused *RefusedCommit
}

// RefusedCommit is a state commit that changed what its signer may not.
type RefusedCommit struct {
	Commit string
	Author string
	// Changes are what it may not change.
	Changes []PathChange
	// Signer names who signed it ("unsigned", "alice", "an unknown key")
	// and Why says why that signer may not: filled in by the walk, which
	// knows the keys.
	Signer, Why string
	// NotRestoring are commits signed by a trusted state signer on top of
	// it that did not restore the last trusted content.
	NotRestoring []string
}

// JudgeCommit decides one commit from its facts and its parents' verdicts
// (in parent order; none for a root commit).
func JudgeCommit(c CommitFacts, parents []CommitVerdict) CommitVerdict {
	trusted := CommitVerdict{Trusted: true, LastTrusted: c.Commit, Content: c.Content}
	var tainted *CommitVerdict
	for i := range parents {
		if !parents[i].Trusted {
			tainted = &parents[i]
			break
		}
	}
	if c.StateSigner != "" {
		if tainted == nil {
			return trusted
		}
		for _, p := range parents {
			if !p.Trusted && p.Content != c.Content {
				v := *tainted
				r := *v.Refused
				r.NotRestoring = append(append([]string(nil), r.NotRestoring...), c.Commit)
				v.Refused = &r
				return v
			}
		}
		return trusted // a revert to the last trusted content heals the branch
	}
	if tainted != nil {
		return *tainted
	}
	var forbidden []PathChange
	seen := map[PathChange]bool{}
	for _, changes := range c.Changes {
		for _, ch := range changes {
			if ch.Action == PathAdded && isRecordPath(ch.Path) || seen[ch] {
				continue
			}
			seen[ch] = true
			forbidden = append(forbidden, ch)
		}
	}
	if len(forbidden) == 0 {
		return trusted
	}
	v := CommitVerdict{Refused: &RefusedCommit{Commit: c.Commit, Author: c.Author, Changes: forbidden}}
	if len(parents) > 0 {
		v.LastTrusted, v.Content = parents[0].LastTrusted, parents[0].Content
	}
	return v
}

// isRecordPath reports whether a path holds records anyone may add:
// approvals, promotion requests and holds, each judged by its own signature.
func isRecordPath(p string) bool { return reconcilers.IsRecordPath(p) }

// maxNamedChanges bounds the changes an error lists.
const maxNamedChanges = 5

// Describe says what the commit changed, who signed it and why that signer
// may not, and what to do, for the error that stops a pass.
func (r *RefusedCommit) Describe(branch string, lastTrusted string) string {
	var b strings.Builder
	changes := make([]string, 0, maxNamedChanges)
	for i, ch := range r.Changes {
		if i == maxNamedChanges {
			changes = append(changes, fmt.Sprintf("and %d more", len(r.Changes)-i))
			break
		}
		changes = append(changes, ch.String())
	}
	fmt.Fprintf(&b, "state commit %s by %s %s, %s: %s", v1alpha1.ShortCommit(r.Commit), r.Author, strings.Join(changes, ", "), r.Signer, r.Why)
	for _, h := range r.NotRestoring {
		fmt.Fprintf(&b, "; commit %s on top of it is signed by a trusted state signer but does not restore the content of the last trusted commit, so it does not clear it", v1alpha1.ShortCommit(h))
	}
	b.WriteString(". Nothing is decided on top of it: ")
	if lastTrusted == "" {
		fmt.Fprintf(&b, "no commit of %s is trusted; reset it to a commit signed by the controller's key, or delete it to start afresh", branch)
		return b.String()
	}
	fmt.Fprintf(&b, "revert it in a commit signed by the controller's key (or a run --trust key) that restores the content of %s, the last trusted commit (approvals/ and requests/ aside), or reset %s to %s",
		v1alpha1.ShortCommit(lastTrusted), branch, v1alpha1.ShortCommit(lastTrusted))
	return b.String()
}

// shortCommit is a commit hash as people quote it.
