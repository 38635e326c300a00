package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestPullRequestWaitsForTheForgeToIndexItsBranch: a forge that does not
// know a promotion branch just pushed (Gitea indexes pushes asynchronously)
// never holds a pass. The pass tries once, says which pull request waits
// and asks for a pass soon (250ms, then 500ms, ...); 20s after the first
// such answer it is an error and the next pass starts over; once the forge
// knows the branch, the next pass opens the pull request.
func TestPullRequestWaitsForTheForgeToIndexItsBranch(t *testing.T) {
	fake := &unindexingForge{}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	t.Setenv(forgeTokenEnv, "token")

	srv := testutil.StartGitServer(t)
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	dir := testutil.CopyDir(t, filepath.Join("..", "..", "examples", "quickstart"))
	writeFile(t, filepath.Join(dir, "vectorflow"), "promotions.yaml", []byte(pullRequestPromotions(api.URL+"/api/v1", "forge")))
	writeFile(t, filepath.Join(dir, "vectorflow"), "landscapes.yaml", []byte(landscapesWithSigner(key.PublicArmored)))
	srv.InitRepo(t, dir, "main", "acme/shop.git") // a forge repository has an owner
	signer, err := gitwriter.LoadSigner(writeFile(t, t.TempDir(), "controller.asc", key.PrivateArmored), "", "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ctl, err := controller.New(controller.Options{URL: srv.HTTPURL("acme/shop.git"), Branch: "main", Writer: w,
		Auth:  func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} },
		Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pass := func() controller.PassResult {
		t.Helper()
		start := time.Now()
		res, err := ctl.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("a pass took %v: it waited for the forge", took.Round(time.Millisecond))
		}
		return res
	}
	type waiting struct {
		Waiting      []string
		RequeueAfter time.Duration
		PullRequests []string
	}
	got := func(res controller.PassResult) waiting {
		return waiting{res.PullRequestsWaiting, res.RequeueAfter, res.PullRequests}
	}

	// Both promotions to test are created, and wait, while the forge
	// fails in another way.
	fake.set(forgeBroken)
	for i := 0; ; i++ {
		if res := pass(); !res.Changed() {
			break
		} else if i == 10 {
			t.Fatalf("no stable state after %d passes", i)
		}
	}
	both := []string{"dev-to-test-1", "dev-to-test-2"}
	soon := func(d time.Duration) waiting { return waiting{Waiting: both, RequeueAfter: d} }
	fake.set(forgeUnindexed)
	if diff := cmp.Diff(soon(250*time.Millisecond), got(pass())); diff != "" {
		t.Fatalf("the pass that pushed the branches (-want +got):\n%s", diff)
	}
	now = now.Add(time.Second)
	if diff := cmp.Diff(soon(500*time.Millisecond), got(pass())); diff != "" {
		t.Errorf("a second pass while the forge is behind (-want +got):\n%s", diff)
	}
	now = now.Add(20 * time.Second)
	if res := pass(); len(res.PullRequestsWaiting) != 0 || len(res.PullRequests) != 0 {
		t.Errorf("21s after the push: %+v, want errors and nothing waiting", got(res))
	}
	if diff := cmp.Diff(soon(250*time.Millisecond), got(pass())); diff != "" {
		t.Errorf("the pass after giving up starts over (-want +got):\n%s", diff)
	}
	fake.set(forgeIndexed)
	want := waiting{PullRequests: []string{"dev-to-test-1: pull request #1", "dev-to-test-2: pull request #2"}}
	if diff := cmp.Diff(want, got(pass())); diff != "" {
		t.Errorf("the pass after the forge indexed the branches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[forgeMode]int{forgeUnindexed: 8, forgeIndexed: 2}, fake.opens(), cmpopts.IgnoreMapEntries(func(m forgeMode, _ int) bool { return m == forgeBroken })); diff != "" {
		t.Errorf("pull requests the forge was asked to open, by its mode (-want +got):\n%s", diff)
	}
}

type forgeMode int

const (
	forgeBroken forgeMode = iota
	forgeUnindexed
	forgeIndexed
)

// unindexingForge is a Gitea API whose answer to a new pull request
// depends on its mode: an internal error, "the branch does not exist" (it
// has not indexed the branch yet), or the pull request opened.
type unindexingForge struct {
	mu    sync.Mutex
	mode  forgeMode
	posts map[forgeMode]int
	pulls int
}

func (f *unindexingForge) set(m forgeMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = m
}

func (f *unindexingForge) opens() map[forgeMode]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.posts)
}

func (f *unindexingForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/pulls"):
		w.Write([]byte(`[]`))
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/labels"):
		w.Write([]byte(`[{"id":1,"name":"vectorflow"},{"id":2,"name":"promotion"}]`))
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/pulls"):
		var req struct{ Head string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if f.posts == nil {
			f.posts = map[forgeMode]int{}
		}
		f.posts[f.mode]++
		switch f.mode {
		case forgeBroken:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"message":"database is locked"}`))
		case forgeUnindexed:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"branch ` + req.Head + ` does not exist"}`))
		case forgeIndexed:
			f.pulls++
			n := strconv.Itoa(f.pulls)
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"number":` + n + `,"state":"open","html_url":"http://forge.example/acme/shop/pulls/` + n + `","user":{"login":"vectorflow"},` +
				`"head":{"ref":"` + req.Head + `","sha":"0000000000000000000000000000000000000001","repo_id":1},"base":{"repo_id":1}}`))
		}
	default:
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"message":"the test forge does not serve ` + r.Method + ` ` + path + `"}`))
	}
}
