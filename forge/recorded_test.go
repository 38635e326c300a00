package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/forge"
)

// GitHub and GitLab cannot be reached from here, so their providers are
// tested against request/response pairs from their API documentation: the
// server checks every request (method, escaped path, query, auth header,
// JSON body) and answers with the documented body in testdata/<forge>/.
//
// The requests are the SDKs' (go-github, GitLab's client-go), in forms the
// APIs document as accepted: go-github sends an issue's labels as a bare
// JSON array and leaves page out of a first page; client-go escapes every
// byte of a project path that is not a letter or digit ('.' as %2E, '/' as
// %2F), which GitLab decodes like any percent-encoding.

// exchange is one recorded request and the documented answer to it.
type exchange struct {
	method string
	path   string // as sent on the wire, percent-escapes included
	query  string // compared as parsed values
	body   string // the JSON request body wanted; "" for none
	status int
	reply  string // file under testdata/<forge>/; "" for an empty body
	// header is sent with the reply; "{{server}}" in a value becomes the
	// test server's URL (GitHub's Link header names absolute URLs).
	header map[string]string
}

const (
	githubToken = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	gitlabToken = "glpat-9Xq2T8zGkYfW3nRb7LmA"
	githubHead  = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	gitlabHead  = "e82eb4a098e32c796079ca3915e07487fc4db24c"
)

func TestRecordedForges(t *testing.T) {
	hub := forge.Repo{Owner: "octocat", Name: "Hello-World"}
	lab := forge.Repo{Owner: "marcel.amirault", Name: "test-project"}
	labSub := forge.Repo{Owner: "gitlab-org/subgroup", Name: "test-project"}

	tests := []struct {
		name      string
		kind      string
		exchanges []exchange
		call      func(ctx context.Context, f forge.Forge) (any, error)
		want      any
		wantErr   *forge.APIError // URL relative to the API root
	}{
		{
			name: "github open a new pull request and label it",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/pulls", query: "state=open&head=octocat:new-topic&per_page=100", status: 200, reply: "-[]"},
				{method: "POST", path: "/repos/octocat/Hello-World/pulls", status: 201, reply: "pull_open.json",
					body: `{"title":"Amazing new feature","body":"Please pull these awesome changes in!","head":"new-topic","base":"master"}`},
				{method: "POST", path: "/repos/octocat/Hello-World/issues/1347/labels", status: 200, reply: "labels.json",
					body: `["vectorflow","promotion"]`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return f.OpenPullRequest(ctx, hub, forge.NewPullRequest{Head: "new-topic", Base: "master",
					Title: "Amazing new feature", Body: "Please pull these awesome changes in!", Labels: []string{"vectorflow", "promotion"}})
			},
			want: forge.PullRequest{Number: 1347, State: forge.StateOpen, HeadSHA: githubHead, Author: "octocat",
				URL: "https://github.com/octocat/Hello-World/pull/1347"},
		},
		{
			name: "github open finds the open pull request for the head",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/pulls", query: "state=open&head=octocat:new-topic&per_page=100", status: 200, reply: "pulls_list_open.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return f.OpenPullRequest(ctx, hub, forge.NewPullRequest{Head: "new-topic", Base: "master", Title: "again"})
			},
			want: forge.PullRequest{Number: 1347, State: forge.StateOpen, HeadSHA: githubHead, Author: "octocat",
				URL: "https://github.com/octocat/Hello-World/pull/1347"},
		},
		{
			name: "github open after losing a race returns the winner's pull request",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/pulls", query: "state=open&head=octocat:new-topic&per_page=100", status: 200, reply: "-[]"},
				{method: "POST", path: "/repos/octocat/Hello-World/pulls", status: 422, reply: "create_already_exists.json",
					body: `{"title":"t","body":"","head":"new-topic","base":"master"}`},
				{method: "GET", path: "/repos/octocat/Hello-World/pulls", query: "state=open&head=octocat:new-topic&per_page=100", status: 200, reply: "pulls_list_open.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				pr, err := f.OpenPullRequest(ctx, hub, forge.NewPullRequest{Head: "new-topic", Base: "master", Title: "t"})
				return pr.Number, err
			},
			want: 1347,
		},
		{
			name: "github merged pull request",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/pulls/1347", status: 200, reply: "pull_merged.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.GetPullRequest(ctx, hub, 1347) },
			want: forge.PullRequest{Number: 1347, State: forge.StateMerged, Merged: true, MergedBy: "hubot",
				MergeCommit: "e5bd3914e2e596debea16f433f57875b5b90bcd6", HeadSHA: githubHead, Author: "octocat",
				URL: "https://github.com/octocat/Hello-World/pull/1347"},
		},
		{
			name: "github reviews and which of them count",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/pulls/1347/reviews", query: "per_page=100", status: 200, reply: "reviews.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return countingReviews(f.Reviews(ctx, hub, 1347))
			},
			want: []countedReview{
				{Review: forge.Review{ID: 80, User: "hubot", State: forge.ReviewApproved, CommitID: githubHead, Official: true, SubmittedAt: at("2019-11-17T17:43:43Z")}, Counts: true},
				{Review: forge.Review{ID: 81, User: "monalisa", State: forge.ReviewApproved, CommitID: "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091", Official: true, SubmittedAt: at("2019-11-16T10:00:00Z")}},
				{Review: forge.Review{ID: 82, User: "monalisa", State: forge.ReviewRequestChanges, CommitID: githubHead, Official: true, SubmittedAt: at("2019-11-17T18:00:00Z")}},
				{Review: forge.Review{ID: 83, User: "mojombo", State: forge.ReviewDismissed, CommitID: githubHead, Official: true, Dismissed: true, SubmittedAt: at("2019-11-17T18:05:00Z")}},
				{Review: forge.Review{ID: 84, User: "octocat", State: forge.ReviewApproved, CommitID: githubHead, Official: true, SubmittedAt: at("2019-11-17T18:10:00Z")}},
			},
		},
		{
			name: "github squash merge pinned to the reviewed head",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "PUT", path: "/repos/octocat/Hello-World/pulls/1347/merge", status: 200, reply: "merge.json",
					body: `{"merge_method":"squash","commit_title":"Promote x-1","commit_message":"Approved-by: hubot","sha":"` + githubHead + `"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Merge(ctx, hub, 1347, forge.MergeOptions{Method: forge.MergeMethodSquash, Title: "Promote x-1", Message: "Approved-by: hubot", HeadSHA: githubHead})
			},
		},
		{
			name: "github refuses an unmergeable pull request",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "PUT", path: "/repos/octocat/Hello-World/pulls/1347/merge", status: 405, reply: "merge_not_mergeable.json",
					body: `{"merge_method":"merge"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Merge(ctx, hub, 1347, forge.MergeOptions{})
			},
			wantErr: &forge.APIError{Forge: "github", Op: "merge pull request 1347 of octocat/Hello-World", Method: "PUT",
				URL: "/repos/octocat/Hello-World/pulls/1347/merge", Status: 405, Message: "Pull Request is not mergeable"},
		},
		{
			name: "github refuses when the head moved since review",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "PUT", path: "/repos/octocat/Hello-World/pulls/1347/merge", status: 409, reply: "merge_head_modified.json",
					body: `{"merge_method":"merge","sha":"` + githubHead + `"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Merge(ctx, hub, 1347, forge.MergeOptions{HeadSHA: githubHead})
			},
			wantErr: &forge.APIError{Forge: "github", Op: "merge pull request 1347 of octocat/Hello-World", Method: "PUT",
				URL: "/repos/octocat/Hello-World/pulls/1347/merge", Status: 409, Message: "Head branch was modified. Review and try the merge again."},
		},
		{
			name: "github close with a comment",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "POST", path: "/repos/octocat/Hello-World/issues/1347/comments", status: 201, reply: "comment.json",
					body: `{"body":"Superseded by x-2."}`},
				{method: "PATCH", path: "/repos/octocat/Hello-World/pulls/1347", status: 200, reply: "pull_closed.json",
					body: `{"state":"closed"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Close(ctx, hub, 1347, "Superseded by x-2.")
			},
		},
		{
			name: "github bad credentials",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/pulls/1347", status: 401, reply: "bad_credentials.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.GetPullRequest(ctx, hub, 1347) },
			wantErr: &forge.APIError{Forge: "github", Op: "get pull request 1347 of octocat/Hello-World", Method: "GET",
				URL: "/repos/octocat/Hello-World/pulls/1347", Status: 401, Message: "Bad credentials"},
		},
		{
			name: "gitlab open a new merge request with labels",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests", query: "state=opened&source_branch=manual-job-rules&per_page=100", status: 200, reply: "-[]"},
				{method: "POST", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests", status: 201, reply: "merge_request_open.json",
					body: `{"source_branch":"manual-job-rules","target_branch":"main","title":"Manual job rules","description":"","labels":"vectorflow,promotion"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return f.OpenPullRequest(ctx, lab, forge.NewPullRequest{Head: "manual-job-rules", Base: "main",
					Title: "Manual job rules", Labels: []string{"vectorflow", "promotion"}})
			},
			want: forge.PullRequest{Number: 133, State: forge.StateOpen, HeadSHA: gitlabHead, Author: "marcel.amirault",
				Mergeable: new(true), URL: "https://gitlab.com/marcel.amirault/test-project/-/merge_requests/133"},
		},
		{
			name: "gitlab open finds the open merge request in a subgroup project",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/gitlab-org%2Fsubgroup%2Ftest-project/merge_requests", query: "state=opened&source_branch=manual-job-rules&per_page=100", status: 200, reply: "merge_requests_list_open.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return f.OpenPullRequest(ctx, labSub, forge.NewPullRequest{Head: "manual-job-rules", Base: "main", Title: "again"})
			},
			// detailed_merge_status "checking": not known yet.
			want: forge.PullRequest{Number: 133, State: forge.StateOpen, HeadSHA: gitlabHead, Author: "marcel.amirault",
				URL: "https://gitlab.com/marcel.amirault/test-project/-/merge_requests/133"},
		},
		{
			name: "gitlab open after losing a race returns the winner's merge request",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests", query: "state=opened&source_branch=manual-job-rules&per_page=100", status: 200, reply: "-[]"},
				{method: "POST", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests", status: 409, reply: "create_conflict.json",
					body: `{"source_branch":"manual-job-rules","target_branch":"main","title":"t","description":""}`},
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests", query: "state=opened&source_branch=manual-job-rules&per_page=100", status: 200, reply: "merge_requests_list_open.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				pr, err := f.OpenPullRequest(ctx, lab, forge.NewPullRequest{Head: "manual-job-rules", Base: "main", Title: "t"})
				return pr.Number, err
			},
			want: 133,
		},
		{
			name: "gitlab merged merge request",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133", status: 200, reply: "merge_request_merged.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.GetPullRequest(ctx, lab, 133) },
			want: forge.PullRequest{Number: 133, State: forge.StateMerged, Merged: true, MergedBy: "DouweM",
				MergeCommit: "9b5e9c8f6f2c1e0d9e8a7b6c5d4e3f2a1b0c9d8e", HeadSHA: gitlabHead, Author: "marcel.amirault",
				Mergeable: new(false), URL: "https://gitlab.com/marcel.amirault/test-project/-/merge_requests/133"},
		},
		{
			name: "gitlab approvals are reviews on the head, the author's does not count",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133", status: 200, reply: "merge_request_open.json"},
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/approvals", status: 200, reply: "approvals.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return countingReviews(f.Reviews(ctx, lab, 133))
			},
			want: []countedReview{
				{Review: forge.Review{ID: 1, User: "root", State: forge.ReviewApproved, CommitID: gitlabHead, Official: true}, Counts: true},
				{Review: forge.Review{ID: 4155490, User: "marcel.amirault", State: forge.ReviewApproved, CommitID: gitlabHead, Official: true}},
			},
		},
		{
			name: "gitlab squash merge pinned to the reviewed head",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "PUT", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/merge", status: 200, reply: "merge_request_merged.json",
					body: `{"squash":true,"squash_commit_message":"Promote x-1\n\nApproved-by: root","sha":"` + gitlabHead + `"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Merge(ctx, lab, 133, forge.MergeOptions{Method: forge.MergeMethodSquash, Title: "Promote x-1", Message: "Approved-by: root", HeadSHA: gitlabHead})
			},
		},
		{
			name: "gitlab refuses a merge request that cannot merge",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "PUT", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/merge", status: 405, reply: "merge_method_not_allowed.json",
					body: `{"merge_commit_message":"Promote x-1"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Merge(ctx, lab, 133, forge.MergeOptions{Title: "Promote x-1"})
			},
			wantErr: &forge.APIError{Forge: "gitlab", Op: "merge merge request !133 of marcel.amirault/test-project", Method: "PUT",
				URL: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/merge", Status: 405, Message: "405 Method Not Allowed"},
		},
		{
			name: "gitlab refuses when the head moved since review",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "PUT", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/merge", status: 409, reply: "merge_sha_mismatch.json",
					body: `{"sha":"` + gitlabHead + `"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Merge(ctx, lab, 133, forge.MergeOptions{HeadSHA: gitlabHead})
			},
			wantErr: &forge.APIError{Forge: "gitlab", Op: "merge merge request !133 of marcel.amirault/test-project", Method: "PUT",
				URL: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/merge", Status: 409,
				Message: "SHA does not match HEAD of source branch: 1111111111111111111111111111111111111111"},
		},
		{
			name: "gitlab close with a comment",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "POST", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133/notes", status: 201, reply: "note.json",
					body: `{"body":"Superseded by x-2."}`},
				{method: "PUT", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133", status: 200, reply: "merge_request_closed.json",
					body: `{"state_event":"close"}`},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) {
				return nil, f.Close(ctx, lab, 133, "Superseded by x-2.")
			},
		},
		{
			name: "gitlab unauthorized",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133", status: 401, reply: "unauthorized.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.GetPullRequest(ctx, lab, 133) },
			wantErr: &forge.APIError{Forge: "gitlab", Op: "get merge request !133 of marcel.amirault/test-project", Method: "GET",
				URL: "/projects/marcel%2Eamirault%2Ftest-project/merge_requests/133", Status: 401, Message: "401 Unauthorized"},
		},
		{
			name: "github commit statuses over two pages",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/commits/" + githubHead + "/statuses", query: "per_page=100", status: 200, reply: "statuses_page1.json",
					header: map[string]string{"Link": `<{{server}}/repositories/1296269/commits/` + githubHead + `/statuses?per_page=100&page=2>; rel="next", <{{server}}/repositories/1296269/commits/` + githubHead + `/statuses?per_page=100&page=2>; rel="last"`}},
				{method: "GET", path: "/repos/octocat/Hello-World/commits/" + githubHead + "/statuses", query: "per_page=100&page=2", status: 200, reply: "statuses_page2.json"},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.CommitStatuses(ctx, hub, githubHead) },
			want: []forge.CommitStatus{
				{ID: 3, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusFailure, Description: "health check failed", At: at("2026-11-30T10:05:00Z")},
				{ID: 1, Context: "continuous-integration/jenkins", State: forge.CommitStatusSuccess, Description: "Build has completed successfully", TargetURL: "https://ci.example.com/1000/output", At: at("2012-07-20T01:19:13Z")},
				{ID: 2, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusPending, Description: "progressing", At: at("2026-11-30T10:00:00Z")},
			},
		},
		{
			name: "github primary rate limit says when it resets",
			kind: forge.KindGitHub,
			exchanges: []exchange{
				{method: "GET", path: "/repos/octocat/Hello-World/commits/" + githubHead + "/statuses", query: "per_page=100", status: 403, reply: "rate_limited.json",
					header: map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Used": "5000", "X-RateLimit-Reset": "1796040000", "X-RateLimit-Resource": "core"}},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.CommitStatuses(ctx, hub, githubHead) },
			wantErr: &forge.APIError{Forge: "github", Op: "list the statuses of commit " + githubHead + " of octocat/Hello-World", Method: "GET",
				URL: "/repos/octocat/Hello-World/commits/" + githubHead + "/statuses?per_page=100", Status: 403,
				Message: "API rate limit exceeded for installation ID 1234.", RetryAt: time.Unix(1796040000, 0)},
		},
		{
			name: "gitlab commit statuses over two pages",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/repository/commits/" + gitlabHead + "/statuses", query: "per_page=100", status: 200, reply: "statuses_page1.json",
					header: map[string]string{"X-Page": "1", "X-Next-Page": "2", "X-Per-Page": "100", "X-Total-Pages": "2", "X-Total": "3"}},
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/repository/commits/" + gitlabHead + "/statuses", query: "per_page=100&page=2", status: 200, reply: "statuses_page2.json",
					header: map[string]string{"X-Page": "2", "X-Next-Page": "", "X-Per-Page": "100", "X-Total-Pages": "2", "X-Total": "3"}},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.CommitStatuses(ctx, lab, gitlabHead) },
			want: []forge.CommitStatus{
				{ID: 93, Context: "kustomization/apps/0c9c2e41", State: forge.CommitStatusFailure, Description: "health check failed", At: at("2026-11-30T10:05:00Z")},
				{ID: 91, Context: "bundler:audit", State: forge.CommitStatusPending, TargetURL: "https://gitlab.example.com/janedoe/gitlab-foss/builds/91", At: at("2016-01-19T08:40:25.934Z")},
				{ID: 90, Context: "flay", State: forge.CommitStatusSuccess, Description: "Flay passed", TargetURL: "https://gitlab.example.com/janedoe/gitlab-foss/builds/90", At: at("2016-01-19T08:40:25.935Z")},
			},
		},
		{
			name: "gitlab rate limit says when it resets",
			kind: forge.KindGitLab,
			exchanges: []exchange{
				{method: "GET", path: "/projects/marcel%2Eamirault%2Ftest-project/repository/commits/" + gitlabHead + "/statuses", query: "per_page=100", status: 429, reply: "-Retry later",
					header: map[string]string{"Content-Type": "text/plain", "RateLimit-Limit": "60", "RateLimit-Observed": "67", "RateLimit-Remaining": "0", "RateLimit-Reset": "1796040000", "RateLimit-ResetTime": "Tue, 30 Nov 2026 12:00:00 GMT"}},
			},
			call: func(ctx context.Context, f forge.Forge) (any, error) { return f.CommitStatuses(ctx, lab, gitlabHead) },
			wantErr: &forge.APIError{Forge: "gitlab", Op: "list the statuses of commit " + gitlabHead + " of marcel.amirault/test-project", Method: "GET",
				URL: "/projects/marcel%2Eamirault%2Ftest-project/repository/commits/" + gitlabHead + "/statuses?per_page=100", Status: 429,
				Message: "Retry later", RetryAt: time.Unix(1796040000, 0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			token, root := githubToken, ""
			if tt.kind == forge.KindGitLab {
				token, root = gitlabToken, "/api/v4"
			}
			srv := replay(t, tt.kind, token, root, tt.exchanges)
			f, err := forge.New(tt.kind, srv.URL+root, token, srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.call(ctx, f)
			if tt.wantErr != nil {
				var apiErr *forge.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("got error %v, want an *APIError", err)
				}
				want := *tt.wantErr
				want.URL = srv.URL + root + want.URL
				if diff := cmp.Diff(&want, apiErr); diff != "" {
					t.Errorf("APIError (-want +got):\n%s", diff)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("error leaks the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// countedReview pairs a review with CountingApproval's verdict on the head
// of the recorded pull request, whose author is the recorded author.
type countedReview struct {
	forge.Review
	Counts bool
}

func countingReviews(reviews []forge.Review, err error) ([]countedReview, error) {
	out := make([]countedReview, 0, len(reviews))
	for _, r := range reviews {
		head, author := githubHead, "octocat"
		if r.CommitID == gitlabHead {
			head, author = gitlabHead, "marcel.amirault"
		}
		out = append(out, countedReview{Review: r, Counts: forge.CountingApproval(r, head, author)})
	}
	return out, err
}

// replay serves exchanges in order and fails the test on any request that
// differs from the next recorded one, or if some are never asked for.
func replay(t *testing.T, kind, token, root string, exchanges []exchange) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(exchanges) {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.Error(w, `{"message":"unexpected"}`, http.StatusTeapot)
			return
		}
		ex := exchanges[next]
		next++
		checkRequest(t, kind, token, root, ex, r)
		for k, v := range ex.header {
			w.Header().Set(k, strings.ReplaceAll(v, "{{server}}", "http://"+r.Host))
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(ex.status)
		_, _ = w.Write(replyBody(t, kind, ex.reply))
	}))
	t.Cleanup(func() {
		srv.Close()
		if next != len(exchanges) {
			t.Errorf("%d of %d recorded requests were never made", len(exchanges)-next, len(exchanges))
		}
	})
	return srv
}

func checkRequest(t *testing.T, kind, token, root string, ex exchange, r *http.Request) {
	t.Helper()
	if r.Method != ex.method || r.URL.EscapedPath() != root+ex.path {
		t.Errorf("request %s %s, want %s %s", r.Method, r.URL.EscapedPath(), ex.method, root+ex.path)
	}
	wantQuery, _ := url.ParseQuery(ex.query)
	if diff := cmp.Diff(wantQuery, r.URL.Query()); diff != "" {
		t.Errorf("%s %s query (-want +got):\n%s", ex.method, ex.path, diff)
	}
	switch kind {
	case forge.KindGitHub:
		if got := r.Header.Get("Authorization"); got != "Bearer "+token {
			t.Errorf("Authorization header %q, want the bearer token", got)
		}
		if got := r.Header.Get("X-GitHub-Api-Version"); got == "" {
			t.Errorf("no X-GitHub-Api-Version header")
		}
	case forge.KindGitLab:
		if got := r.Header.Get("PRIVATE-TOKEN"); got != token {
			t.Errorf("PRIVATE-TOKEN header %q, want the token", got)
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ex.body == "" {
		if len(body) != 0 {
			t.Errorf("%s %s sent body %s, want none", ex.method, ex.path, body)
		}
		return
	}
	var want, got any
	if err := json.Unmarshal([]byte(ex.body), &want); err != nil {
		t.Fatalf("recorded body %s: %v", ex.body, err)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Errorf("%s %s body %q is not JSON: %v", ex.method, ex.path, body, err)
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s %s body (-want +got):\n%s", ex.method, ex.path, diff)
	}
}

// replyBody reads the documented response; "-" prefixes an inline body.
func replyBody(t *testing.T, kind, reply string) []byte {
	t.Helper()
	if reply == "" {
		return nil
	}
	if inline, ok := strings.CutPrefix(reply, "-"); ok {
		return []byte(inline)
	}
	b, err := os.ReadFile(filepath.Join("testdata", kind, reply))
	if err != nil {
		t.Fatalf("recorded response: %v", err)
	}
	return b
}

func at(s string) time.Time {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return tm
}

// TestRecordedSecondaryRateLimit: GitHub's secondary limit answers 403 with
// Retry-After; the call comes back at once with the time to retry, so a
// pass is never held for the wait.
func TestRecordedSecondaryRateLimit(t *testing.T) {
	hub := forge.Repo{Owner: "octocat", Name: "Hello-World"}
	srv := replay(t, forge.KindGitHub, githubToken, "", []exchange{
		{method: "GET", path: "/repos/octocat/Hello-World/pulls/1347", status: 403, reply: "secondary_rate_limited.json",
			header: map[string]string{"Retry-After": "60"}},
	})
	f, err := forge.New(forge.KindGitHub, srv.URL, githubToken, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	_, err = f.GetPullRequest(context.Background(), hub, 1347)
	after := time.Now()
	at, ok := forge.RetryAt(err)
	if !ok {
		t.Fatalf("got %v, want a rate-limit error with a retry time", err)
	}
	if at.Before(before.Add(60*time.Second)) || at.After(after.Add(60*time.Second)) {
		t.Errorf("RetryAt %v, want 60s after the call (%v)", at, before)
	}
	if after.Sub(before) > 5*time.Second {
		t.Errorf("the call took %v: a rate limit must not be waited out", after.Sub(before))
	}
	if !strings.Contains(err.Error(), "secondary rate limit") || !strings.Contains(err.Error(), "retry after") {
		t.Errorf("error %q does not say what happened and when to retry", err)
	}
}
