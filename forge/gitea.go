package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"
)

// gitea speaks Gitea's API v1 through Gitea's SDK.
type gitea struct {
	server string // the server root: the API URL without /api/v1
	token  string
	http   *http.Client
	err    errorMapper
}

func newGitea(base *url.URL, token string, hc *http.Client, e errorMapper) (*gitea, error) {
	root, ok := strings.CutSuffix(base.String(), "/api/v1")
	if !ok {
		return nil, fmt.Errorf("gitea forge: API URL %q does not end in /api/v1: set it to the root of Gitea's REST API, https://HOST/api/v1", redactURL(base.String()))
	}
	return &gitea{server: root, token: token, http: hc, err: e}, nil
}

// call is one SDK client for one call: the SDK takes its context per
// client, not per request. It records the body of an error answer, which
// the SDK drops for some calls (merge answers only a status).
type call struct {
	c       *sdk.Client
	errBody *bytes.Buffer
}

func (g *gitea) call(ctx context.Context) (call, error) {
	hc := *g.http
	rec := &errorBodyRecorder{next: hc.Transport}
	if rec.next == nil {
		rec.next = http.DefaultTransport
	}
	hc.Transport = rec
	// An empty version skips the SDK's look-up of the server version on
	// every new client.
	c, err := sdk.NewClient(g.server, sdk.SetHTTPClient(&hc), sdk.SetToken(g.token), sdk.SetContext(ctx), sdk.SetGiteaVersion(""))
	if err != nil {
		return call{}, g.err.transport("connect", err)
	}
	return call{c: c, errBody: &rec.body}, nil
}

// errorBodyRecorder keeps a copy of the body of the last error answer.
type errorBodyRecorder struct {
	next http.RoundTripper
	body bytes.Buffer
}

func (r *errorBodyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.StatusCode < 300 {
		return resp, err
	}
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	r.body.Reset()
	r.body.Write(data)
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
}

// fail maps what the SDK returned for op; resp is nil when no answer came.
func (g *gitea) fail(op string, cl call, resp *sdk.Response, err error) error {
	if resp != nil && resp.Response != nil && resp.StatusCode >= 300 {
		msg := errorMessage(cl.errBody.Bytes())
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return g.err.status(op, resp.Response, msg, time.Now())
	}
	if err == nil {
		err = errors.New("no answer")
	}
	return g.err.transport(op, err)
}

func toGiteaPullRequest(p *sdk.PullRequest) PullRequest {
	mergeable := p.Mergeable
	pr := PullRequest{
		Number:    int(p.Index),
		State:     string(p.State),
		Merged:    p.HasMerged,
		Mergeable: &mergeable,
		URL:       p.HTMLURL,
		Author:    giteaLogin(p.Poster),
		MergedBy:  giteaLogin(p.MergedBy),
	}
	if p.Head != nil {
		pr.HeadSHA = p.Head.Sha
	}
	if p.MergedCommitID != nil {
		pr.MergeCommit = *p.MergedCommitID
	}
	if p.HasMerged {
		pr.State = StateMerged
	}
	return pr
}

func giteaLogin(u *sdk.User) string {
	if u == nil {
		return ""
	}
	return u.UserName
}

// giteaPageSize is Gitea's default MAX_RESPONSE_ITEMS; a server allowing
// fewer says so in its Link header, which the SDK reads into NextPage.
const giteaPageSize = 50

// giteaPages calls fetch with page 1, 2, ... while the answer names a next
// page.
func giteaPages(fetch func(page int) (*sdk.Response, bool, error)) error {
	for page := 1; page <= maxPages; {
		resp, done, err := fetch(page)
		if err != nil || done || resp == nil || resp.NextPage <= page {
			return err
		}
		page = resp.NextPage
	}
	return nil
}

func (g *gitea) OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if existing, ok, err := g.findOpen(ctx, repo, pr.Head); err != nil || ok {
		return existing, err
	}
	labels, err := g.labelIDs(ctx, repo, pr.Labels)
	if err != nil {
		return PullRequest{}, err
	}
	cl, err := g.call(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	created, resp, err := cl.c.CreatePullRequest(repo.Owner, repo.Name, sdk.CreatePullRequestOption{
		Head: pr.Head, Base: pr.Base, Title: pr.Title, Body: pr.Body, Labels: labels,
	})
	if err != nil {
		err = g.fail("open pull request "+pr.Head+" -> "+pr.Base+" in "+repo.String(), cl, resp, err)
		if apiErr := (*APIError)(nil); errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
			// Someone opened it between our look-up and our create.
			if existing, ok, ferr := g.findOpen(ctx, repo, pr.Head); ferr == nil && ok {
				return existing, nil
			}
		}
		return PullRequest{}, err
	}
	return toGiteaPullRequest(created), nil
}

// findOpen returns the open pull request from branch head of repo itself.
func (g *gitea) findOpen(ctx context.Context, repo Repo, head string) (PullRequest, bool, error) {
	cl, err := g.call(ctx)
	if err != nil {
		return PullRequest{}, false, err
	}
	var found *sdk.PullRequest
	err = giteaPages(func(page int) (*sdk.Response, bool, error) {
		pulls, resp, err := cl.c.ListRepoPullRequests(repo.Owner, repo.Name, sdk.ListPullRequestsOptions{
			ListOptions: sdk.ListOptions{Page: page, PageSize: giteaPageSize}, State: sdk.StateOpen,
		})
		if err != nil {
			return resp, true, g.fail("list open pull requests of "+repo.String(), cl, resp, err)
		}
		for _, p := range pulls {
			if p.Head != nil && p.Base != nil && p.Head.Ref == head && p.Head.RepoID == p.Base.RepoID {
				found = p
				return resp, true, nil
			}
		}
		return resp, false, nil
	})
	if err != nil || found == nil {
		return PullRequest{}, false, err
	}
	return toGiteaPullRequest(found), true, nil
}

// labelIDs maps label names to Gitea's ids, creating the missing ones: the
// pull-request API takes ids only.
func (g *gitea) labelIDs(ctx context.Context, repo Repo, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cl, err := g.call(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]int64{}
	err = giteaPages(func(page int) (*sdk.Response, bool, error) {
		labels, resp, err := cl.c.ListRepoLabels(repo.Owner, repo.Name, sdk.ListLabelsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: giteaPageSize}})
		if err != nil {
			return resp, true, g.fail("list labels of "+repo.String(), cl, resp, err)
		}
		for _, l := range labels {
			byName[l.Name] = l.ID
		}
		return resp, false, nil
	})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(names))
	for _, name := range names {
		id, ok := byName[name]
		if !ok {
			created, resp, err := cl.c.CreateLabel(repo.Owner, repo.Name, sdk.CreateLabelOption{Name: name, Color: "#ededed"})
			if err != nil {
				return nil, g.fail("create label "+strconv.Quote(name)+" in "+repo.String(), cl, resp, err)
			}
			id = created.ID
			byName[name] = id
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (g *gitea) GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error) {
	cl, err := g.call(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	p, resp, err := cl.c.GetPullRequest(repo.Owner, repo.Name, int64(number))
	if err != nil {
		return PullRequest{}, g.fail(fmt.Sprintf("get pull request %d of %s", number, repo), cl, resp, err)
	}
	return toGiteaPullRequest(p), nil
}

func (g *gitea) Reviews(ctx context.Context, repo Repo, number int) ([]Review, error) {
	cl, err := g.call(ctx)
	if err != nil {
		return nil, err
	}
	var out []Review
	err = giteaPages(func(page int) (*sdk.Response, bool, error) {
		reviews, resp, err := cl.c.ListPullReviews(repo.Owner, repo.Name, int64(number), sdk.ListPullReviewsOptions{ListOptions: sdk.ListOptions{Page: page, PageSize: giteaPageSize}})
		if err != nil {
			return resp, true, g.fail(fmt.Sprintf("list reviews of pull request %d of %s", number, repo), cl, resp, err)
		}
		for _, r := range reviews {
			out = append(out, Review{
				ID:          r.ID,
				User:        giteaLogin(r.Reviewer),
				State:       giteaReviewState(string(r.State), r.Dismissed),
				CommitID:    r.CommitID,
				Official:    r.Official,
				Stale:       r.Stale,
				Dismissed:   r.Dismissed,
				SubmittedAt: r.Submitted,
			})
		}
		return resp, false, nil
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
	cl, err := g.call(ctx)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("merge pull request %d of %s", number, repo)
	merged, resp, err := cl.c.MergePullRequest(repo.Owner, repo.Name, int64(number), sdk.MergePullRequestOption{
		Style: sdk.MergeStyle(method), Title: opts.Title, Message: opts.Message, HeadCommitId: opts.HeadSHA,
	})
	if err != nil || !merged {
		// The SDK answers a refusal with merged false and no error.
		return g.fail(op, cl, resp, err)
	}
	return nil
}

func (g *gitea) Close(ctx context.Context, repo Repo, number int, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	cl, err := g.call(ctx)
	if err != nil {
		return err
	}
	closed := sdk.StateClosed
	if _, resp, err := cl.c.EditPullRequest(repo.Owner, repo.Name, int64(number), sdk.EditPullRequestOption{State: &closed}); err != nil {
		return g.fail(fmt.Sprintf("close pull request %d of %s", number, repo), cl, resp, err)
	}
	return nil
}

func (g *gitea) Comment(ctx context.Context, repo Repo, number int, body string) error {
	cl, err := g.call(ctx)
	if err != nil {
		return err
	}
	if _, resp, err := cl.c.CreateIssueComment(repo.Owner, repo.Name, int64(number), sdk.CreateIssueCommentOption{Body: body}); err != nil {
		return g.fail(fmt.Sprintf("comment on pull request %d of %s", number, repo), cl, resp, err)
	}
	return nil
}

func (g *gitea) CommitStatuses(ctx context.Context, repo Repo, sha string) ([]CommitStatus, error) {
	cl, err := g.call(ctx)
	if err != nil {
		return nil, err
	}
	var out []CommitStatus
	err = giteaPages(func(page int) (*sdk.Response, bool, error) {
		statuses, resp, err := cl.c.ListStatuses(repo.Owner, repo.Name, sha, sdk.ListStatusesOption{ListOptions: sdk.ListOptions{Page: page, PageSize: giteaPageSize}})
		if err != nil {
			return resp, true, g.fail(fmt.Sprintf("list the statuses of commit %s of %s", sha, repo), cl, resp, err)
		}
		for _, s := range statuses {
			at := s.Updated
			if at.IsZero() {
				at = s.Created
			}
			out = append(out, CommitStatus{
				ID:          s.ID,
				Context:     s.Context,
				State:       commitState(string(s.State)),
				Description: s.Description,
				TargetURL:   s.TargetURL,
				At:          at,
			})
		}
		return resp, false, nil
	})
	return out, err
}
