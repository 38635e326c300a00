package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// gitlab speaks GitLab's REST API v4, where pull requests are merge requests
// numbered by iid and reviews are approvals.
type gitlab struct{ c *client }

type gitlabUser struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
}

type gitlabMergeRequest struct {
	IID                 int         `json:"iid"`
	State               string      `json:"state"`
	WebURL              string      `json:"web_url"`
	SourceBranch        string      `json:"source_branch"`
	Author              *gitlabUser `json:"author"`
	MergeUser           *gitlabUser `json:"merge_user"`
	MergedBy            *gitlabUser `json:"merged_by"` // deprecated in favour of merge_user
	SHA                 string      `json:"sha"`
	MergeCommitSHA      *string     `json:"merge_commit_sha"`
	SquashCommitSHA     *string     `json:"squash_commit_sha"`
	MergeStatus         string      `json:"merge_status"`
	DetailedMergeStatus string      `json:"detailed_merge_status"`
}

func (m gitlabMergeRequest) toPullRequest() PullRequest {
	pr := PullRequest{
		Number:    m.IID,
		HeadSHA:   m.SHA,
		URL:       m.WebURL,
		Author:    gitlabLogin(m.Author),
		Mergeable: gitlabMergeable(m.DetailedMergeStatus, m.MergeStatus),
	}
	switch m.State {
	case "merged":
		pr.State, pr.Merged = StateMerged, true
		pr.MergedBy = gitlabLogin(m.MergeUser)
		if pr.MergedBy == "" {
			pr.MergedBy = gitlabLogin(m.MergedBy)
		}
		switch {
		case m.MergeCommitSHA != nil && *m.MergeCommitSHA != "":
			pr.MergeCommit = *m.MergeCommitSHA
		case m.SquashCommitSHA != nil:
			pr.MergeCommit = *m.SquashCommitSHA
		default: // fast-forward merge: the head itself landed
			pr.MergeCommit = m.SHA
		}
	case "closed":
		pr.State = StateClosed
	default: // opened, locked
		pr.State = StateOpen
	}
	return pr
}

// gitlabMergeable reads detailed_merge_status (GitLab 15.6+), falling back
// to the older merge_status; nil while GitLab is still checking.
func gitlabMergeable(detailed, status string) *bool {
	var v bool
	switch detailed {
	case "":
		switch status {
		case "can_be_merged":
			v = true
		case "cannot_be_merged", "cannot_be_merged_recheck":
			v = false
		default: // unchecked, checking
			return nil
		}
	case "mergeable":
		v = true
	case "checking", "unchecked", "preparing", "approvals_syncing":
		return nil
	default:
		v = false
	}
	return &v
}

func gitlabLogin(u *gitlabUser) string {
	if u == nil {
		return ""
	}
	return u.Username
}

// projectPath is the project's URL-encoded full path, GitLab's id for it.
func projectPath(r Repo) string {
	return "/projects/" + url.PathEscape(r.Owner+"/"+r.Name)
}

func mergeRequestPath(r Repo, iid int) string {
	return projectPath(r) + "/merge_requests/" + strconv.Itoa(iid)
}

func (g *gitlab) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if existing, ok, err := g.findOpen(ctx, repo, pr.Head); err != nil || ok {
		return existing, err
	}
	body := map[string]any{
		"source_branch": pr.Head,
		"target_branch": pr.Base,
		"title":         pr.Title,
		"description":   pr.Body,
	}
	if len(pr.Labels) > 0 {
		body["labels"] = strings.Join(pr.Labels, ",")
	}
	var created gitlabMergeRequest
	err := g.c.do(ctx, "open merge request "+pr.Head+" -> "+pr.Base+" in "+repo.String(), http.MethodPost,
		projectPath(repo)+"/merge_requests", body, &created)
	if apiErr := (*APIError)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		// "Another open merge request already exists for this source branch".
		if existing, ok, ferr := g.findOpen(ctx, repo, pr.Head); ferr == nil && ok {
			return existing, nil
		}
	}
	if err != nil {
		return PullRequest{}, err
	}
	return created.toPullRequest(), nil
}

func (g *gitlab) findOpen(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	q := url.Values{"state": {"opened"}, "source_branch": {head}}
	var mrs []gitlabMergeRequest
	if err := g.c.do(ctx, "find the open merge request from "+head+" in "+repo.String(), http.MethodGet,
		projectPath(repo)+"/merge_requests?"+q.Encode(), nil, &mrs); err != nil {
		return PullRequest{}, false, err
	}
	for _, m := range mrs {
		if m.SourceBranch == head {
			return m.toPullRequest(), true, nil
		}
	}
	return PullRequest{}, false, nil
}

func (g *gitlab) GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	var m gitlabMergeRequest
	if err := g.c.do(ctx, fmt.Sprintf("get merge request !%d of %s", number, repo), http.MethodGet,
		mergeRequestPath(repo, number), nil, &m); err != nil {
		return PullRequest{}, err
	}
	return m.toPullRequest(), nil
}

// Reviews maps GitLab's approvals to approved reviews. GitLab approves a
// merge request, not a commit, so each approval is attributed to the head
// read just before the approvals: with "reset approvals on push" (GitLab's
// default) an approval that survives is one given on that head.
func (g *gitlab) Reviews(ctx context.Context, repo Repo, number int) ([]Review, error) {
	mr, err := g.GetPullRequest(ctx, repo, number)
	if err != nil {
		return nil, err
	}
	var approvals struct {
		ApprovedBy []struct {
			User       *gitlabUser `json:"user"`
			ApprovedAt *time.Time  `json:"approved_at"`
		} `json:"approved_by"`
	}
	if err := g.c.do(ctx, fmt.Sprintf("list approvals of merge request !%d of %s", number, repo), http.MethodGet,
		mergeRequestPath(repo, number)+"/approvals", nil, &approvals); err != nil {
		return nil, err
	}
	out := make([]Review, 0, len(approvals.ApprovedBy))
	for _, a := range approvals.ApprovedBy {
		if a.User == nil {
			continue
		}
		r := Review{
			ID:       a.User.ID,
			User:     a.User.Username,
			State:    ReviewApproved,
			CommitID: mr.HeadSHA,
			Official: true,
		}
		if a.ApprovedAt != nil {
			r.SubmittedAt = *a.ApprovedAt
		}
		out = append(out, r)
	}
	return out, nil
}

func (g *gitlab) Merge(ctx context.Context, repo Repo, number int, opts MergeOptions) error {
	method, err := opts.method()
	if err != nil {
		return err
	}
	if method == MergeMethodRebase {
		return fmt.Errorf("gitlab: merge request !%d of %s: GitLab sets fast-forward/rebase merging per project; use %s or %s", number, repo, MergeMethodMerge, MergeMethodSquash)
	}
	body := map[string]any{}
	if method == MergeMethodSquash {
		body["squash"] = true
	}
	if msg := strings.TrimSpace(opts.Title + "\n\n" + opts.Message); msg != "" {
		if method == MergeMethodSquash {
			body["squash_commit_message"] = msg
		} else {
			body["merge_commit_message"] = msg
		}
	}
	if opts.HeadSHA != "" {
		body["sha"] = opts.HeadSHA
	}
	return g.c.do(ctx, fmt.Sprintf("merge merge request !%d of %s", number, repo), http.MethodPut,
		mergeRequestPath(repo, number)+"/merge", body, nil)
}

func (g *gitlab) Close(ctx context.Context, repo Repo, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	return g.c.do(ctx, fmt.Sprintf("close merge request !%d of %s", number, repo), http.MethodPut,
		mergeRequestPath(repo, number), map[string]any{"state_event": "close"}, nil)
}

func (g *gitlab) Comment(ctx context.Context, repo Repo, number int, body string) error {
	return g.c.do(ctx, fmt.Sprintf("comment on merge request !%d of %s", number, repo), http.MethodPost,
		mergeRequestPath(repo, number)+"/notes", map[string]any{"body": body}, nil)
}
