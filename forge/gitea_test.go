package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestGiteaPromotionPullRequest walks a promotion's pull request through a
// real Gitea whose main branch requires one approval: open (idempotently),
// refused merge, self-approval, reviewer approval, merge, and closing a
// superseded one.
func TestGiteaPromotionPullRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	g := testutil.StartGitea(t)
	alice, alicePassword, aliceToken := g.CreateUser(t, "alice")
	bob, _, bobToken := g.CreateUser(t, "bob")
	cloneURL := g.CreateRepo(t, alice, "config", aliceToken)
	g.AddCollaborator(t, alice, "config", bob, aliceToken)

	repo, err := forge.RepoFromURL(cloneURL)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(forge.Repo{Owner: alice, Name: "config"}, repo); diff != "" {
		t.Fatalf("RepoFromURL(%s) (-want +got):\n%s", cloneURL, diff)
	}

	push := pushBranches(t, g, testutil.CredentialURL(t, cloneURL, alice, alicePassword), aliceToken, repo)
	g.ProtectBranch(t, alice, "config", "main", 1, aliceToken)

	asAlice, err := forge.New(forge.KindGitea, g.APIURL(), aliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := forge.NewPullRequest{
		Head:   "vectorflow/promote/x-1",
		Base:   "main",
		Title:  "Promote x-1 to prod",
		Body:   "Vectorflow-Promotion: x-1",
		Labels: []string{"vectorflow", "promotion"},
	}
	pr, err := asAlice.OpenPullRequest(ctx, repo, want)
	if err != nil {
		t.Fatalf("open pull request: %v", err)
	}
	again, err := asAlice.OpenPullRequest(ctx, repo, want)
	if err != nil {
		t.Fatalf("open pull request again: %v", err)
	}
	if again.Number != pr.Number {
		t.Fatalf("second OpenPullRequest opened #%d, want the open #%d", again.Number, pr.Number)
	}
	if diff := cmp.Diff([]string{"promotion", "vectorflow"}, issueLabels(t, g, aliceToken, pr.Number)); diff != "" {
		t.Errorf("labels of #%d (-want +got):\n%s", pr.Number, diff)
	}
	if pr.State != forge.StateOpen || pr.Author != alice || pr.HeadSHA != push.promote1 || pr.URL == "" {
		t.Errorf("opened %+v, want open, by %s, head %s, with a URL", pr, alice, push.promote1)
	}

	pr = waitMergeable(ctx, t, asAlice, repo, pr.Number)

	// Without an approval Gitea refuses, even to the repository owner.
	err = asAlice.Merge(ctx, repo, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA})
	var apiErr *forge.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("merge without approval: got %v, want an *APIError", err)
	}
	if apiErr.Forge != forge.KindGitea || apiErr.Method != http.MethodPost || apiErr.Status < 400 || !strings.Contains(apiErr.Message, "approvals") {
		t.Errorf("merge refusal %#v: want gitea, POST, an error status and Gitea's message", apiErr)
	}
	if strings.Contains(err.Error(), aliceToken) {
		t.Errorf("error leaks the token: %v", err)
	}
	t.Logf("merge without approval: %v", err)

	// The author's own approval is refused by Gitea or, if recorded, does not count.
	status, body, err := g.API(http.MethodPost, "/repos/alice/config/pulls/"+strconv.Itoa(pr.Number)+"/reviews",
		testutil.TokenAuth(aliceToken), map[string]any{"event": "APPROVED", "body": "mine", "commit_id": pr.HeadSHA})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("self-approval: %d %s", status, body)
	reviews, err := asAlice.Reviews(ctx, repo, pr.Number)
	if err != nil {
		t.Fatalf("reviews: %v", err)
	}
	for _, r := range reviews {
		if forge.CountingApproval(r, pr.HeadSHA, pr.Author) {
			t.Errorf("review %+v counts before bob approved", r)
		}
	}

	approve(t, g, bobToken, pr.Number, pr.HeadSHA)
	reviews, err = asAlice.Reviews(ctx, repo, pr.Number)
	if err != nil {
		t.Fatalf("reviews: %v", err)
	}
	i := slices.IndexFunc(reviews, func(r forge.Review) bool { return r.User == bob })
	if i < 0 {
		t.Fatalf("bob's review is not listed: %+v", reviews)
	}
	got := reviews[i]
	if got.State != forge.ReviewApproved || !got.Official || got.Stale || got.Dismissed || got.CommitID != pr.HeadSHA || got.ID == 0 || got.SubmittedAt.IsZero() {
		t.Errorf("bob's review %+v: want an official, fresh approval on %s with id and time", got, pr.HeadSHA)
	}
	if !forge.CountingApproval(got, pr.HeadSHA, pr.Author) {
		t.Errorf("bob's approval %+v does not count", got)
	}

	if err := asAlice.Merge(ctx, repo, pr.Number, forge.MergeOptions{
		Method: forge.MergeMethodMerge, Title: "Promote x-1 to prod", Message: "Approved-by: bob", HeadSHA: pr.HeadSHA,
	}); err != nil {
		t.Fatalf("merge after approval: %v", err)
	}
	merged, err := asAlice.GetPullRequest(ctx, repo, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, push.dir, nil, "fetch", "-q", push.url, "main")
	mainTip := strings.TrimSpace(testutil.Git(t, push.dir, nil, "rev-parse", "FETCH_HEAD"))
	if merged.State != forge.StateMerged || !merged.Merged || merged.MergedBy != alice || merged.MergeCommit != mainTip || merged.HeadSHA != push.promote1 {
		t.Errorf("after merge %+v: want merged by %s into main at %s", merged, alice, mainTip)
	}
	if subject := testutil.Git(t, push.dir, nil, "log", "-1", "--format=%s", "FETCH_HEAD"); !strings.Contains(subject, "Promote x-1 to prod") {
		t.Errorf("merge commit subject %q, want the title passed to Merge", subject)
	}

	// A superseded promotion's pull request is closed with a reason.
	pr2, err := asAlice.OpenPullRequest(ctx, repo, forge.NewPullRequest{Head: "vectorflow/promote/x-2", Base: "main", Title: "Promote x-2"})
	if err != nil {
		t.Fatalf("open second pull request: %v", err)
	}
	if pr2.Number == pr.Number {
		t.Fatalf("second branch reused #%d", pr.Number)
	}
	// An approval given before the head moved no longer counts, even when
	// the new commit changes nothing.
	approve(t, g, bobToken, pr2.Number, pr2.HeadSHA)
	testutil.Git(t, push.dir, nil, "checkout", "-q", "vectorflow/promote/x-2")
	testutil.Git(t, push.dir, nil, "commit", "-q", "--allow-empty", "-m", "re-render x-2")
	testutil.Git(t, push.dir, nil, "push", "-q", push.url, "vectorflow/promote/x-2")
	moved := strings.TrimSpace(testutil.Git(t, push.dir, nil, "rev-parse", "HEAD"))
	pr2 = waitHead(ctx, t, asAlice, repo, pr2.Number, moved)
	reviews, err = asAlice.Reviews(ctx, repo, pr2.Number)
	if err != nil {
		t.Fatalf("reviews: %v", err)
	}
	// Gitea keeps Stale false here (the empty commit leaves the diff as it
	// was), so the commit check in CountingApproval is what refuses it.
	if len(reviews) != 1 || reviews[0].User != bob || reviews[0].CommitID == moved || forge.CountingApproval(reviews[0], pr2.HeadSHA, pr2.Author) {
		t.Errorf("reviews after the head moved to %s: %+v, want bob's old approval, not counting", moved, reviews)
	}

	if err := asAlice.Close(ctx, repo, pr2.Number, "Superseded by x-1."); err != nil {
		t.Fatalf("close: %v", err)
	}
	closed, err := asAlice.GetPullRequest(ctx, repo, pr2.Number)
	if err != nil {
		t.Fatal(err)
	}
	if closed.State != forge.StateClosed || closed.Merged {
		t.Errorf("after close %+v: want closed, unmerged", closed)
	}
	if comments := issueComments(t, g, aliceToken, pr2.Number); !slices.Contains(comments, "Superseded by x-1.") {
		t.Errorf("comments of #%d = %q, want the close reason", pr2.Number, comments)
	}

	_, err = asAlice.GetPullRequest(ctx, repo, 9999)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound || !strings.Contains(err.Error(), "get pull request 9999 of alice/config") {
		t.Errorf("missing pull request: got %v, want a 404 *APIError naming the call", err)
	}
	wrongToken := "0123456789abcdef0123456789abcdef01234567"
	stranger, err := forge.New(forge.KindGitea, g.APIURL(), wrongToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = stranger.GetPullRequest(ctx, repo, pr.Number)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized || strings.Contains(err.Error(), wrongToken) {
		t.Errorf("wrong token: got %v, want a 401 *APIError without the token", err)
	}
}

type pushed struct {
	dir, url string
	promote1 string // head of vectorflow/promote/x-1
}

// pushBranches pushes main and two promotion branches, each one commit
// ahead of main, and waits until Gitea lists them.
func pushBranches(t *testing.T, g *testutil.Gitea, url, token string, repo forge.Repo) pushed {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	write("kustomization.yaml", "images:\n- name: app\n  newTag: 1.0.0\n")
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-q", "-m", "stage prod at 1.0.0")
	testutil.Git(t, dir, nil, "push", "-q", url, "main")

	testutil.Git(t, dir, nil, "checkout", "-q", "-b", "vectorflow/promote/x-1")
	write("kustomization.yaml", "images:\n- name: app\n  newTag: 1.1.0\n")
	testutil.Git(t, dir, nil, "commit", "-q", "-am", "promote x-1")
	promote1 := strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))

	testutil.Git(t, dir, nil, "checkout", "-q", "-b", "vectorflow/promote/x-2", "main")
	write("kustomization.yaml", "images:\n- name: app\n  newTag: 1.2.0\n")
	testutil.Git(t, dir, nil, "commit", "-q", "-am", "promote x-2")
	testutil.Git(t, dir, nil, "push", "-q", url, "vectorflow/promote/x-1", "vectorflow/promote/x-2")

	for _, b := range []string{"main", "vectorflow/promote/x-1", "vectorflow/promote/x-2"} {
		g.WaitForBranch(t, repo.Owner, repo.Name, b, token)
	}
	return pushed{dir: dir, url: url, promote1: promote1}
}

// waitMergeable polls until Gitea has finished its conflict check, which
// runs in a queue after the pull request opens; merging earlier is refused.
func waitMergeable(ctx context.Context, t *testing.T, f forge.Forge, repo forge.Repo, number int) forge.PullRequest {
	t.Helper()
	for {
		pr, err := f.GetPullRequest(ctx, repo, number)
		if err != nil {
			t.Fatalf("get pull request %d: %v", number, err)
		}
		if pr.Mergeable != nil && *pr.Mergeable {
			return pr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pull request %d never became mergeable: %+v", number, pr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitHead polls until Gitea has moved the pull request to head after a
// push, which it does in a queue.
func waitHead(ctx context.Context, t *testing.T, f forge.Forge, repo forge.Repo, number int, head string) forge.PullRequest {
	t.Helper()
	for {
		pr, err := f.GetPullRequest(ctx, repo, number)
		if err != nil {
			t.Fatalf("get pull request %d: %v", number, err)
		}
		if pr.HeadSHA == head {
			return pr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pull request %d never moved to %s: %+v", number, head, pr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// approve submits an approving review through Gitea's API: the Forge
// interface has no Approve, since approving is the reviewers' business.
func approve(t *testing.T, g *testutil.Gitea, token string, number int, head string) {
	t.Helper()
	status, body, err := g.API(http.MethodPost, "/repos/alice/config/pulls/"+strconv.Itoa(number)+"/reviews",
		testutil.TokenAuth(token), map[string]any{"event": "APPROVED", "body": "ship it", "commit_id": head})
	if err != nil || status != http.StatusOK {
		t.Fatalf("approve #%d: %d %s %v", number, status, body, err)
	}
}

func issueLabels(t *testing.T, g *testutil.Gitea, token string, number int) []string {
	t.Helper()
	var issue struct {
		Labels []struct {
			Name string `json:"name"`
		} `json:"labels"`
	}
	giteaGet(t, g, token, "/repos/alice/config/issues/"+strconv.Itoa(number), &issue)
	var names []string
	for _, l := range issue.Labels {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}

func issueComments(t *testing.T, g *testutil.Gitea, token string, number int) []string {
	t.Helper()
	var comments []struct {
		Body string `json:"body"`
	}
	giteaGet(t, g, token, "/repos/alice/config/issues/"+strconv.Itoa(number)+"/comments", &comments)
	var bodies []string
	for _, c := range comments {
		bodies = append(bodies, c.Body)
	}
	return bodies
}

func giteaGet(t *testing.T, g *testutil.Gitea, token, path string, out any) {
	t.Helper()
	status, body, err := g.API(http.MethodGet, path, testutil.TokenAuth(token), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", path, status, body, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
