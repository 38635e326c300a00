package forge

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
)

// github speaks GitHub's REST API (github.com or GitHub Enterprise Server)
// through go-github.
type github struct {
	c   *gh.Client
	err errorMapper
}

// newGitHub makes the go-github client for base, authenticated by a token
// or as a GitHub App installation (ghinstallation trades the app's JWT for
// installation tokens at base, and renews them).
func newGitHub(base *url.URL, cred Credentials, hc *http.Client, e errorMapper) (*github, error) {
	root := base.String() + "/"
	opts := []gh.ClientOptionsFunc{gh.WithURLs(&root, &root)}
	if app := cred.GitHubApp; app != nil {
		tr, err := cred.AppTokens.transport(base.String(), *app, hc.Transport)
		if err != nil {
			return nil, err
		}
		withApp := *hc
		withApp.Transport = tr
		opts = append(opts, gh.WithHTTPClient(&withApp))
	} else {
		opts = append(opts, gh.WithHTTPClient(hc), gh.WithAuthToken(cred.Token))
	}
	c, err := gh.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("github forge: %w", e.redactErr(err))
	}
	return &github{c: c, err: e}, nil
}

// AppTokens keeps the installation tokens of GitHub Apps, so the clients
// made for each call share one token until it nears expiry instead of each
// buying one. Its zero value is ready; a nil *AppTokens keeps nothing.
type AppTokens struct {
	mu         sync.Mutex
	transports map[appKey]*ghinstallation.Transport
}

// appKey identifies an installation's token: the API it is bought from,
// the app, the installation, and the key (a rotated key buys anew).
type appKey struct {
	api                   string
	appID, installationID int64
	keyDigest             [sha256.Size]byte
}

// transport is the round tripper that authenticates as app's installation
// at api, sending through next (nil: http.DefaultTransport).
func (a *AppTokens) transport(api string, app GitHubApp, next http.RoundTripper) (*ghinstallation.Transport, error) {
	if next == nil {
		next = http.DefaultTransport
	}
	k := appKey{api: api, appID: app.AppID, installationID: app.InstallationID, keyDigest: sha256.Sum256(app.PrivateKey)}
	if a != nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		if tr, ok := a.transports[k]; ok {
			return tr, nil
		}
	}
	tr, err := ghinstallation.New(next, app.AppID, app.InstallationID, app.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("github forge: GitHub App %d installation %d: %w", app.AppID, app.InstallationID, err)
	}
	tr.BaseURL = api
	if a != nil {
		if a.transports == nil {
			a.transports = map[appKey]*ghinstallation.Transport{}
		}
		a.transports[k] = tr
	}
	return tr, nil
}

// fail maps what go-github returned for op: an error status becomes an
// *APIError (rate limits with RetryAt), anything else names op.
func (g *github) fail(op string, resp *gh.Response, err error) error {
	var (
		rateErr  *gh.RateLimitError
		abuseErr *gh.AbuseRateLimitError
		errResp  *gh.ErrorResponse
	)
	now := time.Now()
	switch {
	case errors.As(err, &rateErr) && rateErr.Response != nil:
		apiErr := g.err.status(op, rateErr.Response, rateErr.Message, now)
		if !rateErr.Rate.Reset.IsZero() {
			apiErr.RetryAt = rateErr.Rate.Reset.Time
		}
		return apiErr
	case errors.As(err, &abuseErr) && abuseErr.Response != nil:
		apiErr := g.err.status(op, abuseErr.Response, abuseErr.Message, now)
		if d := abuseErr.GetRetryAfter(); d > 0 {
			apiErr.RetryAt = now.Add(d)
		} else if apiErr.RetryAt.IsZero() {
			apiErr.RetryAt = now.Add(time.Minute)
		}
		return apiErr
	case errors.As(err, &errResp) && errResp.Response != nil:
		return g.err.status(op, errResp.Response, githubMessage(errResp), now)
	case resp != nil && resp.Response != nil && resp.StatusCode >= 300:
		return g.err.status(op, resp.Response, err.Error(), now)
	}
	return g.err.transport(op, err)
}

// githubMessage joins GitHub's message and its validation errors, as
// errorMessage does for a raw body.
func githubMessage(e *gh.ErrorResponse) string {
	parts := []string{}
	if e.Message != "" {
		parts = append(parts, e.Message)
	}
	for _, d := range e.Errors {
		switch {
		case d.Message != "":
			parts = append(parts, d.Message)
		case d.Code != "":
			parts = append(parts, strings.TrimSpace(d.Field+" "+d.Code))
		}
	}
	return strings.Join(parts, "; ")
}

func toPullRequest(p *gh.PullRequest) PullRequest {
	pr := PullRequest{
		Number:    p.GetNumber(),
		State:     p.GetState(),
		Merged:    p.GetMerged() || p.MergedAt != nil, // list items carry merged_at only
		HeadSHA:   p.GetHead().GetSHA(),
		Mergeable: p.Mergeable,
		URL:       p.GetHTMLURL(),
		Author:    p.GetUser().GetLogin(),
		MergedBy:  p.GetMergedBy().GetLogin(),
	}
	if pr.Merged {
		pr.State = StateMerged
		// Before the merge, merge_commit_sha is a test merge commit, not one on base.
		pr.MergeCommit = p.GetMergeCommitSHA()
	}
	return pr
}

func (g *github) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if existing, ok, err := g.findOpen(ctx, repo, pr.Head); err != nil || ok {
		return existing, err
	}
	op := "open pull request " + pr.Head + " -> " + pr.Base + " in " + repo.String()
	created, resp, err := g.c.PullRequests.Create(ctx, repo.Owner, repo.Name, &gh.NewPullRequest{
		Title: gh.Ptr(pr.Title),
		Head:  gh.Ptr(pr.Head),
		Base:  gh.Ptr(pr.Base),
		Body:  gh.Ptr(pr.Body),
	})
	if err != nil {
		err = g.fail(op, resp, err)
		if apiErr := (*APIError)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusUnprocessableEntity {
			// "A pull request already exists": someone opened it since our look-up.
			if existing, ok, ferr := g.findOpen(ctx, repo, pr.Head); ferr == nil && ok {
				return existing, nil
			}
		}
		return PullRequest{}, err
	}
	if len(pr.Labels) > 0 {
		// Pull requests are issues to GitHub; it creates unknown labels itself.
		if _, resp, err := g.c.Issues.AddLabelsToIssue(ctx, repo.Owner, repo.Name, created.GetNumber(), pr.Labels); err != nil {
			return toPullRequest(created), g.fail(fmt.Sprintf("label pull request %d of %s", created.GetNumber(), repo), resp, err)
		}
	}
	return toPullRequest(created), nil
}

// findOpen returns the open pull request from branch head of repo: GitHub
// filters by owner:branch, so the first page holds it.
func (g *github) findOpen(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	opts := &gh.PullRequestListOptions{State: "open", Head: repo.Owner + ":" + head, ListOptions: gh.ListOptions{PerPage: pageSize}}
	for range maxPages {
		pulls, resp, err := g.c.PullRequests.List(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return PullRequest{}, false, g.fail("find the open pull request from "+head+" in "+repo.String(), resp, err)
		}
		for _, p := range pulls {
			if p.GetHead().GetRef() == head {
				return toPullRequest(p), true, nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return PullRequest{}, false, nil
}

func (g *github) GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	p, resp, err := g.c.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return PullRequest{}, g.fail(fmt.Sprintf("get pull request %d of %s", number, repo), resp, err)
	}
	return toPullRequest(p), nil
}

func (g *github) Reviews(ctx context.Context, repo Repo, number int) ([]Review, error) {
	var out []Review
	opts := &gh.ListOptions{PerPage: pageSize}
	for range maxPages {
		reviews, resp, err := g.c.PullRequests.ListReviews(ctx, repo.Owner, repo.Name, number, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("list reviews of pull request %d of %s", number, repo), resp, err)
		}
		for _, r := range reviews {
			state := r.GetState()
			if state == "CHANGES_REQUESTED" {
				state = ReviewRequestChanges
			}
			out = append(out, Review{
				ID:          r.GetID(),
				User:        r.GetUser().GetLogin(),
				State:       state,
				CommitID:    r.GetCommitID(),
				Official:    true,
				Dismissed:   state == ReviewDismissed,
				SubmittedAt: r.GetSubmittedAt().Time,
			})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

func (g *github) Merge(ctx context.Context, repo Repo, number int, opts MergeOptions) error {
	method, err := opts.method()
	if err != nil {
		return err
	}
	_, resp, err := g.c.PullRequests.Merge(ctx, repo.Owner, repo.Name, number, opts.Message, &gh.PullRequestOptions{
		CommitTitle: opts.Title,
		SHA:         opts.HeadSHA,
		MergeMethod: method,
	})
	if err != nil {
		return g.fail(fmt.Sprintf("merge pull request %d of %s", number, repo), resp, err)
	}
	return nil
}

func (g *github) Close(ctx context.Context, repo Repo, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	_, resp, err := g.c.PullRequests.Edit(ctx, repo.Owner, repo.Name, number, &gh.PullRequest{State: gh.Ptr(StateClosed)})
	if err != nil {
		return g.fail(fmt.Sprintf("close pull request %d of %s", number, repo), resp, err)
	}
	return nil
}

func (g *github) Comment(ctx context.Context, repo Repo, number int, body string) error {
	_, resp, err := g.c.Issues.CreateComment(ctx, repo.Owner, repo.Name, number, &gh.IssueComment{Body: gh.Ptr(body)})
	if err != nil {
		return g.fail(fmt.Sprintf("comment on pull request %d of %s", number, repo), resp, err)
	}
	return nil
}

func (g *github) CommitStatuses(ctx context.Context, repo Repo, sha string) ([]CommitStatus, error) {
	var out []CommitStatus
	opts := &gh.ListOptions{PerPage: pageSize}
	for range maxPages {
		statuses, resp, err := g.c.Repositories.ListStatuses(ctx, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, g.fail(fmt.Sprintf("list the statuses of commit %s of %s", sha, repo), resp, err)
		}
		for _, s := range statuses {
			at := s.GetUpdatedAt().Time
			if at.IsZero() {
				at = s.GetCreatedAt().Time
			}
			out = append(out, CommitStatus{
				ID:          s.GetID(),
				Context:     s.GetContext(),
				State:       commitState(s.GetState()),
				Description: s.GetDescription(),
				TargetURL:   s.GetTargetURL(),
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

// commitState maps a forge's status state to ours: GitHub and Gitea say
// success, failure, error, pending (Gitea also warning); GitLab says
// success, failed, canceled, and running, created and the like for pending.
func commitState(s string) string {
	switch s {
	case "success":
		return CommitStatusSuccess
	case "failure", "failed":
		return CommitStatusFailure
	case "error", "canceled", "warning":
		return CommitStatusError
	default:
		return CommitStatusPending
	}
}
