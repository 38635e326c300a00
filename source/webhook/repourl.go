package webhook

import (
	"net"
	"net/url"
	"path"
	"strings"
)

// NormalizeRepoURL makes the many spellings of one repository compare equal, so
// a push event naming "git@github.com:org/app.git" wakes the landscape that was
// configured with "https://github.com/org/app". The result is scheme-less
// "host[:port]/path": the host lowercased, userinfo dropped, the ".git" suffix
// and trailing slashes dropped, and the scheme's default port (80 http, 443
// https, 22 ssh, 9418 git) dropped while any other port is kept. Paths keep
// their case: some servers treat them case-sensitively.
//
// scp-like addresses (git@host:org/repo) follow git's rule: a colon before the
// first slash. One exception keeps the function idempotent on its own output:
// "host:8443/org/repo" (digits up to the first slash) is read as host:port.
//
// Input that is not a URL at all comes back trimmed, without a trailing slash
// or ".git", so it can still be compared; it never panics.
func NormalizeRepoURL(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	var scheme, host, port, repoPath string
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return trimRepoPath(s)
		}
		scheme, host, port, repoPath = strings.ToLower(u.Scheme), u.Hostname(), u.Port(), u.Path
	default:
		var ok bool
		host, port, repoPath, ok = splitSCPLike(s)
		if !ok {
			return trimRepoPath(s)
		}
		scheme = "ssh"
		if port != "" {
			// "host:port/path" has no scheme, so no port is a default one.
			scheme = ""
		}
	}
	host = strings.ToLower(host)
	if host == "" {
		return trimRepoPath(s)
	}
	if port == defaultPorts[scheme] {
		port = ""
	}
	hostport := host
	switch {
	case port != "":
		hostport = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		hostport = "[" + host + "]"
	}
	if p := trimRepoPath(repoPath); p != "" {
		return hostport + "/" + p
	}
	return hostport
}

var defaultPorts = map[string]string{
	"http":    "80",
	"https":   "443",
	"ssh":     "22",
	"git+ssh": "22",
	"ssh+git": "22",
	"git":     "9418",
}

// splitSCPLike reads "[user@]host:path", "[user@][v6addr]:path", the
// scheme-less "host[:port]/path" and a bare "host".
func splitSCPLike(s string) (host, port, repoPath string, ok bool) {
	slash := strings.IndexByte(s, '/')
	colon := strings.IndexByte(s, ':')
	if strings.HasPrefix(stripUserinfo(s), "[") {
		colon = strings.Index(s, "]:")
		if colon >= 0 {
			colon++
		}
	}
	if colon < 0 || (slash >= 0 && slash < colon) {
		// No colon before the first slash: "host/path" or "host".
		hostPart, rest, _ := strings.Cut(s, "/")
		return strings.Trim(stripUserinfo(hostPart), "[]"), "", rest, true
	}
	hostPart, rest := stripUserinfo(s[:colon]), s[colon+1:]
	if digits, tail, found := strings.Cut(rest, "/"); isPort(digits) && (found || tail == "") {
		return strings.Trim(hostPart, "[]"), digits, tail, true
	}
	return strings.Trim(hostPart, "[]"), "", rest, true
}

func stripUserinfo(hostPart string) string {
	if i := strings.LastIndexByte(hostPart, '@'); i >= 0 {
		return hostPart[i+1:]
	}
	return hostPart
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// trimRepoPath drops what does not name the repository: surrounding slashes,
// doubled slashes and the ".git" suffix.
func trimRepoPath(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return ""
	}
	if !strings.Contains(p, "://") {
		p = strings.TrimPrefix(path.Clean("/"+p), "/")
	}
	return strings.TrimRight(strings.TrimSuffix(p, ".git"), "/")
}
