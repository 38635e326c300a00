package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// jsonPayload returns the JSON document of a forge request. GitHub and Gitea
// can be configured to send application/x-www-form-urlencoded with the JSON in
// the "payload" field; the signature covers the raw form body either way.
func jsonPayload(h http.Header, body []byte) ([]byte, error) {
	mediaType, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mediaType != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("decoding form body: %w", err)
	}
	payload := form.Get("payload")
	if payload == "" {
		return nil, errors.New(`form body has no "payload" field; set the webhook content type to application/json`)
	}
	return []byte(payload), nil
}

// decodePayload unmarshals into v, naming the provider and event in the error.
func decodePayload(h http.Header, body []byte, v any, provider, event string) error {
	doc, err := jsonPayload(h, body)
	if err != nil {
		return fmt.Errorf("%s %q event: %w", provider, event, err)
	}
	if err := json.Unmarshal(doc, v); err != nil {
		return fmt.Errorf("%s %q event: body is not the expected JSON: %w", provider, event, err)
	}
	return nil
}

// repositories normalizes and deduplicates the URLs a payload names, keeping
// their order and skipping empty ones.
func repositories(urls ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range urls {
		n := NormalizeRepoURL(u)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// branchFromRef returns x for refs/heads/x and "" for tags and other refs.
func branchFromRef(ref string) string {
	b, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return ""
	}
	return b
}

// forgeEvent checks that an event carries what its kind needs, so a caller
// never receives a push without a repository or a review without a number.
func forgeEvent(provider, kind string, repos []string, branch string, number int) (parsed, error) {
	if len(repos) == 0 {
		return parsed{}, fmt.Errorf("%s %s event names no repository URL (repository clone, ssh and web URLs are all empty)", provider, kind)
	}
	if kind != KindPush && number <= 0 {
		return parsed{}, fmt.Errorf("%s %s event has no pull request number", provider, kind)
	}
	return parsed{verdict: deliver, event: Event{
		Provider:     provider,
		Kind:         kind,
		Repositories: repos,
		Branch:       branch,
		PullRequest:  number,
	}}, nil
}

func ignored(format string, args ...any) (parsed, error) {
	return parsed{verdict: ignore, reason: fmt.Sprintf(format, args...)}, nil
}
