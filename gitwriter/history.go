package gitwriter

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// History is what the promotion commits reachable from a target branch's
// tip say: the ratchet. The state branch can be rewound or deleted; the
// target's history is append-only evidence of which promotions ran there,
// so a promotion is checked against it at the moment it is written
// (Check), and new sequences continue after the newest it holds.
type History struct {
	tip plumbing.Hash
	// newest is each config's highest sequence into each stage. The
	// stage is part of the key because config names are unique only
	// within one config repository, and several may write one branch.
	newest map[line]HistoryEntry
	// promotions are every commit of each promotion, newest first.
	promotions map[string][]HistoryEntry
}

// HistoryEntry is one promotion commit on a target branch.
type HistoryEntry struct {
	Promotion string
	// Config is the promotion's config: its Vectorflow-Config trailer, or
	// the promotion name without its "-<sequence>" suffix for commits made
	// before that trailer existed; empty when neither says.
	Config   string
	Sequence int64
	Vector   string
	// Target is the stage written, as the Vectorflow-Target trailer names
	// it (Stage/<landscape>/<name>).
	Target string
	Commit plumbing.Hash
}

// line is a config's promotions into one stage: the sequence they share.
type line struct{ config, target string }

// NewHistory is the history at tip holding entries, newest first: what
// indexing a branch with those promotion commits yields.
func NewHistory(tip plumbing.Hash, entries ...HistoryEntry) *History {
	return addEntries(&History{tip: tip}, entries)
}

// Tip is the commit the history was read from.
func (h *History) Tip() plumbing.Hash { return h.tip }

// Sequence is the highest sequence of config into target (as the
// Vectorflow-Target trailer names it) the history holds, 0 if none.
func (h *History) Sequence(config, target string) int64 {
	return h.newest[line{config, target}].Sequence
}

// Newest is the promotion commit with the highest sequence of config into
// target.
func (h *History) Newest(config, target string) (HistoryEntry, bool) {
	e, ok := h.newest[line{config, target}]
	return e, ok
}

// Commits are the commits of promotion name, newest first.
func (h *History) Commits(name string) []HistoryEntry { return h.promotions[name] }

// Check decides whether promotion t may still be written on top of the
// history plus pending (commits made on top of it but not pushed yet). The
// error is a *HistoryError when the history already holds the same
// promotion with another vector (PromotionIdentityReused), or, unless
// onlyIdentity, a newer sequence of the same config into the same stage
// (SupersededInTarget).
// earlier is the newest commit of the same promotion and vector, if any:
// the promotion may already be applied.
func (h *History) Check(t Trailers, pending []HistoryEntry, onlyIdentity bool) (earlier *HistoryEntry, err error) {
	entries := append(entriesNamed(pending, t.Promotion), h.Commits(t.Promotion)...)
	for i := range entries {
		e := entries[i]
		if e.Vector != t.Vector {
			return nil, &HistoryError{Promotion: t.Promotion, Vector: t.Vector, Reason: v1alpha1.PromotionIdentityReusedReason, Entry: e}
		}
		if earlier == nil {
			earlier = &e
		}
	}
	config := trailerConfig(t)
	if onlyIdentity || config == "" {
		return earlier, nil
	}
	newest, ok := h.Newest(config, t.Target)
	for _, e := range pending {
		if e.Config == config && e.Target == t.Target && (!ok || e.Sequence > newest.Sequence) {
			newest, ok = e, true
		}
	}
	if ok && newest.Sequence > t.Sequence {
		return nil, &HistoryError{Promotion: t.Promotion, Vector: t.Vector, Sequence: t.Sequence,
			Reason: v1alpha1.PromotionSupersededInTargetReason, Entry: newest}
	}
	return earlier, nil
}

func entriesNamed(entries []HistoryEntry, name string) []HistoryEntry {
	var out []HistoryEntry
	for i := len(entries) - 1; i >= 0; i-- { // newest first
		if entries[i].Promotion == name {
			out = append(out, entries[i])
		}
	}
	return out
}

// HistoryError is a promotion its target branch's history refuses: a newer
// sequence of its config already ran there, or its name was already used
// for another vector. Nothing was written; retrying does not help.
type HistoryError struct {
	// URL and Branch are the target; the writer fills them in.
	URL, Branch string
	Promotion   string
	Vector      string
	Sequence    int64
	// Reason is v1alpha1.PromotionSupersededInTargetReason or
	// v1alpha1.PromotionIdentityReusedReason.
	Reason string
	// Entry is the commit that decides it.
	Entry HistoryEntry
}

// Superseded reports whether a newer promotion of the same config is the
// reason, as opposed to a reused identity.
func (e *HistoryError) Superseded() bool {
	return e.Reason == v1alpha1.PromotionSupersededInTargetReason
}

func (e *HistoryError) Error() string {
	where := "the target branch"
	if e.Branch != "" {
		where = fmt.Sprintf("branch %s of %s", e.Branch, e.URL)
	}
	if e.Superseded() {
		return fmt.Sprintf("%s already holds %s (sequence %d of %s, vector %s) at commit %s: writing %s (sequence %d) would roll the stage back, so nothing was written",
			where, e.Entry.Promotion, e.Entry.Sequence, e.Entry.Config, orUnknown(e.Entry.Vector), v1alpha1.ShortCommit(e.Entry.Commit.String()), e.Promotion, e.Sequence)
	}
	return fmt.Sprintf("%s already holds commit %s of promotion %s with vector %s, not %s: a promotion's name is its identity, so nothing was written; promote the vector under a new promotion (vectorflow promote)",
		where, v1alpha1.ShortCommit(e.Entry.Commit.String()), e.Promotion, orUnknown(e.Entry.Vector), orUnknown(e.Vector))
}

func orUnknown(vector string) string {
	if vector == "" {
		return "(none recorded)"
	}
	return vector
}

// trailerConfig is the config a promotion commit belongs to: its
// Vectorflow-Config trailer, or its name without "-<sequence>".
func trailerConfig(t Trailers) string {
	if t.Config != "" {
		return t.Config
	}
	if t.Sequence <= 0 {
		return ""
	}
	config, ok := strings.CutSuffix(t.Promotion, "-"+strconv.FormatInt(t.Sequence, 10))
	if !ok {
		return ""
	}
	return config
}

// entryOf is what commit's trailers t say about it.
func entryOf(t Trailers, commit plumbing.Hash) HistoryEntry {
	return HistoryEntry{Promotion: t.Promotion, Config: trailerConfig(t), Sequence: t.Sequence,
		Vector: t.Vector, Target: t.Target, Commit: commit}
}

// historyIndex keeps a branch's History current as its tip moves, reading
// only the commits it has not read before: the first read walks the whole
// history once, every later one the new commits. Not safe for concurrent
// use; branchState's lock guards it.
type historyIndex struct {
	current *History
	// seen are the commits reachable from current.tip.
	seen map[plumbing.Hash]struct{}
}

// at returns the history at tip. A tip that does not descend from the
// indexed one (the branch was reset or force-pushed) is indexed afresh.
func (x *historyIndex) at(s storer.EncodedObjectStorer, tip plumbing.Hash) (*History, error) {
	if x.current != nil && x.current.tip == tip {
		return x.current, nil
	}
	if x.current != nil && !x.current.tip.IsZero() {
		h, seen, extended, err := extendHistory(s, x.current, x.seen, tip)
		if err != nil {
			x.current, x.seen = nil, nil // seen names commits the failed read did not index
			return nil, err
		}
		if extended {
			x.current, x.seen = h, seen
			return h, nil
		}
		x.current, x.seen = nil, nil // seen now mixes two lines of history
	}
	empty := &History{}
	h, seen, _, err := extendHistory(s, empty, map[plumbing.Hash]struct{}{}, tip)
	if err != nil {
		return nil, err
	}
	x.current, x.seen = h, seen
	return h, nil
}

// contains reports whether commit is in the indexed history.
func (x *historyIndex) contains(commit plumbing.Hash) bool {
	if x.current == nil {
		return false
	}
	if commit == x.current.tip {
		return true
	}
	_, ok := x.seen[commit]
	return ok
}

// extendHistory reads the commits reachable from tip that seen lacks (all
// parents, so promotions merged from a pull request count) and returns the
// history at tip. extended is false when base.tip is not among tip's
// ancestors: the result then mixes two lines of history and is discarded by
// the caller. seen is updated in place; base is not modified.
func extendHistory(s storer.EncodedObjectStorer, base *History, seen map[plumbing.Hash]struct{}, tip plumbing.Hash) (*History, map[plumbing.Hash]struct{}, bool, error) {
	out := &History{tip: tip, newest: base.newest, promotions: base.promotions}
	if tip.IsZero() {
		return out, seen, base.tip.IsZero(), nil
	}
	reached := base.tip.IsZero()
	var found []HistoryEntry // newest first
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if _, ok := seen[h]; ok {
			reached = reached || h == base.tip
			continue
		}
		seen[h] = struct{}{}
		// A commit the store lacks fails the read: a history that ended
		// there would hold lower sequences than the branch, and the
		// ratchet would let an older promotion through. vectorflow never
		// fetches shallow, so a hole is damage, which the store's next
		// fetch repairs.
		c, err := object.GetCommit(s, h)
		if err != nil {
			return nil, nil, false, fmt.Errorf("read commit %s: %w", h, err)
		}
		if t, ok := ParseTrailers(c.Message); ok {
			found = append(found, entryOf(t, h))
		}
		queue = append(queue, c.ParentHashes...)
	}
	return addEntries(out, found), seen, reached, nil
}

// addEntries returns h with found (newest first, all newer than h's
// entries) added. Copy on write: a History handed out earlier stays as it
// was.
func addEntries(h *History, found []HistoryEntry) *History {
	if len(found) == 0 {
		return h
	}
	out := &History{tip: h.tip}
	out.newest = make(map[line]HistoryEntry, len(h.newest)+len(found))
	for k, v := range h.newest {
		out.newest[k] = v
	}
	out.promotions = make(map[string][]HistoryEntry, len(h.promotions)+len(found))
	for k, v := range h.promotions {
		out.promotions[k] = v
	}
	for i := len(found) - 1; i >= 0; i-- { // oldest first, so the newest ends up in front
		e := found[i]
		out.promotions[e.Promotion] = append([]HistoryEntry{e}, out.promotions[e.Promotion]...)
		if e.Config == "" {
			continue
		}
		k := line{e.Config, e.Target}
		if old, ok := out.newest[k]; !ok || e.Sequence >= old.Sequence {
			out.newest[k] = e
		}
	}
	return out
}

// TreeAt returns the tree of commit on target's branch, fetching the branch
// when this process has not seen the commit: what a stage ran at an
// earlier promotion, for the inventory a new one is compared with.
func (w *Writer) TreeAt(ctx context.Context, target Target, commit plumbing.Hash) (*object.Tree, error) {
	if err := validTarget(target); err != nil {
		return nil, err
	}
	st := w.branch(target.Remote.URL, target.Branch)
	if err := st.lock(ctx); err != nil {
		return nil, err
	}
	defer st.unlock()
	c, err := object.GetCommit(st.repo.s, commit)
	if err != nil {
		if _, err := st.repo.fetch(ctx, target.Remote, target.Branch); err != nil {
			return nil, err
		}
		if c, err = object.GetCommit(st.repo.s, commit); err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", commit, target.Remote.URL, err)
		}
	}
	return c.Tree()
}
