package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/webhook"
)

// forgeTokenEnv is where the controller finds its Gitea token, as the
// config's spec.approval.pullRequest.tokenEnv says.
const forgeTokenEnv = "VECTORFLOW_TEST_FORGE_TOKEN"

// TestPullRequestPromotion drives promotions to test through pull requests
// on a real Gitea whose main branch requires one approval, from the CLI:
// vectorflow opens one pull request per waiting promotion (a burst of two),
// never a second one on re-runs; Gitea refuses to merge before an approval;
// the author's own approval does not count; a second user's does. With
// merge: forge that user's merge completes the promotion; with merge:
// vectorflow the controller writes the signed commit itself and closes the
// pull request. Either way the superseded pull request is closed pointing to
// the newer one, and audit names the reviewer.
func TestPullRequestPromotion(t *testing.T) {
	g := testutil.StartGitea(t)
	bot, botPassword, botToken := g.CreateUser(t, "vectorflow")
	alice, _, aliceToken := g.CreateUser(t, "alice")
	t.Setenv("VECTORFLOW_GIT_USERNAME", bot)
	t.Setenv("VECTORFLOW_GIT_PASSWORD", botPassword)
	t.Setenv(forgeTokenEnv, botToken)

	for _, merge := range []string{v1alpha1.PullRequestMergeForge, v1alpha1.PullRequestMergeVectorflow} {
		t.Run("merge "+merge, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			f := newGiteaFixture(t, g, "acme-"+merge, merge, bot, botPassword, botToken, alice, aliceToken)
			asAlice, err := forge.New(forge.KindGitea, g.APIURL(), aliceToken, nil)
			if err != nil {
				t.Fatal(err)
			}

			// A vector goes to dev on its own; dev's old and new vectors are
			// both offered to test, each as its own pull request.
			f.run(t)
			f.run(t) // a re-run opens nothing new
			ps := f.promotions(t)
			wantState(t, ps, "latest-to-dev-1", v1alpha1.PromotionSucceeded)
			wantState(t, ps, "dev-to-test-1", v1alpha1.PromotionWaiting)
			wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionWaiting)
			for _, p := range []v1alpha1.VectorPromotion{ps["dev-to-test-1"], ps["dev-to-test-2"]} {
				pr := p.Status.PullRequest
				if pr == nil || pr.Number == 0 || pr.State != "open" || pr.Branch != "vectorflow/promote/"+p.Name || pr.URL == "" {
					t.Fatalf("%s: status.pullRequest %+v, want an open pull request from vectorflow/promote/%s", p.Name, pr, p.Name)
				}
			}
			if open := f.openPullRequests(t); !slices.Equal(open, []int{ps["dev-to-test-1"].Status.PullRequest.Number, ps["dev-to-test-2"].Status.PullRequest.Number}) {
				t.Fatalf("open pull requests %v after two runs, want exactly one per promotion", open)
			}
			number := ps["dev-to-test-2"].Status.PullRequest.Number
			if err != nil {
				t.Fatal(err)
			}
			title, body := f.pullRequestText(t, number)
			if want := "Promote " + ps["dev-to-test-2"].Spec.Vector + " to test/test"; title != want {
				t.Errorf("title %q, want %q", title, want)
			}
			for _, want := range []string{"| Component | Old | New |", "| `registry.example.com/acme/frontend` | `1.1.0` | `1.2.0` |",
				"### Rendered manifests", "- changed `Deployment acme-test/frontend`"} {
				if !strings.Contains(body, want) {
					t.Errorf("body of #%d lacks %q:\n%s", number, want, body)
				}
			}

			// A template change makes the burst three candidates, three pull requests.
			f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
			f.run(t)
			ps = f.promotions(t)
			wantState(t, ps, "dev-to-test-3", v1alpha1.PromotionWaiting)
			stale, newer := []v1alpha1.VectorPromotion{ps["dev-to-test-1"], ps["dev-to-test-2"]}, ps["dev-to-test-3"]
			if newer.Status.PullRequest == nil {
				t.Fatalf("dev-to-test-3 has no pull request: %+v", newer.Status)
			}
			number = newer.Status.PullRequest.Number
			pr, err := asAlice.GetPullRequest(ctx, f.repo, number)
			if err != nil {
				t.Fatal(err)
			}
			if pr.Author != bot {
				t.Errorf("pull request #%d opened by %q, want the controller's user %s", number, pr.Author, bot)
			}
			if _, body := f.pullRequestText(t, number); !strings.Contains(body, "| `registry.example.com/acme/service-a` | `1.0.1` | `1.0.3` |") {
				t.Errorf("body of #%d lacks the service-a change:\n%s", number, body)
			}

			// Gitea refuses a merge without an approval, even to a collaborator.
			pr = waitForMergeable(ctx, t, asAlice, f.repo, number)
			var apiErr *forge.APIError
			if err := asAlice.Merge(ctx, f.repo, number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); !errors.As(err, &apiErr) {
				t.Fatalf("merge of #%d before an approval: %v, want Gitea's refusal", number, err)
			}

			// The author approving its own pull request does not count
			// (Gitea refuses it, or records a review that CountingApproval rejects).
			status, resp, err := g.API(http.MethodPost, "/repos/"+f.repo.String()+"/pulls/"+strconv.Itoa(number)+"/reviews",
				testutil.TokenAuth(botToken), map[string]any{"event": "APPROVED", "body": "lgtm", "commit_id": pr.HeadSHA})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("self-approval by %s: %d %s", bot, status, resp)
			// From here a long-running controller decides, as `run` without
			// --once would: a pass whose only news is on the forge (a review,
			// a merge) must not be skipped as unchanged.
			ctl := f.newController(t, bot, botPassword)
			settle(ctx, t, ctl)
			wantState(t, f.promotions(t), newer.Name, v1alpha1.PromotionWaiting)

			// Alice approves: that counts.
			status, resp, err = g.API(http.MethodPost, "/repos/"+f.repo.String()+"/pulls/"+strconv.Itoa(number)+"/reviews",
				testutil.TokenAuth(aliceToken), map[string]any{"event": "APPROVED", "body": "ship it", "commit_id": pr.HeadSHA})
			if err != nil || status != http.StatusOK {
				t.Fatalf("alice's approval: %d %s %v", status, resp, err)
			}
			if merge == v1alpha1.PullRequestMergeForge {
				// Under merge: forge the approval alone executes nothing: the merge does.
				settle(ctx, t, ctl)
				wantState(t, f.promotions(t), newer.Name, v1alpha1.PromotionWaiting)
				if err := asAlice.Merge(ctx, f.repo, number, forge.MergeOptions{Method: forge.MergeMethodMerge, HeadSHA: pr.HeadSHA}); err != nil {
					t.Fatalf("alice merges #%d after her approval: %v", number, err)
				}
			}
			settle(ctx, t, ctl)
			ps = f.promotions(t)
			wantState(t, ps, newer.Name, v1alpha1.PromotionSucceeded)
			wantState(t, ps, "dev-to-test-1", v1alpha1.PromotionSuperseded)
			wantState(t, ps, "dev-to-test-2", v1alpha1.PromotionSuperseded)
			done := ps[newer.Name]
			if a := done.Status.Approval; a == nil || a.ApprovedBy != alice {
				t.Fatalf("%s approval %+v, want approvedBy %s", newer.Name, a, alice)
			}

			// The promotion commit on main is signed and carries the trailers.
			clone := f.clone(t)
			commit := done.Status.Commit
			if got := strings.TrimSpace(testutil.Git(t, clone, nil, "rev-parse", "HEAD:apps/overlays/test/kustomization.yaml")); got !=
				strings.TrimSpace(testutil.Git(t, clone, nil, "rev-parse", commit+":apps/overlays/test/kustomization.yaml")) {
				t.Errorf("main's test overlay is not what promotion commit %s wrote", commit)
			}
			if out, err := testutil.GitVerifyCommit(clone, testutil.GPGHome(t, f.controllerKey), nil, commit); err != nil || !strings.Contains(out, "Good signature") {
				t.Fatalf("git verify-commit %s: %v\n%s", commit, err, out)
			}
			trailers := testutil.Git(t, clone, nil, "log", "-1", "--format=%(trailers:only,unfold)", commit)
			if !strings.Contains(trailers, "Vectorflow-Promotion: "+newer.Name) {
				t.Errorf("trailers of %s:\n%s", commit, trailers)
			}
			if merge == v1alpha1.PullRequestMergeVectorflow {
				// The controller wrote the commit after the review, so it names the reviewer.
				if !strings.Contains(trailers, "Approved-by: "+alice) {
					t.Errorf("trailers of %s lack Approved-by: %s:\n%s", commit, alice, trailers)
				}
				if merged := strings.TrimSpace(testutil.Git(t, clone, nil, "rev-parse", "HEAD")); merged != commit {
					t.Errorf("main is at %s, want the controller's promotion commit %s", merged, commit)
				}
			} else if !strings.Contains(testutil.Git(t, clone, nil, "log", "--format=%H", "main"), pr.HeadSHA) {
				t.Errorf("the merged head %s is not on main", pr.HeadSHA)
			}

			// Every pull request is settled: the newest merged (forge) or closed
			// with a comment (vectorflow), the superseded ones closed pointing to it.
			f.run(t)
			newerPR, err := asAlice.GetPullRequest(ctx, f.repo, number)
			if err != nil {
				t.Fatal(err)
			}
			wantNewer := forge.StateMerged
			if merge == v1alpha1.PullRequestMergeVectorflow {
				wantNewer = forge.StateClosed
				if c := f.comments(t, number); len(c) == 0 || !strings.Contains(c[len(c)-1], commit) {
					t.Errorf("comments of #%d %q, want one naming the promotion commit %s", number, c, commit)
				}
			}
			if newerPR.State != wantNewer {
				t.Errorf("pull request #%d of %s is %s, want %s", number, newer.Name, newerPR.State, wantNewer)
			}
			ps = f.promotions(t)
			for _, p := range stale {
				n := p.Status.PullRequest.Number
				olderPR, err := asAlice.GetPullRequest(ctx, f.repo, n)
				if err != nil {
					t.Fatal(err)
				}
				if olderPR.State != forge.StateClosed || olderPR.Merged {
					t.Errorf("pull request #%d of superseded %s is %s, want closed", n, p.Name, olderPR.State)
				}
				want := "Superseded by " + newer.Name + " (pull request #" + strconv.Itoa(number)
				if c := f.comments(t, n); len(c) == 0 || !strings.Contains(c[len(c)-1], want) {
					t.Errorf("comments of superseded #%d: %q, want %q", n, c, want)
				}
				if got := ps[p.Name].Status.PullRequest.State; got != "closed" {
					t.Errorf("%s records its pull request as %q, want closed", p.Name, got)
				}
			}
			if open := f.openPullRequests(t); len(open) != 0 {
				t.Errorf("open pull requests %v after the promotion, want none", open)
			}

			// audit names the reviewer and the pull request.
			var entries []controller.AuditEntry
			if err := json.Unmarshal([]byte(f.cli(t, "audit", "--stage", "test", "-o", "json")), &entries); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(entries, func(e controller.AuditEntry) bool { return e.Promotion == newer.Name })
			if i < 0 {
				t.Fatalf("audit of test has no entry for %s: %+v", newer.Name, entries)
			}
			if e := entries[i]; e.ApprovedBy != alice || e.PullRequest != newer.Status.PullRequest.URL || !e.SignatureVerified || e.Commit != commit {
				t.Errorf("audit entry %+v: want approvedBy %s through %s, signature verified, commit %s", e, alice, newer.Status.PullRequest.URL, commit)
			}
		})
	}
}

// TestPullRequestWebhookReachesRunner sends a signed Gitea review event
// about the config (and target) repository through the webhook handler
// `run --listen` serves, and checks that it asks the repository's
// controller for a pass.
func TestPullRequestWebhookReachesRunner(t *testing.T) {
	const repoURL = "http://127.0.0.1:3000/vectorflow/acme.git"
	signer, err := gitwriter.NewSigner(testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil).PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Options{URL: repoURL, Branch: "main", Writer: w})
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 1})
	runner := controller.NewRunner(time.Hour, log, ctl)
	secret := []byte("webhook-secret")
	handler := webhook.NewHandler(webhook.Options{Secret: secret, Logger: log,
		OnEvent: func(e webhook.Event) { triggerFor(runner, e, log) }})

	for _, event := range []string{"pull_request", "pull_request_review_approved"} {
		var payload map[string]any
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join("..", "..", "source", "webhook", "testdata", "gitea-"+event+".json"))), &payload); err != nil {
			t.Fatal(err)
		}
		repo := payload["repository"].(map[string]any)
		repo["clone_url"], repo["html_url"], repo["ssh_url"] = repoURL, strings.TrimSuffix(repoURL, ".git"), ""
		body, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		req := httptest.NewRequest(http.MethodPost, "/hooks/gitea", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Gitea-Event-Type", event)
		req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
		logged = nil
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			t.Fatalf("%s: handler answered %d %s", event, rec.Code, rec.Body)
		}
		if !slices.ContainsFunc(logged, func(l string) bool {
			return strings.Contains(l, `"msg"="webhook event"`) && strings.Contains(l, `"triggered"=1`)
		}) {
			t.Errorf("%s: no pass triggered; log:\n%s", event, strings.Join(logged, "\n"))
		}
	}
}

// giteaFixture is the quickstart in a Gitea repository owned by the
// controller's user, whose main branch requires one approval and accepts
// direct pushes only from the controller (dev is promoted without review).
type giteaFixture struct {
	*flowFixture
	g       *testutil.Gitea
	repo    forge.Repo
	token   string
	pushURL string
}

// pushTemplateChange changes one component version of the template, as a
// person pushing to main would.
func (f *giteaFixture) pushTemplateChange(t *testing.T, component, from, to string) {
	t.Helper()
	dir := f.clone(t)
	file := filepath.Join(dir, "vectorflow", "template.yaml")
	old, needle := readFile(t, file), "name: "+component+"\n      version: \""+from+"\""
	if !strings.Contains(old, needle) {
		t.Fatalf("template.yaml has no %q", needle)
	}
	writeFile(t, filepath.Dir(file), "template.yaml", []byte(strings.Replace(old, needle, "name: "+component+"\n      version: \""+to+"\"", 1)))
	testutil.Git(t, dir, nil, "commit", "-qam", "bump "+component+" to "+to)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
}

func (f *giteaFixture) clone(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--branch", "main", f.pushURL, ".")
	return dir
}

func newGiteaFixture(t *testing.T, g *testutil.Gitea, name, merge, bot, botPassword, botToken, reviewer, reviewerToken string) *giteaFixture {
	t.Helper()
	keys := t.TempDir()
	f := &giteaFixture{flowFixture: &flowFixture{}, g: g, token: botToken}
	f.controllerKey = testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	f.controller = writeFile(t, keys, "controller.asc", f.controllerKey.PrivateArmored)
	f.controllerPublic = writeFile(t, keys, "controller.pub", f.controllerKey.PublicArmored)

	dir := testutil.CopyDir(t, filepath.Join("..", "..", "examples", "quickstart"))
	writeFile(t, filepath.Join(dir, "vectorflow"), "promotions.yaml", []byte(pullRequestPromotions(g.APIURL(), merge)))
	writeFile(t, filepath.Join(dir, "vectorflow"), "landscapes.yaml", []byte(landscapesWithSigner(f.controllerKey.PublicArmored)))

	cloneURL := g.CreateRepo(t, bot, name, botToken)
	g.AddCollaborator(t, bot, name, reviewer, botToken)
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	testutil.Git(t, dir, nil, "add", ".")
	testutil.Git(t, dir, nil, "commit", "-q", "-m", "quickstart")
	testutil.Git(t, dir, nil, "push", "-q", testutil.CredentialURL(t, cloneURL, bot, botPassword), "main")
	g.WaitForBranch(t, bot, name, "main", botToken)
	status, resp, err := g.API(http.MethodPost, "/repos/"+bot+"/"+name+"/branch_protections", testutil.TokenAuth(botToken), map[string]any{
		"rule_name":                "main",
		"enable_push":              true,
		"enable_push_whitelist":    true,
		"push_whitelist_usernames": []string{bot},
		"required_approvals":       1,
	})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("protect main of %s: %d %s %v", name, status, resp, err)
	}
	f.url = cloneURL
	f.repo = forge.Repo{Owner: bot, Name: name}
	f.pushURL = testutil.CredentialURL(t, cloneURL, bot, botPassword)
	return f
}

func pullRequestPromotions(apiURL, merge string) string {
	return `apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: latest-to-dev
spec:
  source: {kind: VectorTemplate, name: acme}
  target: {kind: Stage, name: dev, landscape: dev}
---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata:
  name: dev-to-test
spec:
  source: {kind: Stage, name: dev, landscape: dev}
  target: {kind: Stage, name: test, landscape: test}
  approval:
    required: true
    pullRequest:
      forge: gitea
      apiURL: ` + apiURL + `
      tokenEnv: ` + forgeTokenEnv + `
      labels: [vectorflow, promotion]
      merge: ` + merge + `
`
}

// newController is a long-lived controller of the fixture's repository,
// signing with the fixture's key, as `run` makes it.
func (f *giteaFixture) newController(t *testing.T, user, password string) *controller.Controller {
	t.Helper()
	signer, err := gitwriter.LoadSigner(f.flowFixture.controller, "", "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := controller.New(controller.Options{URL: f.url, Branch: "main", Writer: w,
		Auth: func(string) source.Auth { return source.Auth{Username: user, Password: password} }})
	if err != nil {
		t.Fatal(err)
	}
	return ctl
}

func settle(ctx context.Context, t *testing.T, ctl *controller.Controller) {
	t.Helper()
	passes, err := ctl.RunUntilStable(ctx, 20)
	if err != nil {
		t.Fatalf("controller pass: %v", err)
	}
	for _, p := range passes {
		for _, tr := range p.Transitions {
			t.Log(tr)
		}
	}
}

// openPullRequests lists the numbers of the repository's open pull requests.
func (f *giteaFixture) openPullRequests(t *testing.T) []int {
	t.Helper()
	var pulls []struct {
		Number int `json:"number"`
	}
	f.getJSON(t, "/repos/"+f.repo.String()+"/pulls?state=open&limit=50", &pulls)
	var out []int
	for _, p := range pulls {
		out = append(out, p.Number)
	}
	slices.Sort(out)
	return out
}

func (f *giteaFixture) pullRequestText(t *testing.T, number int) (title, body string) {
	t.Helper()
	var pr struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}
	f.getJSON(t, "/repos/"+f.repo.String()+"/pulls/"+strconv.Itoa(number), &pr)
	return pr.Title, pr.Body
}

func (f *giteaFixture) comments(t *testing.T, number int) []string {
	t.Helper()
	var list []struct {
		Body string `json:"body"`
	}
	f.getJSON(t, "/repos/"+f.repo.String()+"/issues/"+strconv.Itoa(number)+"/comments", &list)
	var out []string
	for _, c := range list {
		out = append(out, c.Body)
	}
	return out
}

func (f *giteaFixture) getJSON(t *testing.T, path string, out any) {
	t.Helper()
	status, body, err := f.g.API(http.MethodGet, path, testutil.TokenAuth(f.token), nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", path, status, body, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// waitForMergeable polls until Gitea has computed that the pull request
// merges cleanly; before that it refuses merges for a reason we do not test.
func waitForMergeable(ctx context.Context, t *testing.T, client forge.Forge, repo forge.Repo, number int) forge.PullRequest {
	t.Helper()
	for {
		pr, err := client.GetPullRequest(ctx, repo, number)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Mergeable != nil && *pr.Mergeable {
			return pr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pull request #%d never became mergeable: %+v", number, pr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
