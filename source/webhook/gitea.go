package webhook

import "net/http"

// parseGitea reads push, pull request and pull request review events.
//
// Gitea names an event twice: X-Gitea-Event-Type is the precise hook type
// (pull_request_review_approved, pull_request_sync, ...), X-Gitea-Event the
// coarse one (pull_request_approved, pull_request, ...). The precise one is
// read when present. Note that the coarse "pull_request_comment" is a review
// comment while the precise "pull_request_comment" is a plain comment on the
// pull request (coarse "issue_comment"), which we ignore.
func parseGitea(h http.Header, body []byte) (parsed, error) {
	event, kind := h.Get("X-Gitea-Event-Type"), ""
	if event != "" {
		kind = giteaEventTypes[event]
	} else {
		event = h.Get("X-Gitea-Event")
		kind = giteaEvents[event]
	}
	switch kind {
	case KindPush:
		var p struct {
			Ref        string    `json:"ref"`
			Repository giteaRepo `json:"repository"`
		}
		if err := decodePayload(h, body, &p, ProviderGitea, event); err != nil {
			return parsed{}, err
		}
		return forgeEvent(ProviderGitea, KindPush, p.Repository.urls(), branchFromRef(p.Ref), 0)
	case KindPullRequest, KindReview:
		var p struct {
			Number      int `json:"number"`
			PullRequest struct {
				Number int `json:"number"`
			} `json:"pull_request"`
			Repository giteaRepo `json:"repository"`
		}
		if err := decodePayload(h, body, &p, ProviderGitea, event); err != nil {
			return parsed{}, err
		}
		number := p.Number
		if number == 0 {
			number = p.PullRequest.Number
		}
		return forgeEvent(ProviderGitea, kind, p.Repository.urls(), "", number)
	default:
		return ignored("Gitea event %q is not one vectorflow uses", event)
	}
}

// giteaEventTypes maps X-Gitea-Event-Type (Gitea's HookEventType).
var giteaEventTypes = map[string]string{
	"push":                         KindPush,
	"pull_request":                 KindPullRequest,
	"pull_request_sync":            KindPullRequest,
	"pull_request_assign":          KindPullRequest,
	"pull_request_label":           KindPullRequest,
	"pull_request_milestone":       KindPullRequest,
	"pull_request_review_request":  KindPullRequest,
	"pull_request_review_approved": KindReview,
	"pull_request_review_rejected": KindReview,
	"pull_request_review_comment":  KindReview,
}

// giteaEvents maps X-Gitea-Event (HookEventType.Event()), for senders that do
// not set X-Gitea-Event-Type.
var giteaEvents = map[string]string{
	"push":                  KindPush,
	"pull_request":          KindPullRequest,
	"pull_request_approved": KindReview,
	"pull_request_rejected": KindReview,
	"pull_request_comment":  KindReview,
}

type giteaRepo struct {
	CloneURL string `json:"clone_url"`
	SSHURL   string `json:"ssh_url"`
	HTMLURL  string `json:"html_url"`
}

func (r giteaRepo) urls() []string {
	return repositories(r.CloneURL, r.SSHURL, r.HTMLURL)
}
