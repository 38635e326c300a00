package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://user:password@git.example.com/acme.git", "http://xxxxx@git.example.com/acme.git"},
		{"https://ghp_TOKEN@github.com/acme/acme.git", "https://xxxxx@github.com/acme/acme.git"},
		{"https://x-access-token:abc@github.com:8443", "https://xxxxx@github.com:8443"},
		{"https://u:p%40ss@h/a?b", "https://xxxxx@h/a?b"},
		// An @ in the path is not user information.
		{"https://git.example.com/acme/@scope/x.git", "https://git.example.com/acme/@scope/x.git"},
		{"https://h/repo.git?token=abc&ref=main", "https://h/repo.git?token=xxxxx&ref=main"},
		{"https://h/repo.git?X-Amz-Signature=abc&X-Amz-Credential=def&x=1#frag", "https://h/repo.git?X-Amz-Signature=xxxxx&X-Amz-Credential=xxxxx&x=1#frag"},
		{"https://h/r?private_token=abc", "https://h/r?private_token=xxxxx"},
		{"ssh://git@github.com/acme/acme.git", "ssh://git@github.com/acme/acme.git"},
		{"ssh://git:hunter2@github.com/acme/acme.git", "ssh://xxxxx@github.com/acme/acme.git"},
		{"git@github.com:acme/acme.git", "git@github.com:acme/acme.git"},
		{"file:///srv/git/acme.git", "file:///srv/git/acme.git"},
		{"./local/dir", "./local/dir"},
		{"", ""},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	in := `fetch branch main of http://alice:pw@h:3000/acme.git: Get "http://alice:***@h:3000/acme.git/info/refs?service=git-upload-pack": EOF; also https://t@x/y, and git@h:p`
	want := `fetch branch main of http://xxxxx@h:3000/acme.git: Get "http://xxxxx@h:3000/acme.git/info/refs?service=git-upload-pack": EOF; also https://xxxxx@x/y, and git@h:p`
	if diff := cmp.Diff(want, RedactText(in)); diff != "" {
		t.Errorf("RedactText (-want +got):\n%s", diff)
	}
}

func TestSplitURLCredentials(t *testing.T) {
	type split struct {
		Clean, Username, Password string
		OK                        bool
	}
	for _, tc := range []struct {
		in   string
		want split
	}{
		{"http://user:pass@h:80/a.git", split{"http://h:80/a.git", "user", "pass", true}},
		{"https://u%40corp:p%3Aw@h/a.git", split{"https://h/a.git", "u@corp", "p:w", true}},
		{"https://ghp_TOKEN@github.com/a.git", split{"https://github.com/a.git", "ghp_TOKEN", "", true}},
		{"https://github.com/a@b.git", split{"https://github.com/a@b.git", "", "", false}},
		{"ssh://deploy@h/a.git", split{"ssh://deploy@h/a.git", "", "", false}},
		{"git@h:a.git", split{"git@h:a.git", "", "", false}},
		{"/srv/a", split{"/srv/a", "", "", false}},
	} {
		var got split
		got.Clean, got.Username, got.Password, got.OK = SplitURLCredentials(tc.in)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("SplitURLCredentials(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
