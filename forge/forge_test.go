package forge_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/forge"
)

func TestCountingApproval(t *testing.T) {
	const head, author = "6dcb09b5b57875f334f61aebed695e2e4193db5e", "alice"
	approval := forge.Review{User: "bob", State: forge.ReviewApproved, CommitID: head, Official: true}
	with := func(edit func(*forge.Review)) forge.Review {
		r := approval
		edit(&r)
		return r
	}
	tests := []struct {
		name   string
		review forge.Review
		head   string
		want   bool
	}{
		{"official fresh approval on the head by another user", approval, head, true},
		{"comment", with(func(r *forge.Review) { r.State = forge.ReviewCommented }), head, false},
		{"changes requested", with(func(r *forge.Review) { r.State = forge.ReviewRequestChanges }), head, false},
		{"pending", with(func(r *forge.Review) { r.State = forge.ReviewPending }), head, false},
		{"not official", with(func(r *forge.Review) { r.Official = false }), head, false},
		{"stale", with(func(r *forge.Review) { r.Stale = true }), head, false},
		{"dismissed", with(func(r *forge.Review) { r.Dismissed = true }), head, false},
		{"on an older commit", with(func(r *forge.Review) { r.CommitID = "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091" }), head, false},
		{"without a commit", with(func(r *forge.Review) { r.CommitID = "" }), head, false},
		{"unknown head", with(func(r *forge.Review) { r.CommitID = "" }), "", false},
		{"by the author", with(func(r *forge.Review) { r.User = author }), head, false},
		{"by the author, other case", with(func(r *forge.Review) { r.User = "Alice" }), head, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := forge.CountingApproval(tt.review, tt.head, author); got != tt.want {
				t.Errorf("CountingApproval(%+v, %q, %q) = %v, want %v", tt.review, tt.head, author, got, tt.want)
			}
		})
	}
}

func TestRepoFromURL(t *testing.T) {
	tests := []struct {
		url     string
		want    forge.Repo
		wantErr string
	}{
		{url: "http://127.0.0.1:3000/alice/config.git", want: forge.Repo{Owner: "alice", Name: "config"}},
		{url: "https://github.com/octocat/Hello-World", want: forge.Repo{Owner: "octocat", Name: "Hello-World"}},
		{url: "https://github.com/octocat/Hello-World.git/", want: forge.Repo{Owner: "octocat", Name: "Hello-World"}},
		{url: "https://gitlab.com/gitlab-org/sub/group/project.git", want: forge.Repo{Owner: "gitlab-org/sub/group", Name: "project"}},
		{url: "ssh://git@gitea.example.com:2222/alice/config.git", want: forge.Repo{Owner: "alice", Name: "config"}},
		{url: "git@github.com:octocat/Hello-World.git", want: forge.Repo{Owner: "octocat", Name: "Hello-World"}},
		{url: "https://user:s3cret@github.com/onlyname", wantErr: "https://user:xxxxx@github.com/onlyname"},
		{url: "https://github.com/", wantErr: "does not name an owner"},
		{url: "not a url", wantErr: "does not name an owner"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := forge.RepoFromURL(tt.url)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RepoFromURL(%q) error %v, want one containing %q", tt.url, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error leaks the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RepoFromURL(%q) (-want +got):\n%s", tt.url, diff)
			}
		})
	}
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		kind, apiURL, wantErr string
	}{
		{"bitbucket", "https://api.bitbucket.org/2.0", `forge kind "bitbucket" is not supported`},
		{"gitea", "", "API URL is empty"},
		{"gitea", "gitea.example.com/api/v1", "is not an http(s) URL"},
		{"gitea", "https://admin:hunter2@gitea.example.com/api/v1", "carries credentials"},
		{"gitea", "https://gitea.example.com", "does not end in /api/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.apiURL, func(t *testing.T) {
			_, err := forge.New(tt.kind, tt.apiURL, "tok", nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New(%q, %q) error %v, want one containing %q", tt.kind, tt.apiURL, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
	if _, err := forge.New(forge.KindGitLab, "", "", nil); err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Errorf("New without a token: %v, want an error saying so", err)
	}
	for _, kind := range []string{forge.KindGitHub, forge.KindGitLab} {
		if _, err := forge.New(kind, "", "tok", nil); err != nil {
			t.Errorf("New(%q) with the default API URL: %v", kind, err)
		}
	}
}
