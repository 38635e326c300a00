package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

const fixtureDir = "testdata/writer/repo"

// serverRepo is a repository on a real git server, guarded by an update hook
// that refuses any non-fast-forward update of a branch vectorflow does not
// own, and keeping a reflog of every ref update (written under the ref lock,
// so in order), so a test can prove nothing was ever force-pushed.
type serverRepo struct {
	g    *testutil.GitServer
	name string
	bare string
}

func newServerRepo(t testing.TB, fixture string) *serverRepo {
	t.Helper()
	r := newPlainServerRepo(t, fixture)
	testutil.Git(t, r.bare, nil, "config", "core.logAllRefUpdates", "always")
	writeHook(t, r.bare, "update", `ref=$1 old=$2 new=$3
z=0000000000000000000000000000000000000000
case "$ref" in refs/heads/vectorflow/promote/*) exit 0;; esac
if [ "$old" != "$z" ] && [ "$new" != "$z" ] && ! git merge-base --is-ancestor "$old" "$new"; then
	echo "refusing non-fast-forward update of $ref" >&2
	exit 1
fi
`)
	return r
}

// newPlainServerRepo is a repository without hooks, for benchmarks: hooks
// cost the server the same for every client and would only blur the ratio.
func newPlainServerRepo(t testing.TB, fixture string) *serverRepo {
	t.Helper()
	g := testutil.StartGitServer(t)
	r := &serverRepo{g: g, name: "config.git"}
	g.InitRepo(t, fixture, "main", r.name)
	r.bare = g.BarePath(r.name)
	return r
}

func writeHook(t testing.TB, bare, name, body string) {
	t.Helper()
	p := filepath.Join(bare, "hooks", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatalf("write %s hook: %v", name, err)
	}
}

// proxiedRemote is r over HTTP through a proxy counting the requests.
func (r *serverRepo) proxiedRemote(t testing.TB) (Remote, *testutil.CountingProxy) {
	t.Helper()
	proxy := testutil.StartCountingProxy(t, r.g)
	remote := r.httpRemote()
	remote.URL = proxy.URL(r.name)
	return remote, proxy
}

func (r *serverRepo) httpRemote() Remote {
	return Remote{URL: r.g.HTTPURL(r.name), Auth: &http.BasicAuth{Username: r.g.Username, Password: r.g.Password}}
}

func (r *serverRepo) sshRemote(t testing.TB) Remote {
	t.Helper()
	key := testutil.NewSSHKey(t, []byte("client-pass"))
	auth, err := gitssh.NewPublicKeys("git", key.PrivatePEM, "client-pass")
	if err != nil {
		t.Fatalf("SSH client key: %v", err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, r.g.KnownHosts, 0o600); err != nil {
		t.Fatal(err)
	}
	if auth.HostKeyCallback, err = knownhosts.New(kh); err != nil {
		t.Fatalf("known_hosts: %v", err)
	}
	return Remote{URL: r.g.SSHURL(r.name), Auth: auth}
}

// git runs the git binary in the server's bare repository.
func (r *serverRepo) git(t testing.TB, args ...string) string {
	t.Helper()
	return strings.TrimSpace(testutil.Git(t, r.bare, nil, args...))
}

func (r *serverRepo) tip(t testing.TB, branch string) string {
	t.Helper()
	out, err := testutil.GitE(r.bare, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func (r *serverRepo) show(t testing.TB, rev, path string) string {
	t.Helper()
	return testutil.Git(t, r.bare, nil, "show", rev+":"+path)
}

// promotions counts, per promotion, the commits on branch naming it in a
// Vectorflow-Promotion trailer, as git itself parses them.
func (r *serverRepo) promotions(t testing.TB, branch string) map[string]int {
	t.Helper()
	out := r.git(t, "log", "--format=%(trailers:key=Vectorflow-Promotion,valueonly)", branch)
	counts := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			counts[l]++
		}
	}
	return counts
}

// refUpdates reads the server's reflog of branch: one [old, new] per update.
func (r *serverRepo) refUpdates(t testing.TB, branch string) [][2]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.bare, "logs", "refs", "heads", filepath.FromSlash(branch)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var updates [][2]string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			updates = append(updates, [2]string{f[0], f[1]})
		}
	}
	return updates
}

// checkNoForcePush proves from the server's reflog that each update of
// branch started where the previous one ended and that every tip ever
// observed is an ancestor of the final one.
func (r *serverRepo) checkNoForcePush(t testing.TB, branch string) {
	t.Helper()
	final := r.tip(t, branch)
	prev := ""
	for _, f := range r.refUpdates(t, branch) {
		if prev != "" && f[0] != prev {
			t.Errorf("update of %s started at %s, but the previous update left it at %s", branch, f[0], prev)
		}
		prev = f[1]
		if _, err := testutil.GitE(r.bare, nil, "merge-base", "--is-ancestor", f[1], final); err != nil {
			t.Errorf("tip %s of %s is not an ancestor of the final tip %s: history was rewritten", f[1], branch, final)
		}
	}
}

// lineEdit sets key=value in a key=value file, the smallest semantic edit:
// re-applied on a new tip it keeps every other line. A missing file is an
// error, as a missing overlay is for a promotion.
func lineEdit(path, key, value string) FileEdit {
	return FileEdit{Path: path, Edit: func(old []byte, exists bool) ([]byte, bool, error) {
		if !exists {
			return nil, false, fmt.Errorf("%s does not exist", path)
		}
		var out bytes.Buffer
		found := false
		for _, l := range strings.SplitAfter(string(old), "\n") {
			if strings.HasPrefix(l, key+"=") {
				l, found = key+"="+value+"\n", true
			}
			out.WriteString(l)
		}
		if !found {
			if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
				out.WriteString("\n")
			}
			out.WriteString(key + "=" + value + "\n")
		}
		return out.Bytes(), false, nil
	}}
}

// promotionChange is a change with a promotion's trailers.
func promotionChange(id string, seq int64, edits ...FileEdit) Change {
	return configChange("", id, seq, edits...)
}

// configChange is promotionChange with a Vectorflow-Config trailer: a
// promotion of config, whose sequences are ordered apart from others'.
func configChange(config, id string, seq int64, edits ...FileEdit) Change {
	return Change{
		ID: id,
		Message: func(diffs []FileDiff) string {
			var paths []string
			for _, d := range diffs {
				paths = append(paths, d.Path)
			}
			return fmt.Sprintf("promote %s\n\nedits %s\n\n%s", id, strings.Join(paths, ", "),
				FormatTrailers(Trailers{Promotion: id, Config: config, Sequence: seq, Vector: "shop:" + id, Source: "Stage/dev", Target: "Stage/prod"}))
		},
		Files: edits,
	}
}

func newTestWriter(t testing.TB, o WriterOptions) *Writer {
	t.Helper()
	if o.Identity == (Identity{}) {
		o.Identity = Identity{Name: "vectorflow", Email: "vectorflow@example.com"}
	}
	if o.Backoff == (wait.Backoff{}) {
		o.Backoff = wait.Backoff{Duration: time.Millisecond}
	}
	w, err := NewWriter(o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
