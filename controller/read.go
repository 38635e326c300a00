package controller

import (
	"context"
	"errors"
	"fmt"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/source"
)

// ReadState fetches the state branch of repo and decodes it. A branch that
// does not exist yet is an empty state at the zero hash.
func ReadState(ctx context.Context, repo *source.Repository, branch string) (plumbing.Hash, map[string][]byte, *State, error) {
	tip, err := repo.Fetch(ctx, branch)
	if errors.Is(err, git.NoMatchingRefSpecError{}) {
		return plumbing.ZeroHash, map[string][]byte{}, NewState(), nil
	}
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	files, err := readCommitFiles(repo, tip)
	if err != nil {
		return plumbing.ZeroHash, nil, nil, err
	}
	state, errs := DecodeState(files)
	if len(errs) > 0 {
		return tip, files, state, fmt.Errorf("state branch %s of %s: %w", branch, repo.URL(), errors.Join(errs...))
	}
	return tip, files, state, nil
}

func readCommitFiles(repo *source.Repository, commit plumbing.Hash) (map[string][]byte, error) {
	c, err := object.GetCommit(repo.Storer(), commit)
	if err != nil {
		return nil, fmt.Errorf("read commit %s of %s: %w", commit, repo.URL(), err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", commit, err)
	}
	files := map[string][]byte{}
	err = tree.Files().ForEach(func(f *object.File) error {
		content, err := f.Contents()
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Name, err)
		}
		files[f.Name] = []byte(content)
		return nil
	})
	return files, err
}
