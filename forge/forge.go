// Package forge opens, inspects and merges pull requests on Gitea, GitHub
// and GitLab, the channel through which a promotion is reviewed when its
// approval is a pull-request review, and reads the commit statuses deployers
// post. Each provider adapts the forge's maintained SDK (go-github, GitLab's
// client-go, Gitea's SDK) to the Forge interface: lists are read page by
// page, a rate limit is an *APIError that says when to retry (never a
// sleep), and errors never hold a credential. What counts as an approval is
// decided by the pure CountingApproval.
package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Forge is what vectorflow needs from a code-hosting service.
type Forge interface {
	// OpenPullRequest opens a pull request head -> base, or returns the open
	// one whose head is pr.Head: calling it twice opens one pull request.
	OpenPullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error)
	// GetPullRequest reads pull request number.
	GetPullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error)
	// Reviews lists the reviews of pull request number with state, author,
	// commit, and the official/stale/dismissed flags where the forge has them.
	Reviews(ctx context.Context, repo Repo, number int) ([]Review, error)
	// Merge merges pull request number; the forge refuses it (an *APIError)
	// when its own rules (required approvals, conflicts) are not met.
	Merge(ctx context.Context, repo Repo, number int, opts MergeOptions) error
	// Close closes pull request number unmerged, after commenting why when
	// comment is not empty.
	Close(ctx context.Context, repo Repo, number int, comment string) error
	// Comment adds a comment to pull request number.
	Comment(ctx context.Context, repo Repo, number int, body string) error
	// CommitStatuses lists the statuses posted on commit sha, every page of
	// them, in the forge's order (the newest is the one with the latest At).
	CommitStatuses(ctx context.Context, repo Repo, sha string) ([]CommitStatus, error)
}

// Kinds of forge New accepts.
const (
	KindGitea  = "gitea"
	KindGitHub = "github"
	KindGitLab = "gitlab"
)

// New returns the client for a forge of kind at apiURL, the root of its REST
// API: https://gitea.example.com/api/v1, https://api.github.com (the default
// for github; GitHub Enterprise Server's is https://HOST/api/v3),
// https://gitlab.com/api/v4 (the default for gitlab). token is sent in a
// header, never in a URL. httpClient nil means a client with a 30-second
// timeout.
func New(kind, apiURL, token string, httpClient *http.Client) (Forge, error) {
	return NewWithCredentials(kind, apiURL, Credentials{Token: token}, httpClient)
}

// Credentials authenticate vectorflow to a forge: a token, or (GitHub only)
// a GitHub App installation.
type Credentials struct {
	Token     string
	GitHubApp *GitHubApp
	// AppTokens keeps GitHub App installation tokens between clients; nil
	// means each client buys its own.
	AppTokens *AppTokens
}

// GitHubApp is a GitHub App installation vectorflow acts as: the app signs a
// JWT with its private key and trades it for an installation token, which is
// renewed before it expires.
type GitHubApp struct {
	AppID, InstallationID int64
	// PrivateKey is the app's PEM-encoded private key.
	PrivateKey []byte
}

// NewWithCredentials is New with a GitHub App as an alternative to a token.
func NewWithCredentials(kind, apiURL string, cred Credentials, httpClient *http.Client) (Forge, error) {
	if apiURL == "" {
		switch kind {
		case KindGitHub:
			apiURL = "https://api.github.com"
		case KindGitLab:
			apiURL = "https://gitlab.com/api/v4"
		}
	}
	base, err := parseAPIURL(kind, apiURL)
	if err != nil {
		return nil, err
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cred.GitHubApp != nil && kind != KindGitHub {
		return nil, fmt.Errorf("%s forge: GitHub App credentials work on github only: use a token", kind)
	}
	if cred.GitHubApp == nil && cred.Token == "" {
		return nil, fmt.Errorf("%s forge: no credentials: set a token", kind)
	}
	e := errorMapper{forge: kind, secret: cred.Token}
	switch kind {
	case KindGitea:
		return newGitea(base, cred.Token, httpClient, e)
	case KindGitHub:
		return newGitHub(base, cred, httpClient, e)
	case KindGitLab:
		return newGitLab(base, cred.Token, httpClient, e)
	default:
		return nil, fmt.Errorf("forge kind %q is not supported: use %s, %s or %s", kind, KindGitea, KindGitHub, KindGitLab)
	}
}

func parseAPIURL(kind, apiURL string) (*url.URL, error) {
	if apiURL == "" {
		return nil, fmt.Errorf("%s forge: the API URL is empty: set it to the root of the REST API (https://host/api/v1 for Gitea)", kind)
	}
	u, err := url.Parse(strings.TrimSuffix(apiURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s forge: API URL %q is not an http(s) URL", kind, redactURL(apiURL))
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s forge: API URL %q carries credentials: pass the token separately", kind, redactURL(apiURL))
	}
	return u, nil
}

// Repo names a repository on a forge. Owner is the user, organization or
// (GitLab) the full group path such as "group/subgroup".
type Repo struct{ Owner, Name string }

func (r Repo) String() string { return r.Owner + "/" + r.Name }

// RepoFromURL derives the repository from a clone URL in any of the forms
// git accepts: https://host/owner/name.git, ssh://git@host:22/owner/name,
// git@host:owner/name.git. Every path segment but the last is the owner,
// which keeps GitLab subgroups whole.
func RepoFromURL(cloneURL string) (Repo, error) {
	path := ""
	if u, err := url.Parse(cloneURL); err == nil && u.Scheme != "" && u.Host != "" {
		path = u.Path
	} else if _, after, ok := strings.Cut(cloneURL, ":"); ok && !strings.Contains(cloneURL, "://") {
		path = after // scp-like user@host:owner/name
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return Repo{}, fmt.Errorf("clone URL %q does not name an owner and a repository (want https://host/owner/name.git)", redactURL(cloneURL))
	}
	return Repo{Owner: path[:i], Name: path[i+1:]}, nil
}

// NewPullRequest is a pull request to open. Labels are names; ones the
// repository lacks are created on forges that need them to exist (Gitea).
type NewPullRequest struct {
	Head, Base  string
	Title, Body string
	Labels      []string
}

// Pull-request states, the same on every forge.
const (
	StateOpen   = "open"
	StateClosed = "closed"
	StateMerged = "merged"
)

// PullRequest is a pull (GitLab: merge) request as the forge reports it.
type PullRequest struct {
	Number int
	// State is StateOpen, StateClosed or StateMerged.
	State       string
	Merged      bool
	MergedBy    string
	MergeCommit string
	HeadSHA     string
	Author      string
	// Mergeable is nil while the forge is still computing it.
	Mergeable *bool
	URL       string
}

// Review states, the same on every forge.
const (
	ReviewApproved       = "APPROVED"
	ReviewRequestChanges = "REQUEST_CHANGES"
	ReviewCommented      = "COMMENTED"
	ReviewPending        = "PENDING"
	ReviewDismissed      = "DISMISSED"
)

// Review is one review of a pull request (on GitLab: one approval).
type Review struct {
	ID    int64
	User  string
	State string
	// CommitID is the head commit the review was given on.
	CommitID string
	// Official says the forge counts the review toward required approvals.
	// Forges that do not say (GitHub, GitLab) report true: only users
	// allowed to review there can approve.
	Official bool
	// Stale says the head moved since the review (Gitea reports it; elsewhere
	// CountingApproval compares CommitID with the head).
	Stale       bool
	Dismissed   bool
	SubmittedAt time.Time
}

// CountingApproval says whether review r approves the pull request whose head
// is headSHA and whose author is author: an approval, official, neither stale
// nor dismissed, given on exactly headSHA, and not by the author (an author
// approving their own promotion is no review).
func CountingApproval(r Review, headSHA, author string) bool {
	return r.State == ReviewApproved &&
		r.Official && !r.Stale && !r.Dismissed &&
		headSHA != "" && r.CommitID == headSHA &&
		!strings.EqualFold(r.User, author)
}

// Merge methods.
const (
	MergeMethodMerge  = "merge"
	MergeMethodSquash = "squash"
	MergeMethodRebase = "rebase"
)

// MergeOptions says how to merge. HeadSHA, when set, makes the forge refuse
// the merge if the head moved since it was reviewed.
type MergeOptions struct {
	// Method is MergeMethodMerge (the default), MergeMethodSquash or MergeMethodRebase.
	Method         string
	Title, Message string
	HeadSHA        string
}

func (o MergeOptions) method() (string, error) {
	switch o.Method {
	case "":
		return MergeMethodMerge, nil
	case MergeMethodMerge, MergeMethodSquash, MergeMethodRebase:
		return o.Method, nil
	default:
		return "", fmt.Errorf("merge method %q is not supported: use %s, %s or %s", o.Method, MergeMethodMerge, MergeMethodSquash, MergeMethodRebase)
	}
}

// Commit-status states, the same on every forge.
const (
	CommitStatusSuccess = "success"
	CommitStatusFailure = "failure"
	CommitStatusError   = "error"
	CommitStatusPending = "pending"
)

// CommitStatus is one status a CI system or deployer posted on a commit.
// Context is GitHub's and Gitea's name for it (GitLab's "name").
type CommitStatus struct {
	// ID is the forge's id of the status; later statuses have higher ids,
	// which orders statuses set within the same second.
	ID      int64
	Context string
	// State is CommitStatusSuccess, CommitStatusFailure, CommitStatusError
	// or CommitStatusPending.
	State       string
	Description string
	TargetURL   string
	// At is when the status was last set.
	At time.Time
}
