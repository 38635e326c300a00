package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

// StateTrust checks the history of a state branch against its trusted state
// signers (see trust.JudgeCommit for the rule) and remembers the verdict of every
// commit it judged, so an unchanged tip costs a map lookup and a new tip
// costs only its new commits. The controller keeps one for its life; `get`
// makes one per run. It is not safe for concurrent use.
type StateTrust struct {
	signers  *gitwriter.Verifier
	names    []string
	verdicts map[plumbing.Hash]trust.CommitVerdict
	// keys digests the trusted keys: a verdict holds for these keys only.
	keys string
}

// ErrUntrustedState is wrapped by the error of a state branch whose tip is
// not trusted.
var ErrUntrustedState = errors.New("the state branch is not trusted")

// NewStateTrust trusts signers to write the state branch. There must be at
// least one: without a trusted writer, nothing on the branch can be believed.
func NewStateTrust(signers []gitwriter.TrustedKey) (*StateTrust, error) {
	signers = uniqueKeys(signers)
	if len(signers) == 0 {
		return nil, errors.New("no trusted state signer: the controller's own signing key (or run --trust keys) must sign the state branch")
	}
	v, err := gitwriter.NewVerifier(signers)
	if err != nil {
		return nil, fmt.Errorf("trusted state signers: %w", err)
	}
	t := &StateTrust{signers: v, verdicts: map[plumbing.Hash]trust.CommitVerdict{}}
	sum := sha256.New()
	for _, k := range signers {
		t.names = append(t.names, k.Name)
		fmt.Fprintf(sum, "%q %q\n", k.Name, strings.TrimSpace(k.PublicKey))
	}
	t.keys = hex.EncodeToString(sum.Sum(nil))
	return t, nil
}

// rememberTrusted takes the verdict that commit and its whole history are
// trusted, judged earlier against the same keys (another process's): a
// commit hash fixes its content and its parents, so the verdict still
// holds, and a walk from a newer tip stops there.
func (t *StateTrust) rememberTrusted(commit plumbing.Hash, v trust.CommitVerdict) {
	if v.Trusted && v.Refused == nil && v.LastTrusted == commit.String() {
		t.verdicts[commit] = v
	}
}

// uniqueKeys drops a key listed again (the same text), which the verifier
// would take for one key under two names.
func uniqueKeys(keys []gitwriter.TrustedKey) []gitwriter.TrustedKey {
	seen := map[string]bool{}
	var out []gitwriter.TrustedKey
	for _, k := range keys {
		pub := strings.TrimSpace(k.PublicKey)
		if seen[pub] {
			continue
		}
		seen[pub] = true
		out = append(out, k)
	}
	return out
}

// Known returns the verdict of a commit judged before.
func (t *StateTrust) Known(commit plumbing.Hash) (trust.CommitVerdict, bool) {
	v, ok := t.verdicts[commit]
	return v, ok
}

// Verify judges every commit reachable from tip (through all parents) not
// judged before, oldest first, and returns tip's verdict. configs name the
// approvers, so a refusal can say who signed: they do not change verdicts.
func (t *StateTrust) Verify(s storer.EncodedObjectStorer, tip plumbing.Hash, configs map[string]*v1alpha1.VectorPromotionConfig) (trust.CommitVerdict, error) {
	if v, ok := t.verdicts[tip]; ok {
		return v, nil
	}
	commits := map[plumbing.Hash]*object.Commit{}
	expanded := map[plumbing.Hash]bool{}
	stack := []plumbing.Hash{tip}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		if _, done := t.verdicts[h]; done {
			stack = stack[:len(stack)-1]
			continue
		}
		if expanded[h] {
			// Every parent was pushed above h, so each is judged by now.
			stack = stack[:len(stack)-1]
			v, err := t.judge(s, commits[h], configs)
			if err != nil {
				return trust.CommitVerdict{}, err
			}
			t.verdicts[h] = v
			delete(commits, h)
			continue
		}
		c, err := object.GetCommit(s, h)
		if err != nil {
			return trust.CommitVerdict{}, fmt.Errorf("read state commit %s: %w", h, err)
		}
		commits[h], expanded[h] = c, true
		for _, p := range c.ParentHashes {
			if _, done := t.verdicts[p]; !done && !expanded[p] {
				stack = append(stack, p)
			}
		}
	}
	return t.verdicts[tip], nil
}

// judge gathers a commit's facts and applies trust.JudgeCommit.
func (t *StateTrust) judge(s storer.EncodedObjectStorer, c *object.Commit, configs map[string]*v1alpha1.VectorPromotionConfig) (trust.CommitVerdict, error) {
	facts := trust.CommitFacts{Commit: c.Hash.String(), Author: c.Author.String()}
	var sigErr error
	if c.PGPSignature != "" {
		facts.StateSigner, sigErr = t.signers.VerifyCommit(c)
	}
	parents := make([]trust.CommitVerdict, len(c.ParentHashes))
	parentTrees := make([]plumbing.Hash, len(c.ParentHashes))
	allTrusted := true
	for i, p := range c.ParentHashes {
		parents[i] = t.verdicts[p]
		allTrusted = allTrusted && parents[i].Trusted
		pc, err := object.GetCommit(s, p)
		if err != nil {
			return trust.CommitVerdict{}, fmt.Errorf("read parent %s of state commit %s: %w", p, c.Hash, err)
		}
		parentTrees[i] = pc.TreeHash
	}
	content, err := contentOf(s, c.TreeHash)
	if err != nil {
		return trust.CommitVerdict{}, err
	}
	facts.Content = content.String()
	if facts.StateSigner == "" && allTrusted {
		if len(parentTrees) == 0 {
			parentTrees = []plumbing.Hash{plumbing.ZeroHash}
		}
		for _, pt := range parentTrees {
			var changes []trust.PathChange
			if err := diffTrees(s, pt, c.TreeHash, "", &changes); err != nil {
				return trust.CommitVerdict{}, fmt.Errorf("diff state commit %s: %w", c.Hash, err)
			}
			facts.Changes = append(facts.Changes, changes)
		}
	}
	v := trust.JudgeCommit(facts, parents)
	if v.Refused != nil && v.Refused.Commit == c.Hash.String() {
		r := *v.Refused
		r.Signer, r.Why = t.describeSigner(c, sigErr, configs)
		v.Refused = &r
	}
	return v, nil
}

// describeSigner says who signed a commit no state signer signed, and why
// that signer may not change the state.
func (t *StateTrust) describeSigner(c *object.Commit, sigErr error, configs map[string]*v1alpha1.VectorPromotionConfig) (signer, why string) {
	records := "may only add approval records and promotion requests (new files under approvals/ and requests/)"
	writers := "only the trusted state signers (" + strings.Join(t.names, ", ") + ") may change the state"
	if c.PGPSignature == "" {
		return "unsigned", "unsigned commits " + records + "; " + writers
	}
	byName := map[string][]string{}
	for _, name := range keys.Sorted(configs) {
		a := configs[name].Spec.Approval
		if a == nil || len(a.Approvers) == 0 {
			continue
		}
		keys := make([]gitwriter.TrustedKey, 0, len(a.Approvers))
		for _, ap := range a.Approvers {
			keys = append(keys, gitwriter.TrustedKey{Name: ap.Name, PublicKey: ap.PublicKey})
		}
		v, err := gitwriter.NewVerifier(keys)
		if err != nil {
			continue
		}
		if who, err := v.VerifyCommit(c); err == nil {
			byName[who] = append(byName[who], name)
		}
	}
	if len(byName) > 0 {
		var names, roles []string
		for who, cfgs := range byName {
			names = append(names, who)
			roles = append(roles, fmt.Sprintf("%s is an approver of %s", who, strings.Join(cfgs, ", ")))
		}
		sort.Strings(names)
		sort.Strings(roles)
		return "signed by " + strings.Join(names, " and "), strings.Join(roles, "; ") + "; approvers " + records + "; " + writers
	}
	if errors.Is(sigErr, gitwriter.ErrBadSignature) {
		return "with a signature that does not verify", fmt.Sprintf("%v; such commits %s; %s", sigErr, records, writers)
	}
	return "signed by an unknown key", "commits by keys that are not trusted state signers " + records + "; " + writers
}

// contentOf identifies a tree without its approvals/, requests/ and holds/ entries:
// the hash of the tree object that would hold the rest.
func contentOf(s storer.EncodedObjectStorer, tree plumbing.Hash) (plumbing.Hash, error) {
	t, err := object.GetTree(s, tree)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read state tree %s: %w", tree, err)
	}
	rest := &object.Tree{}
	for _, e := range t.Entries {
		if !reconcilers.IsRecordPath(e.Name + "/") {
			rest.Entries = append(rest.Entries, e)
		}
	}
	obj := &plumbing.MemoryObject{}
	if err := rest.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode state tree %s: %w", tree, err)
	}
	return obj.Hash(), nil
}

// diffTrees lists what changed from tree a to tree b (zero for none),
// descending only into subtrees whose hashes differ, so its cost is the size
// of the change rather than of the tree. A whole subtree added or deleted is
// one change naming the directory.
func diffTrees(s storer.EncodedObjectStorer, a, b plumbing.Hash, prefix string, out *[]trust.PathChange) error {
	entries := func(h plumbing.Hash) (map[string]object.TreeEntry, error) {
		m := map[string]object.TreeEntry{}
		if h.IsZero() {
			return m, nil
		}
		t, err := object.GetTree(s, h)
		if err != nil {
			return nil, fmt.Errorf("read tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			// git writes one entry per name, each a plain name; a
			// hand-made tree may not. Readers disagree on which of two
			// entries of one name counts (a diff keeping the last would
			// miss a forged first one that a file walk still reads), so
			// such a tree is no record anyone may add.
			if _, twice := m[e.Name]; twice || !plainTreeName(e.Name) {
				*out = append(*out, trust.PathChange{Path: prefix + e.Name, Action: trust.PathMalformed})
			}
			m[e.Name] = e
		}
		return m, nil
	}
	from, err := entries(a)
	if err != nil {
		return err
	}
	to, err := entries(b)
	if err != nil {
		return err
	}
	name := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return prefix + e.Name + "/"
		}
		return prefix + e.Name
	}
	for _, n := range keys.Sorted(to) {
		e := to[n]
		old, ok := from[n]
		switch {
		case !ok:
			*out = append(*out, trust.PathChange{Path: name(e), Action: trust.PathAdded})
		case old.Hash == e.Hash && old.Mode == e.Mode:
		case old.Mode == filemode.Dir && e.Mode == filemode.Dir:
			if err := diffTrees(s, old.Hash, e.Hash, prefix+n+"/", out); err != nil {
				return err
			}
		case old.Mode == filemode.Dir || e.Mode == filemode.Dir:
			*out = append(*out, trust.PathChange{Path: name(old), Action: trust.PathDeleted}, trust.PathChange{Path: name(e), Action: trust.PathAdded})
		default:
			*out = append(*out, trust.PathChange{Path: name(e), Action: trust.PathModified})
		}
	}
	for _, n := range keys.Sorted(from) {
		if _, ok := to[n]; !ok {
			*out = append(*out, trust.PathChange{Path: name(from[n]), Action: trust.PathDeleted})
		}
	}
	return nil
}

// plainTreeName reports whether name is one git itself would write as a
// tree entry: not empty, not . or .., no slash and no NUL.
func plainTreeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// verifyStateHistory refuses a state branch whose tip is not trusted: the
// state branch is vectorflow's database, and a commit that anyone with push
// access wrote must not approve, start or rewrite a promotion. Nothing is
// decided on top of it until the branch is healed.
func (c *Controller) verifyStateHistory(ctx context.Context, snap *source.Snapshot, tip plumbing.Hash) error {
	if tip.IsZero() {
		return nil
	}
	v, err := c.verdictOf(ctx, snap, tip)
	if err != nil {
		return err
	}
	if !v.Trusted {
		return fmt.Errorf("state branch %s of %s: %w: %s", c.opts.StateBranch, c.name, ErrUntrustedState,
			v.Refused.Describe(c.opts.StateBranch, v.LastTrusted))
	}
	return nil
}

// verdictOf judges the history of the state branch down from tip (once:
// the verdict is remembered, in the cache directory too).
func (c *Controller) verdictOf(ctx context.Context, snap *source.Snapshot, tip plumbing.Hash) (trust.CommitVerdict, error) {
	c.importTrustMemo()
	if v, ok := c.trust.Known(tip); ok {
		return v, nil
	}
	s, err := c.stateHistory(ctx, tip)
	if err != nil {
		return trust.CommitVerdict{}, err
	}
	v, err := c.trust.Verify(s, tip, snap.Configs)
	if err != nil {
		return trust.CommitVerdict{}, fmt.Errorf("check the history of state branch %s: %w", c.opts.StateBranch, err)
	}
	c.exportTrustMemo(tip, v)
	return v, nil
}

// stateHistory is the controller's reading copy of the state branch's
// history down from tip, the commit the pass read. It fetches only when tip
// is not in the copy yet, so the state-commit check and the approval check of
// one pass share one fetch.
func (c *Controller) stateHistory(ctx context.Context, tip plumbing.Hash) (storer.EncodedObjectStorer, error) {
	if c.stateRepo == nil && c.shared != nil {
		c.stateRepo = c.shared // the pass's fetch brought the state branch
	}
	if c.stateRepo == nil {
		repo, err := source.OpenCached(c.opts.URL, c.opts.Auth(c.opts.URL), c.opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("open state branch %s: %w", c.opts.StateBranch, err)
		}
		c.stateRepo = repo
	}
	if _, err := object.GetCommit(c.stateRepo.Storer(), tip); err == nil {
		return c.stateRepo.Storer(), nil // a fetched commit comes with its history
	}
	fetched, err := c.stateRepo.Fetch(ctx, c.opts.StateBranch)
	if err != nil {
		return nil, fmt.Errorf("read the history of %s: %w", c.opts.StateBranch, err)
	}
	if fetched != tip {
		return nil, fmt.Errorf("read the history of %s: %w (the branch moved while reading)", c.opts.StateBranch, gitwriter.ErrConflict)
	}
	return c.stateRepo.Storer(), nil
}
