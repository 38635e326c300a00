package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s: %s: %s %s: status %d: %s", e.Forge, e.Op, e.Method, e.URL, e.Status, msg)
}

// maxPages bounds pagination so a misbehaving server cannot loop us forever.
const maxPages = 100

// client is the REST plumbing the providers share: JSON in and out, auth
// headers, error typing and token redaction.
type client struct {
	forge   string
	base    *url.URL
	http    *http.Client
	token   string
	headers map[string]string
}

func newClient(forge string, base *url.URL, hc *http.Client, token string, headers map[string]string) *client {
	return &client{forge: forge, base: base, http: hc, token: token, headers: headers}
}

// do sends in (if not nil) as JSON to path (already escaped, relative to the
// API root, may carry a query) and decodes the answer into out (if not nil).
func (c *client) do(ctx context.Context, op, method, path string, in, out any) error {
	u := c.base.String() + path
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: %s: encode request: %w", c.forge, op, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.forge, op, c.redactErr(err))
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s: %s %s: %w", c.forge, op, method, redactURL(u), c.redactErr(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s: %s: %s %s: read response: %w", c.forge, op, method, redactURL(u), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &APIError{
			Forge:   c.forge,
			Op:      op,
			Method:  method,
			URL:     redactURL(u),
			Status:  resp.StatusCode,
			Message: c.redact(errorMessage(data)),
		}
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s: %s: %s %s: decode response: %w", c.forge, op, method, redactURL(u), err)
		}
	}
	return nil
}

// pages calls fetch with page = 1, 2, ... until a page holds fewer than
// perPage items; fetch returns how many items its page held.
func pages(perPage int, fetch func(page int) (int, error)) error {
	for page := 1; page <= maxPages; page++ {
		n, err := fetch(page)
		if err != nil {
			return err
		}
		if n < perPage {
			return nil
		}
	}
	return nil
}

func (c *client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "REDACTED")
}

func (c *client) redactErr(err error) error {
	if c.token == "" || !strings.Contains(err.Error(), c.token) {
		return err
	}
	return fmt.Errorf("%s", c.redact(err.Error()))
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

func repoPath(r Repo) string {
	return "/repos/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name)
}
