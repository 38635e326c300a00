package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// The state branch's history is the object's history: each state commit
// records what a pass changed, so the commits that changed an object's file
// are its transitions, and the commit that added the file is its creation
// (the state branch's objects have no creationTimestamp of their own).

// stateRevision is one commit that changed a file of the state branch.
type stateRevision struct {
	Commit  plumbing.Hash
	When    time.Time
	Subject string
	// Content is the file as the commit left it; nil when it deleted it.
	Content []byte
}

// errStopWalk ends a history walk early, without error.
var errStopWalk = errors.New("stop")

// walkFirstParents visits the commits from tip along first parents,
// newest first, each with its first parent (nil for the root commit).
func walkFirstParents(st storer.EncodedObjectStorer, tip plumbing.Hash, visit func(c, parent *object.Commit) error) error {
	c, err := object.GetCommit(st, tip)
	for err == nil {
		var parent *object.Commit
		if c.NumParents() > 0 {
			if parent, err = c.Parent(0); err != nil {
				return fmt.Errorf("read the parent of state commit %s: %w", c.Hash, err)
			}
		}
		if err = visit(c, parent); err != nil {
			break
		}
		if parent == nil {
			return nil
		}
		c = parent
	}
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// creationTimes finds, for each of paths, when the state commit that last
// added it was made: the object's age. A path not found is absent.
func creationTimes(st storer.EncodedObjectStorer, tip plumbing.Hash, paths []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	want := map[string]bool{}
	for _, p := range paths {
		if p != "" {
			want[p] = true
		}
	}
	if tip.IsZero() || len(want) == 0 {
		return out, nil
	}
	err := walkFirstParents(st, tip, func(c, parent *object.Commit) error {
		tree, err := c.Tree()
		if err != nil {
			return err
		}
		var before *object.Tree
		if parent != nil {
			if before, err = parent.Tree(); err != nil {
				return err
			}
		}
		changes, err := object.DiffTree(before, tree)
		if err != nil {
			return fmt.Errorf("compare state commit %s with its parent: %w", c.Hash, err)
		}
		for _, ch := range changes {
			if ch.From.Name == "" && want[ch.To.Name] {
				out[ch.To.Name] = c.Committer.When
				delete(want, ch.To.Name)
			}
		}
		if len(want) == 0 {
			return errStopWalk
		}
		return nil
	})
	return out, err
}

// fileRevisions are the commits that changed path, newest first, back to
// the one that added it last.
func fileRevisions(st storer.EncodedObjectStorer, tip plumbing.Hash, path string) ([]stateRevision, error) {
	var out []stateRevision
	if tip.IsZero() {
		return nil, nil
	}
	blob := func(c *object.Commit) (plumbing.Hash, error) {
		if c == nil {
			return plumbing.ZeroHash, nil
		}
		tree, err := c.Tree()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		e, err := tree.FindEntry(path)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return plumbing.ZeroHash, nil
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
		return e.Hash, nil
	}
	err := walkFirstParents(st, tip, func(c, parent *object.Commit) error {
		cur, err := blob(c)
		if err != nil {
			return err
		}
		prev, err := blob(parent)
		if err != nil {
			return err
		}
		if cur == prev {
			return nil
		}
		rev := stateRevision{Commit: c.Hash, When: c.Committer.When, Subject: strings.SplitN(c.Message, "\n", 2)[0]}
		if !cur.IsZero() {
			b, err := object.GetBlob(st, cur)
			if err != nil {
				return err
			}
			if rev.Content, err = readBlob(b); err != nil {
				return fmt.Errorf("read %s at state commit %s: %w", path, c.Hash, err)
			}
		}
		out = append(out, rev)
		if prev.IsZero() {
			return errStopWalk // the commit that added it
		}
		return nil
	})
	return out, err
}

// observed is what a transition compares of a state object: the status
// fields people follow and the conditions.
type observed struct {
	Status struct {
		State        string             `json:"state,omitempty"`
		Vector       string             `json:"vector,omitempty"`
		ActiveVector string             `json:"activeVector,omitempty"`
		SourceVector string             `json:"sourceVector,omitempty"`
		TargetVector string             `json:"targetVector,omitempty"`
		LatestVector string             `json:"latestVector,omitempty"`
		Sequence     int64              `json:"sequence,omitempty"`
		Commit       string             `json:"commit,omitempty"`
		Conditions   []metav1.Condition `json:"conditions,omitempty"`
		Approvals    []approvalName     `json:"approvals,omitempty"`
	} `json:"status"`
}

// transitions says what changed between two versions of a state object's
// file (before nil: it was created; after nil: it was deleted), one line
// per field or condition, in a fixed order.
func transitions(before, after []byte) ([]string, error) {
	if after == nil {
		return []string{"deleted"}, nil
	}
	var old, cur observed
	if before != nil {
		if err := yaml.Unmarshal(before, &old); err != nil {
			return nil, err
		}
	}
	if err := yaml.Unmarshal(after, &cur); err != nil {
		return nil, err
	}
	var out []string
	if before == nil {
		out = append(out, "created")
	}
	field := func(name, from, to string) {
		switch {
		case from == to:
		case from == "":
			out = append(out, fmt.Sprintf("%s: %s", name, to))
		case to == "":
			out = append(out, fmt.Sprintf("%s: %s → none", name, from))
		default:
			out = append(out, fmt.Sprintf("%s: %s → %s", name, from, to))
		}
	}
	o, n := old.Status, cur.Status
	field("state", o.State, n.State)
	field("vector", o.Vector, n.Vector)
	field("activeVector", o.ActiveVector, n.ActiveVector)
	field("sourceVector", o.SourceVector, n.SourceVector)
	field("targetVector", o.TargetVector, n.TargetVector)
	field("latestVector", o.LatestVector, n.LatestVector)
	seq := func(s int64) string {
		if s == 0 {
			return ""
		}
		return fmt.Sprint(s)
	}
	field("sequence", seq(o.Sequence), seq(n.Sequence))
	field("commit", v1alpha1.ShortCommit(o.Commit), v1alpha1.ShortCommit(n.Commit))
	for _, c := range n.Conditions {
		i := slices.IndexFunc(o.Conditions, func(p metav1.Condition) bool { return p.Type == c.Type })
		now := fmt.Sprintf("%s (%s)", c.Status, c.Reason)
		if i < 0 {
			out = append(out, fmt.Sprintf("%s: %s", c.Type, now))
		} else if p := o.Conditions[i]; p.Status != c.Status || p.Reason != c.Reason {
			out = append(out, fmt.Sprintf("%s: %s (%s) → %s", c.Type, p.Status, p.Reason, now))
		}
	}
	for _, c := range o.Conditions {
		if !slices.ContainsFunc(n.Conditions, func(p metav1.Condition) bool { return p.Type == c.Type }) {
			out = append(out, fmt.Sprintf("%s: removed", c.Type))
		}
	}
	for _, a := range n.Approvals {
		if !slices.Contains(o.Approvals, a) {
			out = append(out, "approved by "+a.ApprovedBy)
		}
	}
	return out, nil
}

type approvalName struct {
	ApprovedBy string `json:"approvedBy"`
}

// readBlob reads a state file, refusing one larger than the limit the
// controller reads the state with.
func readBlob(b *object.Blob) ([]byte, error) {
	if b.Size > maxStateFileSize {
		return nil, fmt.Errorf("the file is %d bytes, more than %d", b.Size, maxStateFileSize)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// maxStateFileSize bounds one state file read for its history: a state
// object is a few kilobytes.
const maxStateFileSize = 4 << 20
