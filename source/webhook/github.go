package webhook

import "net/http"

// parseGitHub reads push, pull_request and pull_request_review events, named
// by X-GitHub-Event. A ping (sent when the webhook is created) gets a pong.
func parseGitHub(h http.Header, body []byte) (parsed, error) {
	event := h.Get("X-GitHub-Event")
	switch event {
	case "ping":
		return parsed{verdict: pong}, nil
	case "push":
		var p struct {
			Ref        string     `json:"ref"`
			Repository githubRepo `json:"repository"`
		}
		if err := decodePayload(h, body, &p, ProviderGitHub, event); err != nil {
			return parsed{}, err
		}
		return forgeEvent(ProviderGitHub, KindPush, p.Repository.urls(), branchFromRef(p.Ref), 0)
	case "pull_request", "pull_request_review":
		var p struct {
			Number      int `json:"number"`
			PullRequest struct {
				Number int `json:"number"`
			} `json:"pull_request"`
			Repository githubRepo `json:"repository"`
		}
		if err := decodePayload(h, body, &p, ProviderGitHub, event); err != nil {
			return parsed{}, err
		}
		kind, number := KindPullRequest, p.Number
		if event == "pull_request_review" {
			kind = KindReview
		}
		if number == 0 {
			number = p.PullRequest.Number
		}
		return forgeEvent(ProviderGitHub, kind, p.Repository.urls(), "", number)
	default:
		return ignored("GitHub event %q is not one vectorflow uses", event)
	}
}

// githubRepo holds the repository URLs GitHub sends. "url" is left out: it is
// the web URL in push events but the API URL in all others.
type githubRepo struct {
	HTMLURL  string `json:"html_url"`
	CloneURL string `json:"clone_url"`
	SSHURL   string `json:"ssh_url"`
	GitURL   string `json:"git_url"`
}

func (r githubRepo) urls() []string {
	return repositories(r.CloneURL, r.SSHURL, r.HTMLURL, r.GitURL)
}
