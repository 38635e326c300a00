package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// Shape of the reports benchmark: reportStages stages, each deployed by a
// Flux Kustomization of its own, whose overlays changed vector in
// reportRevisions commits; a burst is one report per stage and revision.
const (
	reportStages    = 200
	reportRevisions = 5
)

// BenchmarkDeploymentReports measures a burst of 1,000 deployer reports
// over 200 stages (five revisions each, in random order, newest alternating
// between healthy and failed so every burst changes the state): the pass
// that applies them, from the last report queued to its state commit. Each
// burst must land in exactly one state commit. Reported: ms/burst (wall,
// the pass), us/report (wall) and cpu-us/report (the process's user+system
// CPU over the pass, the in-process git server included: an upper bound).
func BenchmarkDeploymentReports(b *testing.B) {
	f := newReportsFixture(b)
	ctx := context.Background()
	c := f.controller(b)
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		b.Fatal(err)
	}
	burst := func(round int) []deployments.Report {
		rng := rand.New(rand.NewPCG(1, uint64(round)))
		var out []deployments.Report
		for s := 0; s < reportStages; s++ {
			for r, rev := range f.revisions {
				rep := deployments.Report{Deployment: v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization,
					Name: reportStage(s), Namespace: "flux-system"}, Revision: "main@sha1:" + rev, Outcome: deployments.Healthy,
					Reason: "ReconciliationSucceeded", At: time.Now(), Channel: deployments.ChannelFlux}
				if r == len(f.revisions)-1 && round%2 == 1 {
					rep.Outcome, rep.Reason, rep.Message = deployments.Failed, "HealthCheckFailed", "timeout waiting for: [Deployment/app]"
				}
				out = append(out, rep)
			}
		}
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	apply := func(b *testing.B, round int) time.Duration {
		for _, r := range burst(round) {
			c.ReportDeployment(r)
		}
		start := time.Now()
		res, err := c.Pass(ctx)
		elapsed := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Commit.IsZero() {
			b.Fatalf("burst %d made no state commit", round)
		}
		if left := c.takeDeploymentReports(); len(left) > 0 {
			b.Fatalf("burst %d left %d reports for another pass", round, len(left))
		}
		return elapsed
	}
	apply(b, 0) // records the StageVersions of every reported vector
	round := 1
	var wall time.Duration
	cpu0 := cpuTime()
	for b.Loop() {
		wall += apply(b, round)
		round++
	}
	n := float64(round - 1)
	b.ReportMetric(float64(wall.Milliseconds())/n, "ms/burst")
	b.ReportMetric(float64(wall.Microseconds())/n/float64(reportStages*reportRevisions), "us/report")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/n/float64(reportStages*reportRevisions), "cpu-us/report")
}

// TestDeploymentReportBurstIsOneStateCommit: a burst of reports over many
// stages is applied by one pass in one state commit, and an older
// revision's report never overrides a newer one, whatever the order.
func TestDeploymentReportBurstIsOneStateCommit(t *testing.T) {
	f := newReportsFixture(t)
	ctx := context.Background()
	c := f.controller(t)
	if _, err := c.RunUntilStable(ctx, 10); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var reports []deployments.Report
	for s := 0; s < 20; s++ {
		for _, rev := range f.revisions {
			reports = append(reports, deployments.Report{Deployment: v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization,
				Name: reportStage(s), Namespace: "flux-system"}, Revision: rev, Outcome: deployments.Healthy, At: time.Now()})
		}
	}
	rng.Shuffle(len(reports), func(i, j int) { reports[i], reports[j] = reports[j], reports[i] })
	before := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", f.srv.BarePath("reports.git"), "rev-parse", DefaultStateBranch))
	for _, r := range reports {
		c.ReportDeployment(r)
	}
	res, err := c.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", f.srv.BarePath("reports.git"), "rev-parse", DefaultStateBranch))
	if n := strings.TrimSpace(testutil.Git(t, t.TempDir(), nil, "--git-dir", f.srv.BarePath("reports.git"), "rev-list", "--count", before+".."+after)); n != "1" {
		t.Errorf("the burst made %s state commits, want 1", n)
	}
	if res.Commit.String() != after {
		t.Errorf("the pass reports commit %s, the branch is at %s", res.Commit, after)
	}
	repo, err := source.Open(f.url, f.auth(f.url))
	if err != nil {
		t.Fatal(err)
	}
	state := readDriftState(t, repo)
	newest := f.revisions[len(f.revisions)-1]
	for s := 0; s < 20; s++ {
		st := state.Stages["l/"+reportStage(s)]
		if st.Status.ActiveRevision != newest || st.Status.ActiveVector != reportVector(len(f.revisions)-1) {
			t.Errorf("stage %s active %s at %s, want %s at the newest revision %s", reportStage(s), st.Status.ActiveVector,
				st.Status.ActiveRevision, reportVector(len(f.revisions)-1), newest)
		}
	}
	if st := state.Stages["l/"+reportStage(20)]; st.Status.ActiveVector != "" {
		t.Errorf("stage %s, which no report named, claims %s active", reportStage(20), st.Status.ActiveVector)
	}
}

type reportsFixture struct {
	srv       *testutil.GitServer
	url, work string
	signer    gitwriter.Signer
	revisions []string // oldest first
}

func (f *reportsFixture) auth(string) source.Auth {
	return source.Auth{Username: f.srv.Username, Password: f.srv.Password}
}

func (f *reportsFixture) controller(tb testing.TB) *Controller {
	tb.Helper()
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: f.signer})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := New(Options{URL: f.url, Branch: "main", Writer: w, Auth: f.auth})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newReportsFixture is a repository of reportStages stages, each deployed by
// Kustomization flux-system/<stage>, whose overlays move to a new vector in
// each of reportRevisions commits.
func newReportsFixture(tb testing.TB) *reportsFixture {
	tb.Helper()
	testutil.RequireGit(tb)
	f := &reportsFixture{srv: testutil.StartGitServer(tb)}
	key := testutil.NewOpenPGPKey(tb, "vectorflow", "vectorflow@vectorflow.dev", nil)
	var err error
	if f.signer, err = gitwriter.NewSigner(key.PrivateArmored, nil); err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	files := map[string]string{
		"apps/base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n",
		"apps/base/deployment.yaml":    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: registry.example.com/app\n",
		"vectorflow/landscapes.yaml":   "apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: l\nspec: {}\n",
	}
	var stages strings.Builder
	for s := 0; s < reportStages; s++ {
		fmt.Fprintf(&stages, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n  landscape: l\n  path: apps/overlays/%s\n"+
			"  deployment: {kind: Kustomization, name: %s, namespace: flux-system}\n", reportStage(s), reportStage(s), reportStage(s))
	}
	files["vectorflow/stages.yaml"] = stages.String()
	overlays := func(r int) {
		for s := 0; s < reportStages; s++ {
			files["apps/overlays/"+reportStage(s)+"/kustomization.yaml"] = fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"+
				"metadata:\n  name: %s\n  annotations:\n    vectorflow.dev/vector: %s\nnamespace: %s\nresources:\n  - ../../base\n"+
				"images:\n  - name: registry.example.com/app\n    newTag: \"1.0.%d\"\n", reportStage(s), reportVector(r), reportStage(s), r)
		}
	}
	overlays(0)
	testutil.WriteFiles(tb, dir, files)
	f.srv.InitRepo(tb, dir, "main", "reports.git")
	f.url = f.srv.HTTPURL("reports.git")
	f.work = tb.TempDir()
	testutil.Git(tb, f.work, nil, "clone", "-q", "--branch", "main", f.srv.HTTPURLWithCredentials("reports.git"), ".")
	f.revisions = append(f.revisions, strings.TrimSpace(testutil.Git(tb, f.work, nil, "rev-parse", "HEAD")))
	for r := 1; r < reportRevisions; r++ {
		files = map[string]string{}
		overlays(r)
		testutil.WriteFiles(tb, f.work, files)
		testutil.Git(tb, f.work, nil, "commit", "-qam", fmt.Sprintf("vector %d", r))
		f.revisions = append(f.revisions, strings.TrimSpace(testutil.Git(tb, f.work, nil, "rev-parse", "HEAD")))
	}
	testutil.Git(tb, f.work, nil, "push", "-q", "origin", "HEAD:main")
	return f
}

func reportStage(s int) string  { return fmt.Sprintf("s%03d", s) }
func reportVector(r int) string { return fmt.Sprintf("app:2026.1.%d-000000000Z", r+1) }
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
