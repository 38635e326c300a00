package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/source"
)

// maxStateHistory bounds how many state-branch commits one pass checks when
// it has checked none before (a controller that just started).
const maxStateHistory = 2000

// verifyStateHistory checks the state-branch commits this controller has
// not checked yet. The state branch is vectorflow's database: a commit that
// anyone with push access wrote must not be able to approve or start a
// promotion. So a commit that changes anything outside approvals/ must be
// signed by a trusted state signer (Options.StateSigners, or an approver of
// one of the configs, who may run `vectorflow promote`); approval files are
// checked on their own against their config's approvers. An untrusted commit
// stops the pass: nothing is decided on top of it until it is reverted.
func (c *Controller) verifyStateHistory(ctx context.Context, snap *source.Snapshot, tip plumbing.Hash) error {
	if len(c.opts.StateSigners) == 0 || tip.IsZero() || tip == c.verifiedTip {
		return nil
	}
	s, err := c.stateHistory(ctx, tip)
	if err != nil {
		return err
	}
	verifier, err := gitwriter.NewVerifier(stateSigners(c.opts.StateSigners, snap))
	if err != nil {
		return fmt.Errorf("trusted state signers: %w", err)
	}
	commit, err := object.GetCommit(s, tip)
	for n := 0; err == nil && commit.Hash != c.verifiedTip && n < maxStateHistory; n++ {
		if err := checkStateCommit(commit, verifier); err != nil {
			return fmt.Errorf("state branch %s of %s: %w", c.opts.StateBranch, c.opts.URL, err)
		}
		if commit.NumParents() == 0 {
			break
		}
		commit, err = commit.Parent(0)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the history of state branch %s: %w", c.opts.StateBranch, err)
	}
	c.verifiedTip = tip
	return nil
}

// checkStateCommit passes a commit that only touches approvals/ files or is
// signed by a trusted state signer.
func checkStateCommit(commit *object.Commit, verifier *gitwriter.Verifier) error {
	paths, err := changedPaths(commit)
	if err != nil {
		return err
	}
	var others []string
	for _, p := range paths {
		if !strings.HasPrefix(p, approvalsDir+"/") {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		return nil
	}
	if _, err := verifier.VerifyCommit(commit); err != nil {
		return fmt.Errorf("commit %s by %s changes %s but is not signed by a trusted state signer (%v); reset the branch to the commit before it, revert it in a commit signed by a trusted key, or trust its key with --trust-state-signer",
			short(commit.Hash), commit.Author.Email, strings.Join(others, ", "), err)
	}
	return nil
}

// changedPaths lists the files a commit changes against its first parent
// (every file, for a root commit).
func changedPaths(commit *object.Commit) ([]string, error) {
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", commit.Hash, err)
	}
	var parentTree *object.Tree
	if commit.NumParents() > 0 {
		parent, err := commit.Parent(0)
		if err != nil {
			return nil, fmt.Errorf("read parent of %s: %w", commit.Hash, err)
		}
		if parentTree, err = parent.Tree(); err != nil {
			return nil, fmt.Errorf("read tree of %s: %w", parent.Hash, err)
		}
	}
	changes, err := object.DiffTree(parentTree, tree)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", commit.Hash, err)
	}
	paths := make([]string, 0, len(changes))
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		paths = append(paths, name)
	}
	return paths, nil
}

// stateSigners are the configured keys and every config's approvers.
func stateSigners(configured []gitwriter.TrustedKey, snap *source.Snapshot) []gitwriter.TrustedKey {
	keys := append([]gitwriter.TrustedKey(nil), configured...)
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k.PublicKey] = true
	}
	for _, name := range sortedKeys(snap.Configs) {
		a := snap.Configs[name].Spec.Approval
		if a == nil {
			continue
		}
		for _, ap := range a.Approvers {
			if !seen[ap.PublicKey] {
				seen[ap.PublicKey] = true
				keys = append(keys, gitwriter.TrustedKey{Name: ap.Name, PublicKey: ap.PublicKey})
			}
		}
	}
	return keys
}

// stateHistory is the controller's reading copy of the state branch's
// history down from tip, the commit the pass read. It fetches only when tip
// is not in the copy yet, so the state-commit check and the approval check of
// one pass share one fetch.
func (c *Controller) stateHistory(ctx context.Context, tip plumbing.Hash) (storer.EncodedObjectStorer, error) {
	if c.stateRepo == nil {
		repo, err := source.Open(c.opts.URL, c.opts.Auth(c.opts.URL))
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
