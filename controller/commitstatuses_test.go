package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// statusTokenEnv is where the poller finds its Gitea token, as a user's
// spec.deployment.commitStatus.tokenEnv names it.
const statusTokenEnv = "VECTORFLOW_TEST_COMMIT_STATUS_TOKEN"

// fluxContext is the context Flux's notification-controller posts for
// Kustomization apps through a Provider whose uid begins with 0c9c2e41
// (generateDefaultCommitStatus: kind/name/uid prefix, lowercased).
const fluxContext = "kustomization/apps/0c9c2e41"

// TestCommitStatusesFromGitea drives the poller with statuses posted on a
// real Gitea as Flux's notification-controller posts them (same context,
// states and descriptions, through the same API): progressing, then healthy
// at the head; a failure at the next head, behind more than a page of other
// statuses and a newer success of another Kustomization; nothing reported
// twice; and the background poll queueing its reports for the next pass.
func TestCommitStatusesFromGitea(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	g := testutil.StartGitea(t)
	flux, fluxPassword, fluxToken := g.CreateUser(t, "flux")
	cloneURL := g.CreateRepo(t, flux, "fleet", fluxToken)
	t.Setenv(statusTokenEnv, fluxToken)

	dir := t.TempDir()
	pushURL := testutil.CredentialURL(t, cloneURL, flux, fluxPassword)
	commit := func(tag string) string {
		if err := os.MkdirAll(filepath.Join(dir, "prod"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "prod", "kustomization.yaml"), []byte("images:\n- name: app\n  newTag: "+tag+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, nil, "add", ".")
		testutil.Git(t, dir, nil, "commit", "-q", "-m", "promote app "+tag+" to prod")
		testutil.Git(t, dir, nil, "push", "-q", pushURL, "main")
		return strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD"))
	}
	testutil.Git(t, dir, nil, "init", "-q", "-b", "main")
	c1 := commit("1.0.0")
	g.WaitForBranch(t, flux, "fleet", "main", fluxToken)

	post := func(sha, context, state, description string) {
		t.Helper()
		status, body, err := g.API(http.MethodPost, "/repos/flux/fleet/statuses/"+sha, testutil.TokenAuth(fluxToken), map[string]any{
			"state": state, "context": context, "description": description, "target_url": "",
		})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("post status %s on %s: %d %s %v", context, sha, status, body, err)
		}
	}

	apps := v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization, Name: "apps", Namespace: "flux-system",
		CommitStatus: &v1alpha1.CommitStatusSource{ForgeAccess: v1alpha1.ForgeAccess{Forge: v1alpha1.ForgeGitea, APIURL: g.APIURL(), TokenEnv: statusTokenEnv}}}
	snapshot := func(head string) *source.Snapshot {
		key := source.StageKey("prod", "apps")
		return &source.Snapshot{
			Stages:     map[string]*v1alpha1.Stage{key: {Spec: v1alpha1.StageSpec{Landscape: "prod", Path: "prod", Deployment: &apps}}},
			StageIndex: map[string]source.StageRef{key: {Landscape: "prod", Name: "apps", URL: cloneURL, Branch: "main", Commit: head, Overlay: "prod"}},
		}
	}
	c := &Controller{opts: Options{Clock: time.Now, Log: logr.Discard()}}
	poll := func(head string) []deployments.Report {
		t.Helper()
		start := time.Now()
		reports := c.pollCommitStatuses(ctx, c.commitStatusTargets(snapshot(head)))
		t.Logf("poll at %.7s: %d reports in %v", head, len(reports), time.Since(start))
		return reports
	}
	report := func(rev string, o deployments.Outcome, reason, msg string) deployments.Report {
		return deployments.Report{Deployment: apps, Revision: rev, Outcome: o, Reason: reason, Message: msg, Channel: deployments.ChannelCommitStatus}
	}
	ignoreAt := cmpopts.IgnoreFields(deployments.Report{}, "At")

	if got := poll(c1); len(got) != 0 {
		t.Errorf("reports before Flux posted anything: %+v", got)
	}

	// Flux posts pending while it applies (Gitea provider), then success.
	post(c1, fluxContext, "pending", "progressing")
	if diff := cmp.Diff([]deployments.Report{report(c1, deployments.Progressing, "CommitStatusPending", fluxContext+": progressing")}, poll(c1), ignoreAt); diff != "" {
		t.Errorf("after pending (-want +got):\n%s", diff)
	}
	post(c1, fluxContext, "success", "reconciliation succeeded")
	got := poll(c1)
	if diff := cmp.Diff([]deployments.Report{report(c1, deployments.Healthy, "CommitStatusSuccess", fluxContext+": reconciliation succeeded")}, got, ignoreAt); diff != "" {
		t.Errorf("after success (-want +got):\n%s", diff)
	}
	if len(got) == 1 && (got[0].At.IsZero() || time.Since(got[0].At) > time.Minute) {
		t.Errorf("report time %v, want when Gitea recorded the status", got[0].At)
	}
	if got := poll(c1); len(got) != 0 {
		t.Errorf("an unchanged status is reported again: %+v", got)
	}

	// The next promotion: its health check fails. Other checks post more
	// than a page of statuses (Gitea's page is 50), and another
	// Kustomization a newer success, which must not count for apps.
	c2 := commit("1.1.0")
	post(c2, fluxContext, "failure", "health check failed")
	for i := range 55 {
		post(c2, fmt.Sprintf("ci/check-%02d", i), "success", "passed")
	}
	post(c2, "kustomization/apps-canary/0c9c2e41", "success", "reconciliation succeeded")

	client, err := forge.New(forge.KindGitea, g.APIURL(), fluxToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	repo := forge.Repo{Owner: flux, Name: "fleet"}
	statuses, err := client.CommitStatuses(ctx, repo, c2)
	if err != nil {
		t.Fatalf("commit statuses: %v", err)
	}
	if len(statuses) != 57 {
		t.Errorf("CommitStatuses listed %d statuses of %.7s, want all 57 over two pages", len(statuses), c2)
	}
	if len(statuses) > 0 {
		t.Logf("Gitea lists %q first and %q last", statuses[0].Context, statuses[len(statuses)-1].Context)
	}

	if diff := cmp.Diff([]deployments.Report{report(c2, deployments.Failed, "CommitStatusFailure", fluxContext+": health check failed")}, poll(c2), ignoreAt); diff != "" {
		t.Errorf("after the failure at the new head (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{c2}, c.commitStatuses.revisions[source.StageKey("prod", "apps")]); diff != "" {
		t.Errorf("revisions still read (-want +got):\n%s", diff)
	}

	// Flux retries and the revision recovers; the background poll queues
	// the report for the next pass.
	post(c2, fluxContext, "success", "reconciliation succeeded")
	c.pollCommitStatusesInBackground(snapshot(c2))
	var queued []deployments.Report
	for deadline := time.Now().Add(time.Minute); len(queued) == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		queued = c.takeDeploymentReports()
	}
	if diff := cmp.Diff([]deployments.Report{report(c2, deployments.Healthy, "CommitStatusSuccess", fluxContext+": reconciliation succeeded")}, queued, ignoreAt); diff != "" {
		t.Errorf("queued by the background poll (-want +got):\n%s", diff)
	}

	// A token the forge refuses is logged, not reported, and names no secret.
	t.Setenv(statusTokenEnv, "0123456789abcdef0123456789abcdef01234567")
	targets := c.commitStatusTargets(snapshot(c2))
	reports, err := c.readCommitStatuses(ctx, targets[0], []string{c2}, nil)
	if err == nil || len(reports) != 0 || strings.Contains(err.Error(), "0123456789abcdef") || !strings.Contains(err.Error(), "401") {
		t.Errorf("with a wrong token: %v, %+v; want a 401 error without the token", err, reports)
	}
}

// TestCommitStatusPollerTracksHeads: each head seen is read until its
// status is final; the current head always; at most maxTrackedRevisions.
func TestCommitStatusPollerTracksHeads(t *testing.T) {
	var p commitStatusPoller
	heads := []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7"}
	for _, h := range heads {
		p.track("prod/apps", h)
	}
	if diff := cmp.Diff(heads[2:], p.track("prod/apps", "h7")); diff != "" {
		t.Errorf("tracked after 7 heads (-want +got):\n%s", diff)
	}
	final := deployments.Report{Revision: "h4", Outcome: deployments.Healthy}
	p.remember(stageRevision{"prod/apps", "h4"}, final, "h7")
	p.remember(stageRevision{"prod/apps", "h5"}, deployments.Report{Revision: "h5", Outcome: deployments.Progressing}, "h7")
	p.remember(stageRevision{"prod/apps", "h7"}, deployments.Report{Revision: "h7", Outcome: deployments.Failed}, "h7")
	if diff := cmp.Diff([]string{"h3", "h5", "h6", "h7"}, p.track("prod/apps", "h7")); diff != "" {
		t.Errorf("tracked after h4 turned healthy (-want +got):\n%s", diff)
	}
	if _, ok := p.reported[stageRevision{"prod/apps", "h7"}]; !ok {
		t.Errorf("the head's final report is forgotten: it would be reported again")
	}
	if diff := cmp.Diff([]string{"other"}, p.track("test/apps", "other")); diff != "" {
		t.Errorf("another stage's revisions (-want +got):\n%s", diff)
	}
}

// TestCommitStatusesReadOncePerRevision: stages of one landscape
// repository, reached with the same forge access, share one read of each
// revision's statuses per poll.
func TestCommitStatusesReadOncePerRevision(t *testing.T) {
	const head = "4f45b85b351412409e48122d52bea6ba1a896b7c"
	var reads int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/repos/acme/fleet/commits/"+head+"/statuses" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
		}
		reads++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"id":3,"status":"success","context":"kustomization/apps-dev/0c9c2e41","description":"reconciliation succeeded","created_at":"2026-11-30T10:00:00Z","updated_at":"2026-11-30T10:00:00Z"},
			{"id":4,"status":"failure","context":"kustomization/apps-test/77aa01bc","description":"health check failed","created_at":"2026-11-30T10:01:00Z","updated_at":"2026-11-30T10:01:00Z"}]`)
	}))
	defer srv.Close()
	t.Setenv(statusTokenEnv, "token")
	access := v1alpha1.ForgeAccess{Forge: v1alpha1.ForgeGitea, APIURL: srv.URL + "/api/v1", TokenEnv: statusTokenEnv}
	target := func(stage, kustomization string) commitStatusTarget {
		return commitStatusTarget{stage: stage, repo: forge.Repo{Owner: "acme", Name: "fleet"}, head: head,
			deployment: v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization, Name: kustomization, CommitStatus: &v1alpha1.CommitStatusSource{ForgeAccess: access}}}
	}
	c := &Controller{opts: Options{Clock: time.Now, Log: logr.Discard()}}
	got := c.pollCommitStatuses(context.Background(), []commitStatusTarget{target("dev/apps", "apps-dev"), target("test/apps", "apps-test")})
	var outcomes []string
	for _, r := range got {
		outcomes = append(outcomes, r.Deployment.Name+" "+string(r.Outcome))
	}
	if diff := cmp.Diff([]string{"apps-dev Healthy", "apps-test Failed"}, outcomes); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	if reads != 1 {
		t.Errorf("the revision's statuses were read %d times for two stages, want once", reads)
	}
}
