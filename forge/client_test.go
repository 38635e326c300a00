package forge

import "testing"

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"gitea", `{"message":"Does not have enough approvals","url":"http://127.0.0.1:3000/api/swagger"}`, "Does not have enough approvals"},
		{"github validation", `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for octocat:new-topic."}]}`,
			"Validation Failed; A pull request already exists for octocat:new-topic."},
		{"github error code only", `{"message":"Validation Failed","errors":[{"resource":"Issue","field":"title","code":"missing_field"}]}`,
			"Validation Failed; title missing_field"},
		{"gitlab list", `{"message":["Another open merge request already exists for this source branch: !133"]}`,
			`["Another open merge request already exists for this source branch: !133"]`},
		{"gitlab object", `{"message":{"base":["Branch cannot be merged"]}}`, `{"base":["Branch cannot be merged"]}`},
		{"oauth", `{"error":"invalid_token","error_description":"Token was revoked."}`, "invalid_token; Token was revoked."},
		{"plain text", "  502 Bad Gateway\n", "502 Bad Gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("errorMessage(%s) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}

func TestRedactKeepsTokenOutOfErrors(t *testing.T) {
	c := errorMapper{secret: "s3cr3t-token"}
	if got := c.redact(`token "s3cr3t-token" is invalid`); got != `token "REDACTED" is invalid` {
		t.Errorf("redact = %q", got)
	}
}
