package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go"
)

// gitlab speaks GitLab's REST API v4 through GitLab's client-go, where pull
// requests are merge requests numbered by iid and reviews are approvals.
type gitlab struct {
	c   *gl.Client
	err errorMapper
}

// noWait is a rate limiter that never waits: a limited call comes back as
// an *APIError with RetryAt instead of holding the pass.
type noWait struct{}

func (noWait) Wait(context.Context) error { return nil }

func newGitLab(base *url.URL, token string, hc *http.Client, e errorMapper) (*gitlab, error) {
	// client-go retries 429 and 5xx answers itself, sleeping until
	// RateLimit-Reset, and paces calls from RateLimit-Limit; vectorflow
	// retries on its next pass instead, so neither may block a pass.
	c, err := gl.NewClient(token,
		gl.WithBaseURL(base.String()+"/"),
		gl.WithHTTPClient(hc),
		gl.WithoutRetries(),
		gl.WithCustomLimiter(noWait{}),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab forge: %w", e.redactErr(err))
	}
	return &gitlab{c: c, err: e}, nil
}

// fail maps what client-go returned for op.
func (g *gitlab) fail(op string, resp *gl.Response, err error) error {
	var errResp *gl.ErrorResponse
	switch {
	case errors.As(err, &errResp) && errResp.Response != nil:
		msg := errorMessage(errResp.Body)
		if msg == "" {
			msg = errResp.Message
		}
		return g.err.status(op, errResp.Response, msg, time.Now())
	case resp != nil && resp.Response != nil && resp.StatusCode >= 300:
		return g.err.status(op, resp.Response, err.Error(), time.Now())
	}
	return g.err.transport(op, err)
}

func (g *gitlab) toPullRequest(m *gl.BasicMergeRequest) PullRequest {
	pr := PullRequest{
		Number:    int(m.IID),
		HeadSHA:   m.SHA,
		URL:       m.WebURL,
		Author:    gitlabLogin(m.Author),
		Mergeable: gitlabMergeable(m.DetailedMergeStatus),
	}
	switch m.State {
	case "merged":
		pr.State, pr.Merged = StateMerged, true
		pr.MergedBy = gitlabLogin(m.MergeUser)
		if pr.MergedBy == "" {
			pr.MergedBy = gitlabLogin(m.MergedBy)
		}
		switch {
		case m.MergeCommitSHA != "":
			pr.MergeCommit = m.MergeCommitSHA
		case m.SquashCommitSHA != "":
			pr.MergeCommit = m.SquashCommitSHA
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

// gitlabMergeable reads detailed_merge_status (GitLab 15.6+); nil while
// GitLab is still checking, or when it does not say.
func gitlabMergeable(detailed string) *bool {
	var v bool
	switch detailed {
	case "", "checking", "unchecked", "preparing", "approvals_syncing":
		return nil
	case "mergeable":
		v = true
	default:
		v = false
	}
	return &v
}

func gitlabLogin(u *gl.BasicUser) string {
	if u == nil {
		return ""
	}
	return u.Username
}

// project is the project's full path, GitLab's id for it (client-go
// escapes it).
func project(r Repo) string { return r.Owner + "/" + r.Name }

func (g *gitlab) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if existing, ok, err := g.findOpen(ctx, repo, pr.Head); err != nil || ok {
		return existing, err
	}
	opts := &gl.CreateMergeRequestOptions{
		SourceBranch: gl.Ptr(pr.Head),
		TargetBranch: gl.Ptr(pr.Base),
		Title:        gl.Ptr(pr.Title),
		Description:  gl.Ptr(pr.Body),
	}
	if len(pr.Labels) > 0 {
		labels := gl.LabelOptions(pr.Labels)
		opts.Labels = &labels
	}
	created, resp, err := g.c.MergeRequests.CreateMergeRequest(project(repo), opts, gl.WithContext(ctx))
	if err != nil {
		err = g.fail("open merge request "+pr.Head+" -> "+pr.Base+" in "+repo.String(), resp, err)
		if apiErr := (*APIError)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
			// "Another open merge request already exists for this source branch".
			if existing, ok, ferr := g.findOpen(ctx, repo, pr.Head); ferr == nil && ok {
				return existing, nil
			}
		}
		return PullRequest{}, err
	}
	return g.toPullRequest(&created.BasicMergeRequest), nil
}

func (g *gitlab) findOpen(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	opts := &gl.ListProjectMergeRequestsOptions{
		ListOptions:  gl.ListOptions{PerPage: pageSize},
		State:        gl.Ptr("opened"),
		SourceBranch: gl.Ptr(head),
	}
	for range maxPages {
		mrs, resp, err := g.c.MergeRequests.ListProjectMergeRequests(project(repo), opts, gl.WithContext(ctx))
		if err != nil {
			return PullRequest{}, false, g.fail("find the open merge request from "+head+" in "+repo.String(), resp, err)
		}
		for _, m := range mrs {
			if m.SourceBranch == head {
				return g.toPullRequest(m), true, nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return PullRequest{}, false, nil
}

func (g *gitlab) GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	m, resp, err := g.c.MergeRequests.GetMergeRequest(project(repo), int64(number), nil, gl.WithContext(ctx))
	if err != nil {
		return PullRequest{}, g.fail(fmt.Sprintf("get merge request !%d of %s", number, repo), resp, err)
	}
	return g.toPullRequest(&m.BasicMergeRequest), nil
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
	approvals, resp, err := g.c.MergeRequestApprovals.GetConfiguration(project(repo), int64(number), gl.WithContext(ctx))
	if err != nil {
		return nil, g.fail(fmt.Sprintf("list approvals of merge request !%d of %s", number, repo), resp, err)
	}
	out := make([]Review, 0, len(approvals.ApprovedBy))
	for _, a := range approvals.ApprovedBy {
		if a == nil || a.User == nil {
			continue
		}
		out = append(out, Review{
			ID:       a.User.ID,
			User:     a.User.Username,
			State:    ReviewApproved,
			CommitID: mr.HeadSHA,
			Official: true,
		})
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
	accept := &gl.AcceptMergeRequestOptions{}
	if method == MergeMethodSquash {
		accept.Squash = gl.Ptr(true)
	}
	if msg := strings.TrimSpace(opts.Title + "\n\n" + opts.Message); msg != "" {
		if method == MergeMethodSquash {
			accept.SquashCommitMessage = gl.Ptr(msg)
		} else {
			accept.MergeCommitMessage = gl.Ptr(msg)
		}
	}
	if opts.HeadSHA != "" {
		accept.SHA = gl.Ptr(opts.HeadSHA)
	}
	_, resp, err := g.c.MergeRequests.AcceptMergeRequest(project(repo), int64(number), accept, gl.WithContext(ctx))
	if err != nil {
		return g.fail(fmt.Sprintf("merge merge request !%d of %s", number, repo), resp, err)
	}
	return nil
}

func (g *gitlab) Close(ctx context.Context, repo Repo, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	_, resp, err := g.c.MergeRequests.UpdateMergeRequest(project(repo), int64(number),
		&gl.UpdateMergeRequestOptions{StateEvent: gl.Ptr("close")}, gl.WithContext(ctx))
	if err != nil {
		return g.fail(fmt.Sprintf("close merge request !%d of %s", number, repo), resp, err)
	}
	return nil
}

func (g *gitlab) Comment(ctx context.Context, repo Repo, number int, body string) error {
	_, resp, err := g.c.Notes.CreateMergeRequestNote(project(repo), int64(number),
		&gl.CreateMergeRequestNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	if err != nil {
		return g.fail(fmt.Sprintf("comment on merge request !%d of %s", number, repo), resp, err)
	}
	return nil
}

// CommitStatuses lists the statuses of sha: GitLab calls a status's context
// its name.
func (g *gitlab) CommitStatuses(ctx context.Context, repo Repo, sha string) ([]CommitStatus, error) {
	var out []CommitStatus
	opts := &gl.GetCommitStatusesOptions{ListOptions: gl.ListOptions{PerPage: pageSize}}
	for range maxPages {
		statuses, resp, err := g.c.Commits.GetCommitStatuses(project(repo), sha, opts, gl.WithContext(ctx))
		if err != nil {
			return nil, g.fail(fmt.Sprintf("list the statuses of commit %s of %s", sha, repo), resp, err)
		}
		for _, s := range statuses {
			var at time.Time
			switch {
			case s.FinishedAt != nil:
				at = *s.FinishedAt
			case s.StartedAt != nil:
				at = *s.StartedAt
			case s.CreatedAt != nil:
				at = *s.CreatedAt
			}
			out = append(out, CommitStatus{
				ID:          s.ID,
				Context:     s.Name,
				State:       commitState(s.Status),
				Description: s.Description,
				TargetURL:   s.TargetURL,
				At:          at,
			})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}
