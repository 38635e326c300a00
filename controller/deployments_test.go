package controller

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// closedLoopPromotions: new vectors go to dev on their own; what is active
// and healthy in dev goes to test after a 30-minute soak, without approval.
const closedLoopPromotions = `apiVersion: vectorflow.dev/v1alpha1
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
  approval: {required: false}
  updateDelay: 30m
`

var devKustomization = v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization, Name: "acme-dev", Namespace: "flux-system"}

// closedLoopRepo is the quickstart on the test git server with dev deployed
// by a Flux Kustomization and the promotions above.
func closedLoopRepo(t *testing.T) (*testutil.GitServer, string) {
	t.Helper()
	testutil.RequireGit(t)
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	stages := filepath.Join(dir, "vectorflow", "stages.yaml")
	data, err := os.ReadFile(stages)
	if err != nil {
		t.Fatal(err)
	}
	dev := "  landscape: dev\n  path: apps/overlays/dev\n"
	if !strings.Contains(string(data), dev) {
		t.Fatal("the quickstart's dev stage changed; update this test")
	}
	data = []byte(strings.Replace(string(data), dev, dev+"  deployment: {kind: Kustomization, name: acme-dev, namespace: flux-system}\n", 1))
	if err := os.WriteFile(stages, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vectorflow", "promotions.yaml"), []byte(closedLoopPromotions), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, dir, "main", "acme.git")
	return srv, "acme.git"
}

// closedLoop is closedLoopRepo with what its tests drive it by: a clock,
// a reader of its branches, and controllers that sign as vectorflow (a
// new one is a restarted process).
type closedLoop struct {
	srv           *testutil.GitServer
	name          string
	clock         *testClock
	repo          *source.Repository
	newController func() *Controller
}

func startClosedLoop(t *testing.T) *closedLoop {
	t.Helper()
	srv, name := closedLoopRepo(t)
	l := &closedLoop{srv: srv, name: name, clock: &testClock{start: time.Now().Truncate(time.Second)}}
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	signer, err := gitwriter.NewSigner(testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil).PrivateArmored, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.newController = func() *Controller {
		w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{URL: srv.HTTPURL(name), Branch: "main", Writer: w, Auth: auth, Clock: l.clock.now})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if l.repo, err = source.Open(srv.HTTPURL(name), source.Auth{Username: srv.Username, Password: srv.Password}); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDeploymentReportsDriveActiveAndReadiness closes the loop over the
// real git server with a signing controller: dev's active vector comes from
// its deployer's reports; dev-to-test (readiness Active by default, as dev
// names a deployment) offers nothing before a healthy report, nothing after
// a HealthCheckFailed one, and only once the soak has passed; a report for
// a deployment no stage names changes nothing.
func TestDeploymentReportsDriveActiveAndReadiness(t *testing.T) {
	l := startClosedLoop(t)
	srv, name, clock, repo, newController := l.srv, l.name, l.clock, l.repo, l.newController
	c := newController()
	ctx := context.Background()
	run := func(what string) {
		t.Helper()
		if _, err := c.RunUntilStable(ctx, 10); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	read := func() *reconcilers.State { t.Helper(); return readDriftState(t, repo) }
	stateTip := func() string {
		return testutil.Git(t, t.TempDir(), nil, "--git-dir", srv.BarePath(name), "rev-parse", DefaultStateBranch)
	}
	mainTip := func() string {
		return strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", srv.BarePath(name), "rev-parse", "main"))
	}
	devToTest := func(s *reconcilers.State) []string {
		var out []string
		for n, p := range s.Promotions {
			if p.Spec.VectorPromotionConfigName == "dev-to-test" {
				out = append(out, n)
			}
		}
		return out
	}
	condition := func(s *reconcilers.State, typ string) *metav1.Condition {
		return meta.FindStatusCondition(s.Configs["dev-to-test"].Status.Conditions, typ)
	}

	run("first passes")
	s := read()
	dev := s.Stages["dev/dev"]
	vector := dev.Status.Vector
	if !strings.HasPrefix(vector, "acme:") || s.Promotions["latest-to-dev-1"] == nil {
		t.Fatalf("latest-to-dev did not promote to dev: dev names %q", vector)
	}
	if dev.Status.ActiveVector != "" {
		t.Errorf("dev claims %s active before its deployer reported anything", dev.Status.ActiveVector)
	}
	sv := s.StageVersions[reconcilers.StageVersionName("dev", "dev", vector)]
	if sv == nil {
		t.Fatalf("no StageVersion of dev at %s; have %v", vector, keysOf(s.StageVersions))
	}
	if !strings.HasPrefix(sv.Spec.RenderDigest, "sha256:") || len(sv.Spec.Inventory) == 0 ||
		sv.Spec.Commit != s.Promotions["latest-to-dev-1"].Status.Commit {
		t.Errorf("StageVersion %s records digest %q, %d objects, commit %s; want the render of promotion commit %s",
			sv.Name, sv.Spec.RenderDigest, len(sv.Spec.Inventory), sv.Spec.Commit, s.Promotions["latest-to-dev-1"].Status.Commit)
	}
	if u := s.Usages[reconcilers.OwnUsageName("dev", "dev", v1alpha1.TargetUsageReason)]; u == nil || u.Spec.StageVersionRef.Name != sv.Name {
		t.Errorf("dev's target usage %+v, want it on %s", u, sv.Name)
	}
	if p := devToTest(s); len(p) > 0 {
		t.Fatalf("dev-to-test offered %v before dev's deployer reported", p)
	}
	if w := condition(s, v1alpha1.WaitingForDeploymentCondition); w == nil || w.Reason != v1alpha1.AwaitingDeploymentReason ||
		!strings.Contains(w.Message, "Kustomization flux-system/acme-dev") || !strings.Contains(w.Message, vector) {
		t.Errorf("WaitingForDeployment %+v, want it to name the Kustomization and %s", w, vector)
	}
	revision := mainTip()

	// A report for a deployment no stage names: no state commit.
	before := stateTip()
	c.ReportDeployment(deployments.Report{Deployment: v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization,
		Name: "someone-else", Namespace: "flux-system"}, Revision: revision, Outcome: deployments.Healthy, At: clock.now(), Channel: deployments.ChannelFlux})
	run("unknown deployment")
	if after := stateTip(); after != before {
		t.Errorf("a report for an unknown deployment made state commit %s", after)
	}

	// The health check fails: dev-to-test stays blocked and says why.
	c.ReportDeployment(deployments.Report{Deployment: devKustomization, Revision: "main@sha1:" + revision, Outcome: deployments.Failed,
		Reason: "HealthCheckFailed", Message: "timeout waiting for: [Deployment/acme-dev/frontend status: 'InProgress']",
		At: clock.now(), Channel: deployments.ChannelFlux})
	run("failed report")
	s = read()
	if p := devToTest(s); len(p) > 0 {
		t.Fatalf("dev-to-test offered %v after a HealthCheckFailed report", p)
	}
	if w := condition(s, v1alpha1.WaitingForDeploymentCondition); w == nil || w.Reason != v1alpha1.DeploymentUnhealthyReason ||
		!strings.Contains(w.Message, "HealthCheckFailed") {
		t.Errorf("WaitingForDeployment %+v, want %s naming HealthCheckFailed", w, v1alpha1.DeploymentUnhealthyReason)
	}
	if r := meta.FindStatusCondition(s.StageVersions[sv.Name].Status.Conditions, v1alpha1.ReadyCondition); r == nil ||
		r.Status != metav1.ConditionFalse || r.Reason != "HealthCheckFailed" || !strings.Contains(r.Message, "frontend") {
		t.Errorf("StageVersion Ready %+v, want False with the deployer's reason and message", r)
	}

	// Healthy: dev's active vector is what its overlay names at the
	// revision; the soak starts.
	clock.advance(time.Minute)
	c.ReportDeployment(deployments.Report{Deployment: devKustomization, Revision: revision, Outcome: deployments.Healthy,
		Reason: "ReconciliationSucceeded", At: clock.now(), Channel: deployments.ChannelFlux})
	run("healthy report")
	s = read()
	dev = s.Stages["dev/dev"]
	if dev.Status.ActiveVector != vector || dev.Status.ActiveRevision != revision || dev.Status.ActiveSince == nil ||
		!dev.Status.ActiveSince.Time.Equal(clock.now().UTC().Truncate(time.Second)) {
		t.Errorf("dev active %q at %s since %v, want %s at %s since %s", dev.Status.ActiveVector, dev.Status.ActiveRevision,
			dev.Status.ActiveSince, vector, revision, clock.now())
	}
	if p := devToTest(s); len(p) > 0 {
		t.Fatalf("dev-to-test offered %v during its updateDelay", p)
	}
	if d := condition(s, v1alpha1.UpdateDelayedCondition); d == nil || !strings.Contains(d.Message, vector) {
		t.Errorf("UpdateDelayed %+v, want it to name %s", d, vector)
	}
	if condition(s, v1alpha1.WaitingForDeploymentCondition) != nil {
		t.Error("WaitingForDeployment stayed after the healthy report")
	}

	// After the soak the promotion is offered, executed and test runs it,
	// by a restarted controller: what the reports taught is on the state
	// branch, not in memory.
	clock.advance(31 * time.Minute)
	c = newController()
	run("after the soak, restarted")
	s = read()
	if p := devToTest(s); len(p) != 1 {
		t.Fatalf("dev-to-test promotions %v after the soak, want one", p)
	}
	if got := s.Stages["test/test"].Status.Vector; got != vector {
		t.Errorf("test runs %s, want %s", got, vector)
	}
	// test has no deployment: what its overlay names counts as active.
	if got := s.Stages["test/test"].Status.ActiveVector; got != vector {
		t.Errorf("test's active vector %q, want %s", got, vector)
	}
}

func keysOf[V any](m map[string]V) []string { return keys.Sorted(m) }

// TestReportsWaitOrGo: a pass that fails puts the reports it took back; a
// report on a revision the branch does not hold yet waits for a later pass
// while it is young, and is dropped once it is not, so it cannot linger.
func TestReportsWaitOrGo(t *testing.T) {
	srv, name := closedLoopRepo(t)
	clock := &testClock{start: time.Now()}
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	ctx := context.Background()
	report := func(rev string, at time.Time) deployments.Report {
		return deployments.Report{Deployment: devKustomization, Revision: rev, Outcome: deployments.Healthy, At: at, Channel: deployments.ChannelFlux}
	}

	broken := driftController(t, srv.HTTPURL("missing.git"), auth, clock)
	broken.ReportDeployment(report(strings.Repeat("a", 40), clock.now()))
	if _, err := broken.Pass(ctx); err == nil {
		t.Fatal("a pass over a missing repository succeeded")
	}
	if got := broken.takeDeploymentReports(); len(got) != 1 {
		t.Errorf("the failed pass kept %d reports, want the one it took", len(got))
	}

	c := driftController(t, srv.HTTPURL(name), auth, clock)
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	future := strings.Repeat("b", 40) // a commit the branch does not hold (yet)
	c.ReportDeployment(report(future, clock.now()))
	c.ReportDeployment(report(strings.Repeat("c", 40), clock.now().Add(-time.Hour)))
	if _, err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got := c.takeDeploymentReports()
	if len(got) != 1 || got[0].Revision != future {
		t.Errorf("after the pass the queue holds %+v, want only the young report on %s", got, future)
	}
}

// TestLineageFollowsTheBranch: revisions are ordered by the branch's
// first-parent history; a new tip extends it, and a force push drops the
// commits the branch no longer holds, so a report on one of them is not
// taken for the newest.
func TestLineageFollowsTheBranch(t *testing.T) {
	srv, name := closedLoopRepo(t)
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	c := driftController(t, srv.HTTPURL(name), auth, &testClock{start: time.Now()})
	ctx := context.Background()
	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials(name), ".")
	commit := func(msg string) string {
		testutil.Git(t, work, nil, "commit", "-q", "--allow-empty", "-m", msg)
		return strings.TrimSpace(testutil.Git(t, work, nil, "rev-parse", "HEAD"))
	}
	lineageAt := func() *lineage {
		t.Helper()
		snap, err := c.opts.Loader.Load(ctx, srv.HTTPURL(name), "main")
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.lineage(snap.StageIndex["dev/dev"])
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	pos := func(l *lineage, rev string) int { return l.positions[plumbing.NewHash(rev)] }

	root := strings.TrimSpace(testutil.Git(t, work, nil, "rev-parse", "HEAD"))
	a := commit("a")
	testutil.Git(t, work, nil, "push", "-q", "origin", "HEAD:main")
	l := lineageAt()
	if pos(l, root) != 1 || pos(l, a) != 2 {
		t.Fatalf("positions root %d, a %d; want 1, 2", pos(l, root), pos(l, a))
	}
	b := commit("b")
	testutil.Git(t, work, nil, "push", "-q", "origin", "HEAD:main")
	l = lineageAt()
	if pos(l, root) != 1 || pos(l, a) != 2 || pos(l, b) != 3 {
		t.Fatalf("after b: root %d, a %d, b %d; want 1, 2, 3", pos(l, root), pos(l, a), pos(l, b))
	}
	testutil.Git(t, work, nil, "reset", "-q", "--hard", root)
	e := commit("e")
	testutil.Git(t, work, nil, "push", "-q", "--force", "origin", "HEAD:main")
	l = lineageAt()
	if _, ok := l.positions[plumbing.NewHash(b)]; ok || pos(l, e) != 2 {
		t.Errorf("after the force push: b at %d (want gone), e at %d (want 2)", pos(l, b), pos(l, e))
	}
	if _, ok := l.positions[plumbing.NewHash(a)]; ok {
		t.Error("a, which the branch no longer holds, still has a position")
	}
}

// TestRunnerReportDeploymentTriggersAPass: a report handed to the runner (as
// the webhooks do) is applied by a pass it triggers, long before the poll.
func TestRunnerReportDeploymentTriggersAPass(t *testing.T) {
	srv, name := closedLoopRepo(t)
	auth := func(string) source.Auth { return source.Auth{Username: srv.Username, Password: srv.Password} }
	c := driftController(t, srv.HTTPURL(name), auth, &testClock{start: time.Now()})
	ctx, cancel := context.WithCancel(context.Background())
	runner := NewRunner(time.Hour, logr.Discard(), c)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runner.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	repo, err := source.Open(srv.HTTPURL(name), source.Auth{Username: srv.Username, Password: srv.Password})
	if err != nil {
		t.Fatal(err)
	}
	devVector := func() (string, string) {
		_, _, s, err := ReadState(context.Background(), repo, DefaultStateBranch)
		if err != nil || s.Stages["dev/dev"] == nil {
			return "", ""
		}
		return s.Stages["dev/dev"].Status.Vector, s.Stages["dev/dev"].Status.ActiveVector
	}
	waitFor(t, 30*time.Second, "latest-to-dev to promote", func() bool {
		v, _ := devVector()
		return v != "" && v != "acme:2026.11.3-090000000Z"
	})
	tip := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", srv.BarePath(name), "rev-parse", "main"))
	if n := runner.ReportDeployment(deployments.Report{Deployment: devKustomization, Revision: tip, Outcome: deployments.Healthy,
		At: time.Now(), Channel: deployments.ChannelFlux}); n != 1 {
		t.Fatalf("the report reached %d controllers, want 1", n)
	}
	waitFor(t, 30*time.Second, "dev's active vector from the report", func() bool {
		v, active := devVector()
		return active != "" && active == v
	})
}

// TestALateHealthyReportNeverMakesAFailedStageActive: a deployer's reports
// can arrive out of order (Flux's notification-controller posts each event
// on its own, with retries) or be sent again (a recorded webhook body).
// Over the real git server: dev's revision is reported failed, failed
// again, and then a healthy report made before the repeat arrives; dev is
// not Active and dev-to-test offers nothing. A restarted controller, which
// remembers nothing of the repeat, refuses a healthy report made before the
// failure from what the state branch records.
func TestALateHealthyReportNeverMakesAFailedStageActive(t *testing.T) {
	l := startClosedLoop(t)
	srv, name, clock, repo, newController := l.srv, l.name, l.clock, l.repo, l.newController
	c := newController()
	ctx := context.Background()
	// The reports below are made within these ten minutes and arrive
	// after them: a report cannot arrive before it was made.
	start := clock.now()
	clock.advance(10 * time.Minute)
	report := func(outcome deployments.Outcome, made time.Duration, revision string) {
		t.Helper()
		r := deployments.Report{Deployment: devKustomization, Revision: revision, Outcome: outcome, Reason: "ReconciliationSucceeded",
			At: start.Add(made), Channel: deployments.ChannelFlux}
		if outcome == deployments.Failed {
			r.Reason, r.Message = "HealthCheckFailed", "timeout waiting for: [Deployment/acme-dev/frontend status: 'InProgress']"
		}
		c.ReportDeployment(r)
		clock.advance(time.Minute)
		if _, err := c.RunUntilStable(ctx, 10); err != nil {
			t.Fatalf("pass after the %s report made at +%s: %v", outcome, made, err)
		}
	}
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	revision := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", srv.BarePath(name), "rev-parse", "main"))
	notActive := func(when string) {
		t.Helper()
		s := readDriftState(t, repo)
		dev := s.Stages["dev/dev"]
		if a := meta.FindStatusCondition(dev.Status.Conditions, v1alpha1.ActiveCondition); a == nil || a.Status == metav1.ConditionTrue {
			t.Errorf("%s: dev's Active condition is %+v, want it not True: the deployer's newest word is HealthCheckFailed", when, a)
		}
		if dev.Status.ActiveVector != "" {
			t.Errorf("%s: dev claims %s active", when, dev.Status.ActiveVector)
		}
		for n, p := range s.Promotions {
			if p.Spec.VectorPromotionConfigName == "dev-to-test" {
				t.Errorf("%s: dev-to-test offered %s from a failed stage", when, n)
			}
		}
	}

	report(deployments.Failed, 2*time.Minute, revision)
	report(deployments.Failed, 4*time.Minute, revision) // the same word again
	report(deployments.Healthy, 3*time.Minute, revision)
	notActive("after a healthy report made before a repeated failure")

	s := readDriftState(t, repo)
	sv := s.StageVersions[reconcilers.StageVersionName("dev", "dev", s.Stages["dev/dev"].Status.Vector)]
	if sv == nil || sv.Status.ReportedAt == nil || !sv.Status.ReportedAt.Time.Equal(start.Add(2*time.Minute)) {
		t.Fatalf("dev's StageVersion status %+v, want reportedAt %s: the failure that changed it", sv, start.Add(2*time.Minute))
	}

	c = newController()
	clock.advance(time.Hour) // past dev-to-test's soak, were dev active
	report(deployments.Healthy, time.Minute, revision)
	notActive("restarted, after a healthy report made before the failure")

	// The deployer's newer word still counts.
	report(deployments.Healthy, 5*time.Minute, revision)
	if dev := readDriftState(t, repo).Stages["dev/dev"]; dev.Status.ActiveRevision != revision {
		t.Errorf("after a healthy report made after the failure, dev is active at %q, want %s", dev.Status.ActiveRevision, revision)
	}
}

// TestAHealthyRevisionWhoseOverlayContradictsItsVectorIsNotActive: a person
// edits dev's images entries by hand and leaves the vector annotation; Flux
// applies that revision and reports it healthy. What runs there is not the
// vector the annotation names, so dev does not report it active (nor as
// its target).
func TestAHealthyRevisionWhoseOverlayContradictsItsVectorIsNotActive(t *testing.T) {
	wantNotRunning(t, "hotfix by hand", nil, func(overlay string) string {
		return regexp.MustCompile(`newTag: "?[^"\s]+"?`).ReplaceAllString(overlay, `newTag: "9.9.9"`)
	})
}

// TestAHealthyRevisionRunsWhatItsRenderRunsWhereItsEntriesCannotTell:
// the entries alone contradict nothing when a person removes one (the
// base's image runs), leaves its tag to the base (an entry that only moves
// the image to a mirror), or adds a transformer that kustomize runs after
// them. The overlay renders another version of that component than the
// vector it still names, so dev runs no vector. Where the base runs the
// vector's version, dev still runs the vector.
func TestAHealthyRevisionRunsWhatItsRenderRunsWhereItsEntriesCannotTell(t *testing.T) {
	frontend := regexp.MustCompile(`(?m)^  - name: registry.example.com/acme/frontend\n    newTag: "?[^"\s]+"?\n`)
	t.Run("entry removed", func(t *testing.T) {
		wantNotRunning(t, "frontend from the base", nil, func(overlay string) string {
			return frontend.ReplaceAllString(overlay, "")
		})
	})
	t.Run("tag left to the base", func(t *testing.T) {
		wantNotRunning(t, "frontend from the mirror", nil, func(overlay string) string {
			return frontend.ReplaceAllString(overlay, "  - name: registry.example.com/acme/frontend\n    newName: mirror.example.com/acme/frontend\n")
		})
	})
	t.Run("a transformer after the entries", func(t *testing.T) {
		retag := "apiVersion: builtin\nkind: ImageTagTransformer\nmetadata:\n  name: hotfix\n" +
			"imageTag:\n  name: registry.example.com/acme/frontend\n  newTag: \"9.9.9\"\n"
		wantNotRunning(t, "frontend retagged by a transformer", map[string]string{"hotfix.yaml": retag}, func(overlay string) string {
			return overlay + "transformers:\n  - hotfix.yaml\n"
		})
	})
	t.Run("the base runs the same version", func(t *testing.T) {
		serviceB := regexp.MustCompile(`(?m)^  - name: registry.example.com/acme/service-b\n    newTag: "1.0.0".*\n`)
		vector, dev, edited := handEditDev(t, "service-b from the base, which runs 1.0.0 too", devOverlayFile, nil, func(overlay string) string {
			return serviceB.ReplaceAllString(overlay, "")
		})
		if dev.Status.ActiveVector != vector || dev.Status.Vector != vector {
			t.Errorf("dev reports target %q and active %q, want %s: the base runs service-b at 1.0.0 as the vector does:\n%s",
				dev.Status.Vector, dev.Status.ActiveVector, vector, edited)
		}
	})
}

// wantNotRunning requires that dev, after handEditDev, reports the vector
// its overlay names neither as its target nor as active.
func wantNotRunning(t *testing.T, message string, files map[string]string, edit func(overlay string) string) {
	t.Helper()
	vector, dev, edited := handEditDev(t, message, devOverlayFile, files, edit)
	if dev.Status.ActiveVector == vector || dev.Status.Vector == vector {
		t.Errorf("dev reports %s as target %q and active %q, but its overlay (%s) does not run it:\n%s",
			vector, dev.Status.Vector, dev.Status.ActiveVector, message, edited)
	}
}

// devOverlayFile is dev's kustomization file in the closed loop's repository.
const devOverlayFile = "apps/overlays/dev/kustomization.yaml"

// handEditDev runs the closed loop until dev runs a vector, pushes edit of
// file by hand (dev's overlay keeps its vector annotation) with files
// added to its directory, has Flux report that revision healthy, runs
// again and returns the vector, dev as the state branch then holds it,
// and the edited file.
func handEditDev(t *testing.T, message, file string, files map[string]string, edit func(content string) string) (vector string, dev *v1alpha1.Stage, edited string) {
	t.Helper()
	l := startClosedLoop(t)
	srv, name, clock, repo, c := l.srv, l.name, l.clock, l.repo, l.newController()
	ctx := context.Background()
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	vector = readDriftState(t, repo).Stages["dev/dev"].Status.Vector
	if vector == "" {
		t.Fatal("dev runs no vector after the first passes")
	}

	work := t.TempDir()
	testutil.Git(t, work, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials(name), ".")
	path := filepath.Join(work, filepath.FromSlash(file))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited = edit(string(data))
	if edited == string(data) || file == devOverlayFile && !strings.Contains(edited, vector) {
		t.Fatalf("the edit changed nothing in %s, or dev's overlay no longer names %s:\n%s", file, vector, data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFiles(t, filepath.Dir(path), files)
	testutil.Git(t, work, nil, "add", "-A")
	testutil.Git(t, work, nil, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-qm", message)
	testutil.Git(t, work, nil, "push", "-q", "origin", "main")
	revision := strings.TrimSpace(testutil.Git(t, work, nil, "rev-parse", "HEAD"))

	c.ReportDeployment(deployments.Report{Deployment: devKustomization, Revision: revision, Outcome: deployments.Healthy,
		Reason: "ReconciliationSucceeded", At: clock.now(), Channel: deployments.ChannelFlux})
	clock.advance(time.Minute)
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if dev = readDriftState(t, repo).Stages["dev/dev"]; dev == nil {
		t.Fatalf("no stage dev on the state branch after revision %s", revision)
	}
	return vector, dev, edited
}

// TestAHealthyRevisionWhoseBaseMovesTheImageAwayIsNotActive: a person
// makes the base run frontend from another repository. dev's overlay is
// untouched and still names the vector, but its entry for frontend now
// matches no container. Flux applies that revision and reports it healthy:
// what runs there is not the vector, so dev does not report it active.
func TestAHealthyRevisionWhoseBaseMovesTheImageAwayIsNotActive(t *testing.T) {
	vector, dev, edited := handEditDev(t, "frontend from its next repository", "apps/base/frontend.yaml", nil, func(base string) string {
		return strings.Replace(base, "image: registry.example.com/acme/frontend:", "image: registry.example.com/acme/frontend-next:", 1)
	})
	if dev.Status.ActiveVector == vector || dev.Status.Vector == vector {
		t.Errorf("dev reports %s as target %q and active %q at a revision whose base runs frontend from another repository:\n%s",
			vector, dev.Status.Vector, dev.Status.ActiveVector, edited)
	}
}

// TestAPatchThatMovesTheImageAwayLeavesTheStageRunningNone: dev's overlay
// keeps every entry and adds a patch (kustomize applies patches before the
// entries) that runs frontend from another repository. No entry names
// another version, yet dev runs none of the vector.
func TestAPatchThatMovesTheImageAwayLeavesTheStageRunningNone(t *testing.T) {
	patch := "patches:\n  - target: {kind: Deployment, name: frontend}\n    patch: |-\n" +
		"      - op: replace\n        path: /spec/template/spec/containers/0/image\n" +
		"        value: registry.example.com/acme/frontend-next:9.9.9\n"
	wantNotRunning(t, "frontend from its next repository, by a patch", nil, func(overlay string) string {
		return overlay + patch
	})
}

// TestAnOverlayThatDoesNotBuildRunsNone: a person adds a resource that is
// not there to dev's overlay. Flux cannot apply it, and nothing can say
// what it runs: dev names no vector as its target, nor as active.
func TestAnOverlayThatDoesNotBuildRunsNone(t *testing.T) {
	wantNotRunning(t, "add a resource that is not there", nil, func(overlay string) string {
		return strings.Replace(overlay, "  - namespace.yaml\n", "  - namespace.yaml\n  - missing.yaml\n", 1)
	})
}

// TestAReportFromAClockAheadDoesNotHoldItsRevision: dev's deployer runs on
// a clock a day ahead and reports the revision healthy; an hour later
// (by the controller's clock) a deployer with a true clock reports it
// failed. A report cannot have been made after it arrived, so the failure
// is the newer word: dev is not Active, and its version is not Ready.
func TestAReportFromAClockAheadDoesNotHoldItsRevision(t *testing.T) {
	l := startClosedLoop(t)
	clock, c := l.clock, l.newController()
	ctx := context.Background()
	run := func(what string) *reconcilers.State {
		t.Helper()
		if _, err := c.RunUntilStable(ctx, 10); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return readDriftState(t, l.repo)
	}
	vector := run("first passes").Stages["dev/dev"].Status.Vector
	revision := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", l.srv.BarePath(l.name), "rev-parse", "main"))

	c.ReportDeployment(deployments.Report{Deployment: devKustomization, Revision: revision, Outcome: deployments.Healthy,
		Reason: "ReconciliationSucceeded", At: clock.now().Add(24 * time.Hour), Channel: deployments.ChannelFlux})
	if dev := run("healthy report from a day ahead").Stages["dev/dev"]; dev.Status.ActiveVector != vector {
		t.Fatalf("dev active %q after a healthy report, want %s", dev.Status.ActiveVector, vector)
	}

	clock.advance(time.Hour)
	c.ReportDeployment(deployments.Report{Deployment: devKustomization, Revision: revision, Outcome: deployments.Failed,
		Reason: "HealthCheckFailed", Message: "timeout waiting for: [Deployment/acme-dev/frontend status: 'InProgress']",
		At: clock.now(), Channel: deployments.ChannelFlux})
	s := run("failed report an hour later")
	if a := meta.FindStatusCondition(s.Stages["dev/dev"].Status.Conditions, v1alpha1.ActiveCondition); a == nil || a.Status != metav1.ConditionFalse {
		t.Errorf("dev's Active condition %+v after the later failure, want False", a)
	}
	sv := s.StageVersions[reconcilers.StageVersionName("dev", "dev", vector)]
	if r := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ReadyCondition); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("StageVersion %s Ready %+v after the later failure, want False", sv.Name, r)
	}
}
