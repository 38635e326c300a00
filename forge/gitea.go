package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// gitea speaks Gitea's API v1.
type gitea struct{ c *client }

type giteaUser struct {
	Login string `json:"login"`
}

type giteaPull struct {
	Number         int        `json:"number"`
	State          string     `json:"state"`
	HTMLURL        string     `json:"html_url"`
	User           *giteaUser `json:"user"`
	Mergeable      bool       `json:"mergeable"`
	Merged         bool       `json:"merged"`
	MergeCommitSHA *string    `json:"merge_commit_sha"`
	MergedBy       *giteaUser `json:"merged_by"`
	Head           struct {
		Ref    string `json:"ref"`
		SHA    string `json:"sha"`
		RepoID int64  `json:"repo_id"`
	} `json:"head"`
	Base struct {
		RepoID int64 `json:"repo_id"`
	} `json:"base"`
}

func (p giteaPull) toPullRequest() PullRequest {
	mergeable := p.Mergeable
	pr := PullRequest{
		Number:    p.Number,
		State:     p.State,
		Merged:    p.Merged,
		HeadSHA:   p.Head.SHA,
		Mergeable: &mergeable,
		URL:       p.HTMLURL,
		Author:    login(p.User),
		MergedBy:  login(p.MergedBy),
	}
	if p.MergeCommitSHA != nil {
		pr.MergeCommit = *p.MergeCommitSHA
	}
	if p.Merged {
		pr.State = StateMerged
	}
	return pr
}

func login(u *giteaUser) string {
	if u == nil {
		return ""
	}
	return u.Login
}

const giteaPageSize = 50 // Gitea's default MAX_RESPONSE_ITEMS

func (g *gitea) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if existing, ok, err := g.findOpen(ctx, repo, pr.Head); err != nil || ok {
		return existing, err
	}
	labels, err := g.labelIDs(ctx, repo, pr.Labels)
	if err != nil {
		return PullRequest{}, err
	}
	var created giteaPull
	err = g.c.do(ctx, "open pull request "+pr.Head+" -> "+pr.Base+" in "+repo.String(), http.MethodPost,
		repoPath(repo)+"/pulls", map[string]any{
			"head":   pr.Head,
			"base":   pr.Base,
			"title":  pr.Title,
			"body":   pr.Body,
			"labels": labels,
		}, &created)
	if apiErr := (*APIError)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		// Someone opened it between our look-up and our create.
		if existing, ok, ferr := g.findOpen(ctx, repo, pr.Head); ferr == nil && ok {
			return existing, nil
		}
	}
	if err != nil {
		return PullRequest{}, err
	}
	return created.toPullRequest(), nil
}

// findOpen returns the open pull request from branch head of repo itself.
func (g *gitea) findOpen(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	var found *giteaPull
	err := pages(giteaPageSize, func(page int) (int, error) {
		var pulls []giteaPull
		err := g.c.do(ctx, "list open pull requests of "+repo.String(), http.MethodGet,
			repoPath(repo)+"/pulls?state=open&limit="+strconv.Itoa(giteaPageSize)+"&page="+strconv.Itoa(page), nil, &pulls)
		for i := range pulls {
			p := pulls[i]
			if p.Head.Ref == head && p.Head.RepoID == p.Base.RepoID {
				found = &p
				return 0, nil
			}
		}
		return len(pulls), err
	})
	if err != nil || found == nil {
		return PullRequest{}, false, err
	}
	return found.toPullRequest(), true, nil
}

// labelIDs maps label names to Gitea's ids, creating the missing ones: the
// pull-request API takes ids only.
func (g *gitea) labelIDs(ctx context.Context, repo Repo, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	type label struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	byName := map[string]int64{}
	err := pages(giteaPageSize, func(page int) (int, error) {
		var labels []label
		err := g.c.do(ctx, "list labels of "+repo.String(), http.MethodGet,
			repoPath(repo)+"/labels?limit="+strconv.Itoa(giteaPageSize)+"&page="+strconv.Itoa(page), nil, &labels)
		for _, l := range labels {
			byName[l.Name] = l.ID
		}
		return len(labels), err
	})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(names))
	for _, name := range names {
		id, ok := byName[name]
		if !ok {
			var created label
			if err := g.c.do(ctx, "create label "+strconv.Quote(name)+" in "+repo.String(), http.MethodPost,
				repoPath(repo)+"/labels", map[string]any{"name": name, "color": "#ededed"}, &created); err != nil {
				return nil, err
			}
			id = created.ID
			byName[name] = id
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (g *gitea) GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	var p giteaPull
	err := g.c.do(ctx, fmt.Sprintf("get pull request %d of %s", number, repo), http.MethodGet,
		pullPath(repo, number), nil, &p)
	if err != nil {
		return PullRequest{}, err
	}
	return p.toPullRequest(), nil
}

func (g *gitea) Reviews(ctx context.Context, repo Repo, number int) ([]Review, error) {
	type review struct {
		ID          int64      `json:"id"`
		User        *giteaUser `json:"user"`
		State       string     `json:"state"`
		CommitID    string     `json:"commit_id"`
		Official    bool       `json:"official"`
		Stale       bool       `json:"stale"`
		Dismissed   bool       `json:"dismissed"`
		SubmittedAt time.Time  `json:"submitted_at"`
	}
	var out []Review
	err := pages(giteaPageSize, func(page int) (int, error) {
		var reviews []review
		err := g.c.do(ctx, fmt.Sprintf("list reviews of pull request %d of %s", number, repo), http.MethodGet,
			pullPath(repo, number)+"/reviews?limit="+strconv.Itoa(giteaPageSize)+"&page="+strconv.Itoa(page), nil, &reviews)
		for _, r := range reviews {
			out = append(out, Review{
				ID:          r.ID,
				User:        login(r.User),
				State:       giteaReviewState(r.State, r.Dismissed),
				CommitID:    r.CommitID,
				Official:    r.Official,
				Stale:       r.Stale,
				Dismissed:   r.Dismissed,
				SubmittedAt: r.SubmittedAt,
			})
		}
		return len(reviews), err
	})
	return out, err
}

func giteaReviewState(s string, dismissed bool) string {
	if dismissed {
		return ReviewDismissed
	}
	switch s {
	case "COMMENT":
		return ReviewCommented
	case "REQUEST_REVIEW":
		return ReviewPending
	default: // APPROVED, PENDING, REQUEST_CHANGES: already ours
		return s
	}
}

func (g *gitea) Merge(ctx context.Context, repo Repo, number int, opts MergeOptions) error {
	method, err := opts.method()
	if err != nil {
		return err
	}
	body := map[string]any{"Do": method}
	if opts.Title != "" {
		body["merge_title_field"] = opts.Title
	}
	if opts.Message != "" {
		body["merge_message_field"] = opts.Message
	}
	if opts.HeadSHA != "" {
		body["head_commit_id"] = opts.HeadSHA
	}
	return g.c.do(ctx, fmt.Sprintf("merge pull request %d of %s", number, repo), http.MethodPost,
		pullPath(repo, number)+"/merge", body, nil)
}

func (g *gitea) Close(ctx context.Context, repo Repo, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	return g.c.do(ctx, fmt.Sprintf("close pull request %d of %s", number, repo), http.MethodPatch,
		pullPath(repo, number), map[string]any{"state": StateClosed}, nil)
}

func (g *gitea) Comment(ctx context.Context, repo Repo, number int, body string) error {
	return g.c.do(ctx, fmt.Sprintf("comment on pull request %d of %s", number, repo), http.MethodPost,
		repoPath(repo)+"/issues/"+strconv.Itoa(number)+"/comments", map[string]any{"body": body}, nil)
}

func pullPath(repo Repo, number int) string {
	return repoPath(repo) + "/pulls/" + strconv.Itoa(number)
}
