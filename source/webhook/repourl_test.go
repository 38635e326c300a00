package webhook

import "testing"

func TestNormalizeRepoURL(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"https with .git", "https://github.com/org/repo.git", "github.com/org/repo"},
		{"https plain", "https://github.com/org/repo", "github.com/org/repo"},
		{"trailing slash", "https://github.com/org/repo/", "github.com/org/repo"},
		{".git and trailing slash", "https://github.com/org/repo.git/", "github.com/org/repo"},
		{"scp-like", "git@github.com:org/repo.git", "github.com/org/repo"},
		{"scp-like without user", "github.com:org/repo", "github.com/org/repo"},
		{"scp-like absolute path", "git@host.example:/srv/git/repo.git", "host.example/srv/git/repo"},
		{"ssh url", "ssh://git@github.com/org/repo.git", "github.com/org/repo"},
		{"ssh default port dropped", "ssh://git@github.com:22/org/repo.git", "github.com/org/repo"},
		{"ssh other port kept", "ssh://gitea@localhost:2222/gitea/webhooks.git", "localhost:2222/gitea/webhooks"},
		{"https default port dropped", "https://github.com:443/org/repo", "github.com/org/repo"},
		{"http default port dropped", "http://example.com:80/mike/diaspora.git", "example.com/mike/diaspora"},
		{"https other port kept", "https://git.example.com:8443/org/repo.git", "git.example.com:8443/org/repo"},
		{"http port 443 is not default", "http://git.example.com:443/org/repo", "git.example.com:443/org/repo"},
		{"git protocol", "git://github.com/Codertocat/Hello-World.git", "github.com/Codertocat/Hello-World"},
		{"git protocol default port", "git://github.com:9418/org/repo", "github.com/org/repo"},
		{"userinfo dropped", "https://user:token@github.com/org/repo.git", "github.com/org/repo"},
		{"host case folded, path case kept", "HTTPS://GitHub.COM/Org/Repo.git", "github.com/Org/Repo"},
		{"scp-like host case folded", "git@GitHub.com:Org/Repo.git", "github.com/Org/Repo"},
		{"query and fragment dropped", "https://github.com/org/repo.git?ref=main#readme", "github.com/org/repo"},
		{"double slashes collapsed", "https://github.com//org//repo", "github.com/org/repo"},
		{"surrounding space", "  https://github.com/org/repo \n", "github.com/org/repo"},
		{"nested group path", "https://gitlab.com/group/sub/repo.git", "gitlab.com/group/sub/repo"},
		{"already normalized", "github.com/org/repo", "github.com/org/repo"},
		{"already normalized with port", "git.example.com:8443/org/repo", "git.example.com:8443/org/repo"},
		{"ipv6 with port", "ssh://git@[::1]:2222/org/repo.git", "[::1]:2222/org/repo"},
		{"ipv6 default port", "https://[2001:db8::1]:443/org/repo", "[2001:db8::1]/org/repo"},
		{"ipv6 scp-like", "git@[::1]:org/repo.git", "[::1]/org/repo"},
		{"host only", "https://github.com/", "github.com"},
		{"empty", "", ""},
		{"blank", "   ", ""},
		{"file url kept as given", "file:///srv/git/repo.git", "file:///srv/git/repo"},
		{"unparseable url", "https://exa mple.com/%zz/repo.git", "https://exa mple.com/%zz/repo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizeRepoURL(tc.in)
			if got != tc.want {
				t.Errorf("NormalizeRepoURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
			// A normalized URL is stored and compared again later.
			if again := NormalizeRepoURL(got); again != got {
				t.Errorf("NormalizeRepoURL is not idempotent: %q -> %q -> %q", tc.in, got, again)
			}
		})
	}
}

// Every spelling a forge puts in one payload must collapse to one repository.
func TestNormalizeRepoURLSpellingsOfOneRepository(t *testing.T) {
	spellings := []string{
		"https://github.com/Codertocat/Hello-World",
		"https://github.com/Codertocat/Hello-World.git",
		"git@github.com:Codertocat/Hello-World.git",
		"ssh://git@github.com/Codertocat/Hello-World.git",
		"ssh://git@github.com:22/Codertocat/Hello-World",
		"git://github.com/Codertocat/Hello-World.git",
		"https://token@GITHUB.com:443/Codertocat/Hello-World/",
	}
	want := NormalizeRepoURL(spellings[0])
	for _, s := range spellings[1:] {
		if got := NormalizeRepoURL(s); got != want {
			t.Errorf("NormalizeRepoURL(%q) = %q, want %q like %q", s, got, want, spellings[0])
		}
	}
}

func FuzzNormalizeRepoURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/org/repo.git", "git@github.com:org/repo.git", "ssh://git@[::1]:2222/org/repo",
		"host:8443/a", "[::1]:x", "@:/", "a://", "git@[::1", "http://[::1]:80", "//x/.git/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// Must not panic. Idempotence is asserted on the URL forms in
		// TestNormalizeRepoURL; garbage ("a://") need only come back.
		_ = NormalizeRepoURL(raw)
	})
}
