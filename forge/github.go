package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// github speaks GitHub's REST API v3.
type github struct{ c *client }

type githubUser struct {
	Login string `json:"login"`
}

type githubPull struct {
	Number         int         `json:"number"`
	State          string      `json:"state"`
	HTMLURL        string      `json:"html_url"`
	User           *githubUser `json:"user"`
	Mergeable      *bool       `json:"mergeable"`
	Merged         bool        `json:"merged"`
	MergedAt       *time.Time  `json:"merged_at"`
	MergeCommitSHA *string     `json:"merge_commit_sha"`
	MergedBy       *githubUser `json:"merged_by"`
	Head           struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
}

func (p githubPull) toPullRequest() PullRequest {
	pr := PullRequest{
		Number:    p.Number,
		State:     p.State,
		Merged:    p.Merged || p.MergedAt != nil, // list items carry merged_at only
		HeadSHA:   p.Head.SHA,
		Mergeable: p.Mergeable,
		URL:       p.HTMLURL,
		Author:    githubLogin(p.User),
		MergedBy:  githubLogin(p.MergedBy),
	}
	if pr.Merged {
		pr.State = StateMerged
		// Before the merge, merge_commit_sha is a test merge commit, not one on base.
		if p.MergeCommitSHA != nil {
			pr.MergeCommit = *p.MergeCommitSHA
		}
	}
	return pr
}

func githubLogin(u *githubUser) string {
	if u == nil {
		return ""
	}
	return u.Login
}

const githubPageSize = 100

func (g *github) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if existing, ok, err := g.findOpen(ctx, repo, pr.Head); err != nil || ok {
		return existing, err
	}
	var created githubPull
	err := g.c.do(ctx, "open pull request "+pr.Head+" -> "+pr.Base+" in "+repo.String(), http.MethodPost,
		repoPath(repo)+"/pulls", map[string]any{
			"head":  pr.Head,
			"base":  pr.Base,
			"title": pr.Title,
			"body":  pr.Body,
		}, &created)
	if apiErr := (*APIError)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusUnprocessableEntity {
		// "A pull request already exists": someone opened it since our look-up.
		if existing, ok, ferr := g.findOpen(ctx, repo, pr.Head); ferr == nil && ok {
			return existing, nil
		}
	}
	if err != nil {
		return PullRequest{}, err
	}
	if len(pr.Labels) > 0 {
		// Pull requests are issues to GitHub; it creates unknown labels itself.
		if err := g.c.do(ctx, fmt.Sprintf("label pull request %d of %s", created.Number, repo), http.MethodPost,
			repoPath(repo)+"/issues/"+strconv.Itoa(created.Number)+"/labels",
			map[string]any{"labels": pr.Labels}, nil); err != nil {
			return created.toPullRequest(), err
		}
	}
	return created.toPullRequest(), nil
}

func (g *github) findOpen(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	q := url.Values{"state": {"open"}, "head": {repo.Owner + ":" + head}, "per_page": {strconv.Itoa(githubPageSize)}}
	var pulls []githubPull
	if err := g.c.do(ctx, "find the open pull request from "+head+" in "+repo.String(), http.MethodGet,
		repoPath(repo)+"/pulls?"+q.Encode(), nil, &pulls); err != nil {
		return PullRequest{}, false, err
	}
	for _, p := range pulls {
		if p.Head.Ref == head {
			return p.toPullRequest(), true, nil
		}
	}
	return PullRequest{}, false, nil
}

func (g *github) GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	var p githubPull
	if err := g.c.do(ctx, fmt.Sprintf("get pull request %d of %s", number, repo), http.MethodGet,
		pullPath(repo, number), nil, &p); err != nil {
		return PullRequest{}, err
	}
	return p.toPullRequest(), nil
}

func (g *github) Reviews(ctx context.Context, repo Repo, number int) ([]Review, error) {
	type review struct {
		ID          int64       `json:"id"`
		User        *githubUser `json:"user"`
		State       string      `json:"state"`
		CommitID    string      `json:"commit_id"`
		SubmittedAt time.Time   `json:"submitted_at"`
	}
	var out []Review
	err := pages(githubPageSize, func(page int) (int, error) {
		var reviews []review
		err := g.c.do(ctx, fmt.Sprintf("list reviews of pull request %d of %s", number, repo), http.MethodGet,
			pullPath(repo, number)+"/reviews?per_page="+strconv.Itoa(githubPageSize)+"&page="+strconv.Itoa(page), nil, &reviews)
		for _, r := range reviews {
			state := r.State
			if state == "CHANGES_REQUESTED" {
				state = ReviewRequestChanges
			}
			out = append(out, Review{
				ID:          r.ID,
				User:        githubLogin(r.User),
				State:       state,
				CommitID:    r.CommitID,
				Official:    true,
				Dismissed:   state == ReviewDismissed,
				SubmittedAt: r.SubmittedAt,
			})
		}
		return len(reviews), err
	})
	return out, err
}

func (g *github) Merge(ctx context.Context, repo Repo, number int, opts MergeOptions) error {
	method, err := opts.method()
	if err != nil {
		return err
	}
	body := map[string]any{"merge_method": method}
	if opts.Title != "" {
		body["commit_title"] = opts.Title
	}
	if opts.Message != "" {
		body["commit_message"] = opts.Message
	}
	if opts.HeadSHA != "" {
		body["sha"] = opts.HeadSHA
	}
	return g.c.do(ctx, fmt.Sprintf("merge pull request %d of %s", number, repo), http.MethodPut,
		pullPath(repo, number)+"/merge", body, nil)
}

func (g *github) Close(ctx context.Context, repo Repo, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	return g.c.do(ctx, fmt.Sprintf("close pull request %d of %s", number, repo), http.MethodPatch,
		pullPath(repo, number), map[string]any{"state": StateClosed}, nil)
}

func (g *github) Comment(ctx context.Context, repo Repo, number int, body string) error {
	return g.c.do(ctx, fmt.Sprintf("comment on pull request %d of %s", number, repo), http.MethodPost,
		repoPath(repo)+"/issues/"+strconv.Itoa(number)+"/comments", map[string]any{"body": body}, nil)
}
