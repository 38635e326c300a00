package source

import (
	"fmt"
	"regexp"
	"strings"
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

// urlsByRegexp is what RedactText finds, written as the regular expression
// it stands for: a scheme, "://", and everything up to the first character
// that cannot be part of a URL as written in a message.
var urlsByRegexp = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")

// FuzzRedactText: RedactText redacts exactly the URLs the regular
// expression finds, leftmost first, as ReplaceAllStringFunc would.
func FuzzRedactText(f *testing.F) {
	for _, s := range []string{
		`fetch http://alice:pw@h:3000/acme.git: Get "http://alice:***@h:3000/x": EOF`,
		"a://b://c@d", "://x", "1http://u:p@h/", "-+.http://u:p@h/ ok", "x:// y", "ht tp://u:p@h",
		"http://u:p@h/\thttps://t@x/\n", "https://t@x/é\xffy z", "<http://u:p@h>", "`ssh://a:b@h`",
		"http://", "http://@", "s3+https://k:s@bucket/o?sig=1", "9+://u:p@h", "abc://def://u:p@h/",
	} {
		f.Add(s)
	}
	for _, stop := range "\t\n\f\r \"'<>`\v" { // a URL ends at each but \v
		f.Add("http://h" + string(stop) + "u:p@x/")
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := urlsByRegexp.ReplaceAllStringFunc(s, RedactURL)
		if got := RedactText(s); got != want {
			t.Fatalf("RedactText(%q)\n got %q\nwant %q", s, got, want)
		}
	})
}

// BenchmarkRedactText redacts a validate table of 10,000 stages whose
// repository URL carries credentials: 20,000 URLs in 4 MB.
func BenchmarkRedactText(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "Stage  apps/app%04d-s1  vectorflow/app%04d.yaml  overlay apps/app%04d/overlays/s1 in http://user:secret@127.0.0.1:43123/apps.git @ vector (none); source Stage apps/app%04d-s1 in http://user:secret@127.0.0.1:43123/apps.git\n", i, i, i, i)
	}
	s := sb.String()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		RedactText(s)
	}
}
