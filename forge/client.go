package forge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// APIError is a call the forge answered with an error status. It names the
// call and carries the forge's own message; it never holds the token.
type APIError struct {
	Forge   string // gitea, github, gitlab
	Op      string // what was being done, e.g. "merge pull request 3"
	Method  string
	URL     string
	Status  int
	Message string
	// RetryAt is set when the forge refused the call for its rate limit:
	// the time it says calls are allowed again.
	RetryAt time.Time
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	s := fmt.Sprintf("%s: %s: %s %s: status %d: %s", e.Forge, e.Op, e.Method, e.URL, e.Status, msg)
	if !e.RetryAt.IsZero() {
		s += "; rate limited: retry after " + e.RetryAt.UTC().Format(time.RFC3339)
	}
	return s
}

// RetryAt says when a call refused for the forge's rate limit may be made
// again; ok is false for every other error.
func RetryAt(err error) (at time.Time, ok bool) {
	var apiErr *APIError
	if errors.As(err, &apiErr) && !apiErr.RetryAt.IsZero() {
		return apiErr.RetryAt, true
	}
	return time.Time{}, false
}

// maxPages bounds pagination so a misbehaving server cannot loop us forever.
const maxPages = 100

// pageSize is what every list asks for: the most GitHub and GitLab allow.
// Gitea caps it at its MAX_RESPONSE_ITEMS (50 by default) and says so in
// its Link header, which the SDK follows.
const pageSize = 100

// errorMapper turns what an SDK returned into an error that names the call,
// keeps the forge's message and status, and holds no secret.
type errorMapper struct {
	forge  string
	secret string
}

// transport wraps an error that came with no HTTP answer (a refused
// connection, a timeout, a bad key), naming the call.
func (e errorMapper) transport(op string, err error) error {
	return fmt.Errorf("%s: %s: %w", e.forge, op, e.redactErr(err))
}

// status builds the *APIError of an answer with an error status.
func (e errorMapper) status(op string, resp *http.Response, message string, now time.Time) *APIError {
	apiErr := &APIError{Forge: e.forge, Op: op, Status: resp.StatusCode, Message: e.redact(message)}
	if req := resp.Request; req != nil {
		apiErr.Method = req.Method
		apiErr.URL = redactURL(req.URL.String())
	}
	apiErr.RetryAt = retryAt(resp, now)
	return apiErr
}

// retryAt reads when a rate-limited answer allows calls again: Retry-After
// (seconds or a date; GitHub's secondary limits, GitLab), else the reset
// time of an exhausted primary limit (GitHub's X-RateLimit-Reset, GitLab's
// RateLimit-Reset, both Unix seconds). Zero for an answer that is no rate
// limit.
func retryAt(resp *http.Response, now time.Time) time.Time {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusForbidden {
		return time.Time{}
	}
	h := resp.Header
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			return now.Add(time.Duration(secs) * time.Second)
		}
		if t, err := http.ParseTime(v); err == nil {
			return t
		}
	}
	remaining := h.Get("X-RateLimit-Remaining")
	reset := h.Get("X-RateLimit-Reset")
	if remaining == "" {
		remaining, reset = h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset")
	}
	if remaining == "0" || resp.StatusCode == http.StatusTooManyRequests {
		if secs, err := strconv.ParseInt(reset, 10, 64); err == nil && secs > 0 {
			return time.Unix(secs, 0)
		}
		if resp.StatusCode == http.StatusTooManyRequests || remaining == "0" {
			// Limited without saying until when: GitHub's advice is a minute.
			return now.Add(time.Minute)
		}
	}
	return time.Time{}
}

func (e errorMapper) redact(s string) string {
	if e.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, e.secret, "REDACTED")
}

func (e errorMapper) redactErr(err error) error {
	if e.secret == "" || !strings.Contains(err.Error(), e.secret) {
		return err
	}
	return errors.New(e.redact(err.Error()))
}

// errorMessage pulls the human part out of an error body: every forge says
// {"message": ...}, GitLab sometimes with an object or list, OAuth-style
// errors say {"error": ..., "error_description": ...}.
func errorMessage(data []byte) string {
	var body struct {
		Message     json.RawMessage   `json:"message"`
		Error       string            `json:"error"`
		Description string            `json:"error_description"`
		Errors      []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		s := strings.TrimSpace(string(data))
		if len(s) > 512 {
			s = s[:512] + "..."
		}
		return s
	}
	var parts []string
	if len(body.Message) > 0 {
		var s string
		if json.Unmarshal(body.Message, &s) == nil {
			parts = append(parts, s)
		} else {
			parts = append(parts, string(body.Message))
		}
	}
	if body.Error != "" {
		parts = append(parts, body.Error)
	}
	if body.Description != "" {
		parts = append(parts, body.Description)
	}
	for _, e := range body.Errors {
		var s string
		if json.Unmarshal(e, &s) == nil {
			parts = append(parts, s)
			continue
		}
		var detail struct {
			Message string `json:"message"`
			Code    string `json:"code"`
			Field   string `json:"field"`
		}
		if json.Unmarshal(e, &detail) != nil {
			continue
		}
		if detail.Message != "" {
			parts = append(parts, detail.Message)
		} else if detail.Code != "" {
			parts = append(parts, strings.TrimSpace(detail.Field+" "+detail.Code))
		}
	}
	return strings.Join(parts, "; ")
}

// redactURL drops any password from a URL before it goes into an error.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}
