package webhook

import "net/http"

// parseGitLab reads Push Hook, Tag Push Hook and Merge Request Hook events,
// named by X-Gitlab-Event. Merge request approvals (object_attributes.action
// approved, approval, unapproved, unapproval) are reviews.
func parseGitLab(h http.Header, body []byte) (parsed, error) {
	event := h.Get("X-Gitlab-Event")
	switch event {
	case "Push Hook", "Tag Push Hook":
		var p struct {
			Ref        string         `json:"ref"`
			Project    gitlabProject  `json:"project"`
			Repository gitlabRepoURLs `json:"repository"`
		}
		if err := decodePayload(h, body, &p, ProviderGitLab, event); err != nil {
			return parsed{}, err
		}
		return forgeEvent(ProviderGitLab, KindPush, gitlabURLs(p.Project, p.Repository), branchFromRef(p.Ref), 0)
	case "Merge Request Hook":
		var p struct {
			Project          gitlabProject  `json:"project"`
			Repository       gitlabRepoURLs `json:"repository"`
			ObjectAttributes struct {
				IID    int    `json:"iid"`
				Action string `json:"action"`
			} `json:"object_attributes"`
		}
		if err := decodePayload(h, body, &p, ProviderGitLab, event); err != nil {
			return parsed{}, err
		}
		kind := KindPullRequest
		switch p.ObjectAttributes.Action {
		case "approved", "approval", "unapproved", "unapproval":
			kind = KindReview
		}
		return forgeEvent(ProviderGitLab, kind, gitlabURLs(p.Project, p.Repository), "", p.ObjectAttributes.IID)
	default:
		return ignored("GitLab event %q is not one vectorflow uses", event)
	}
}

// gitlabProject is the "project" object; for merge requests it is the target
// project.
type gitlabProject struct {
	GitHTTPURL string `json:"git_http_url"`
	GitSSHURL  string `json:"git_ssh_url"`
	WebURL     string `json:"web_url"`
}

// gitlabRepoURLs is the older "repository" object GitLab still sends.
type gitlabRepoURLs struct {
	GitHTTPURL string `json:"git_http_url"`
	GitSSHURL  string `json:"git_ssh_url"`
	Homepage   string `json:"homepage"`
}

func gitlabURLs(p gitlabProject, r gitlabRepoURLs) []string {
	return repositories(p.GitHTTPURL, p.GitSSHURL, p.WebURL, r.GitHTTPURL, r.GitSSHURL, r.Homepage)
}
