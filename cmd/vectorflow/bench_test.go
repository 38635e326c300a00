package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/examples"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/demo"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/webhook"
)

// BenchmarkEventToCommit measures, per iteration, the time from a signed
// GitHub push webhook (for a template change already pushed) to the dev
// overlay's promotion commit on the git server, through the Runner and the
// webhook handler `run --listen` serves. Run it with a fixed count, e.g.
// -benchtime 20x; it reports the median as ms/event-median.
func BenchmarkEventToCommit(b *testing.B) {
	srv := testutil.StartGitServer(b)
	quickstart, err := fs.Sub(examples.Quickstart, "quickstart")
	if err != nil {
		b.Fatal(err)
	}
	url := benchRepository(b, srv, "acme.git", benchFiles(b, quickstart))
	bare := srv.BarePath("acme.git")
	c := benchController(b, srv, url)
	runner := controller.NewRunner(time.Hour, logr.Discard(), c)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); runner.Run(ctx) }()
	b.Cleanup(func() { cancel(); wg.Wait() })

	secret := []byte("bench-secret")
	hooks := httptest.NewServer(webhook.NewHandler(webhook.Options{Secret: secret,
		OnEvent: func(e webhook.Event) { triggerFor(runner, e, logr.Discard()) }}))
	b.Cleanup(hooks.Close)

	benchWait(b, time.Minute, "the first promotion to dev", func() bool {
		return strings.Contains(benchLastMessage(b, bare, "apps/overlays/dev"), "Vectorflow-Promotion: latest-to-dev-1")
	})
	benchSettle(b, bare)
	work := b.TempDir()
	testutil.Git(b, work, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("acme.git"), ".")

	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		want := fmt.Sprintf("Vectorflow-Promotion: latest-to-dev-%d", i+2)
		head := benchPushTemplate(b, work, "service-a", fmt.Sprintf("1.%d.0", i+10))
		body := githubPush(url, head)
		b.StartTimer()
		sent := time.Now()
		if status := benchPost(b, hooks.URL+"/hooks/github", body, secret); status != http.StatusAccepted {
			b.Fatalf("webhook answered %d", status)
		}
		benchWait(b, 30*time.Second, want, func() bool {
			return strings.Contains(benchLastMessage(b, bare, "apps/overlays/dev"), want)
		})
		latencies = append(latencies, time.Since(sent))
		b.StopTimer()
		benchSettle(b, bare)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "ms/event-median")
	b.ReportMetric(float64(latencies[len(latencies)*9/10].Microseconds())/1000, "ms/event-p90")
}

// BenchmarkSteadyState100Repos runs one Runner (interval 1s, or
// VECTORFLOW_BENCH_INTERVAL; run's default is 1m) over many
// repositories of a 20-stage chain, all automatic. After they settle it
// measures, over a fixed wall time with nothing changing, the CPU the
// process uses per wall second and the heap in use, then the time one
// template change takes to reach the last stage. VECTORFLOW_BENCH_REPOS
// (default 100), VECTORFLOW_BENCH_STAGES (default 20) and
// VECTORFLOW_BENCH_WINDOW (default 20s) scale it. The git server runs in
// this process (its HTTP handling counts as ours) and forks git for every
// request (reported apart, as children).
func BenchmarkSteadyState100Repos(b *testing.B) {
	repos := benchEnvInt(b, "VECTORFLOW_BENCH_REPOS", 100)
	stages := benchEnvInt(b, "VECTORFLOW_BENCH_STAGES", 20)
	window, err := time.ParseDuration(benchEnv("VECTORFLOW_BENCH_WINDOW", "20s"))
	if err != nil {
		b.Fatal(err)
	}
	interval, err := time.ParseDuration(benchEnv("VECTORFLOW_BENCH_INTERVAL", "1s"))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		srv := testutil.StartGitServer(b)
		files := chainRepository(stages)
		var controllers []*controller.Controller
		urls := make([]string, repos)
		for r := range repos {
			name := fmt.Sprintf("chain-%03d.git", r)
			urls[r] = benchRepository(b, srv, name, files)
			controllers = append(controllers, benchController(b, srv, urls[r]))
		}
		runner := controller.NewRunner(interval, logr.Discard(), controllers...)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		start := time.Now()
		go func() { defer wg.Done(); runner.Run(ctx) }()

		last := fmt.Sprintf("apps/overlays/dev%d", stages)
		for r := range repos {
			bare := srv.BarePath(fmt.Sprintf("chain-%03d.git", r))
			benchWait(b, 30*time.Minute, "repository "+bare+" to reach its last stage", func() bool {
				return strings.Contains(benchLastMessage(b, bare, last), "Vectorflow-Promotion: ")
			})
		}
		settled := time.Since(start)
		for r := range repos {
			benchSettle(b, srv.BarePath(fmt.Sprintf("chain-%03d.git", r)))
		}

		var self0, child0 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &child0)
		t0 := time.Now()
		stopProfile := benchCPUProfile(b)
		time.Sleep(window)
		stopProfile()
		var self1, child1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &child1)
		wall := time.Since(t0).Seconds()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heapInUse := ms.HeapInuse
		runtime.GC()
		runtime.ReadMemStats(&ms)

		// One template change, carried from the first stage to the last by
		// the Runner alone (an immediate trigger stands in for the webhook).
		bare := srv.BarePath("chain-000.git")
		work := b.TempDir()
		testutil.Git(b, work, nil, "clone", "-q", "--branch", "main", srv.HTTPURLWithCredentials("chain-000.git"), ".")
		benchPushTemplate(b, work, "app", "2.0.0")
		pushed := time.Now()
		runner.Trigger(urls[0], "")
		benchWait(b, 5*time.Minute, "the change to reach "+last, func() bool {
			return strings.Contains(benchFileAtMain(b, bare, last+"/kustomization.yaml"), `newTag: "2.0.0"`)
		})
		propagation := time.Since(pushed)
		cancel()
		wg.Wait()

		b.ReportMetric(float64(repos), "repos")
		b.ReportMetric(float64(stages), "stages/repo")
		b.ReportMetric(settled.Seconds(), "s-to-settle")
		b.ReportMetric(100*cpuSeconds(self0, self1)/wall, "%core-self")
		b.ReportMetric(100*cpuSeconds(child0, child1)/wall, "%core-git-children")
		b.ReportMetric(float64(heapInUse)/(1<<20), "MB-heap-inuse")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-heap-inuse-after-gc")
		b.ReportMetric(float64(propagation.Milliseconds()), fmt.Sprintf("ms-dev1-to-dev%d", stages))
	}
}

// chainRepository is a config repository with one template and a chain of
// automatic stages dev1 → dev2 → … whose overlays share one base.
func chainRepository(stages int) map[string][]byte {
	files := map[string][]byte{
		"vectorflow/kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - landscapes.yaml\n  - stages.yaml\n  - template.yaml\n  - promotions.yaml\n"),
		"vectorflow/landscapes.yaml":    []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: chain\nspec: {}\n"),
		"vectorflow/template.yaml": []byte(`apiVersion: vectorflow.dev/v1alpha1
kind: VectorTemplate
metadata:
  name: acme
spec:
  components:
    - name: registry.example.com/acme/app
      version: "1.0.0"
    - name: registry.example.com/acme/worker
      version: "1.0.0"
`),
		"apps/base/kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n"),
		"apps/base/app.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
        - name: app
          image: registry.example.com/acme/app:0.0.0
        - name: worker
          image: registry.example.com/acme/worker:0.0.0
`),
	}
	var st, pr strings.Builder
	for i := 1; i <= stages; i++ {
		fmt.Fprintf(&st, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: dev%d\nspec:\n  landscape: chain\n  path: apps/overlays/dev%d\n", i, i)
		source := "    kind: VectorTemplate\n    name: acme\n"
		name := "to-dev1"
		if i > 1 {
			source = fmt.Sprintf("    kind: Stage\n    name: dev%d\n    landscape: chain\n", i-1)
			name = fmt.Sprintf("dev%d-to-dev%d", i-1, i)
		}
		fmt.Fprintf(&pr, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: %s\nspec:\n  source:\n%s  target:\n    kind: Stage\n    name: dev%d\n    landscape: chain\n  approval:\n    required: false\n", name, source, i)
		files[fmt.Sprintf("apps/overlays/dev%d/kustomization.yaml", i)] = []byte(fmt.Sprintf(
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: dev%d\nresources:\n  - ../../base\nimages:\n  - name: registry.example.com/acme/app\n    newTag: \"0.0.0\"\n  - name: registry.example.com/acme/worker\n    newTag: \"0.0.0\"\n", i))
	}
	files["vectorflow/stages.yaml"] = []byte(st.String())
	files["vectorflow/promotions.yaml"] = []byte(pr.String())
	return files
}

func benchFiles(b *testing.B, fsys fs.FS) map[string][]byte {
	b.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files[p], err = fs.ReadFile(fsys, p)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return files
}

func benchRepository(b *testing.B, srv *testutil.GitServer, name string, files map[string][]byte) string {
	b.Helper()
	dir := b.TempDir()
	if err := demo.WriteFiles(dir, files); err != nil {
		b.Fatal(err)
	}
	srv.InitRepo(b, dir, "main", name)
	return srv.HTTPURL(name)
}

func benchController(b *testing.B, srv *testutil.GitServer, url string) *controller.Controller {
	b.Helper()
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@vectorflow.dev", nil)
	signer, err := gitwriter.NewSigner(key.PrivateArmored, nil)
	if err != nil {
		b.Fatal(err)
	}
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: signer})
	if err != nil {
		b.Fatal(err)
	}
	auth := source.Auth{Username: srv.Username, Password: srv.Password}
	c, err := controller.New(controller.Options{URL: url, Branch: "main", Writer: w, Log: logr.Discard(),
		Auth: func(string) source.Auth { return auth }})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchVersionLine = regexp.MustCompile(`(?m)(name: registry\.example\.com/acme/%s\n\s+version: )"[^"]*"`)

// benchPushTemplate sets a component's version in the template, pushed by
// a person with the git binary, and returns the new head.
func benchPushTemplate(b *testing.B, work, component, version string) string {
	b.Helper()
	testutil.Git(b, work, nil, "fetch", "-q", "origin", "main")
	testutil.Git(b, work, nil, "reset", "-q", "--hard", "origin/main")
	file := filepath.Join(work, "vectorflow", "template.yaml")
	old, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	re := regexp.MustCompile(strings.Replace(benchVersionLine.String(), "%s", regexp.QuoteMeta(component), 1))
	next := re.ReplaceAll(old, []byte(`${1}"`+version+`"`))
	if bytes.Equal(next, old) {
		b.Fatalf("template.yaml has no version of %s to change:\n%s", component, old)
	}
	if err := os.WriteFile(file, next, 0o644); err != nil {
		b.Fatal(err)
	}
	testutil.Git(b, work, nil, "commit", "-qam", "bump "+component+" to "+version)
	testutil.Git(b, work, nil, "push", "-q", "origin", "main")
	return strings.TrimSpace(testutil.Git(b, work, nil, "rev-parse", "HEAD"))
}

func benchPost(b *testing.B, url string, body, secret []byte) int {
	b.Helper()
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// benchLastMessage is the message of the newest commit on main that changed
// dir, read from the bare repository with go-git (no process per poll).
func benchLastMessage(b *testing.B, bare, dir string) string {
	b.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		b.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		b.Fatal(err)
	}
	iter, err := repo.Log(&git.LogOptions{From: ref.Hash(), PathFilter: func(p string) bool { return strings.HasPrefix(p, dir+"/") }})
	if err != nil {
		b.Fatal(err)
	}
	defer iter.Close()
	c, err := iter.Next()
	if err != nil {
		return ""
	}
	return c.Message
}

func benchFileAtMain(b *testing.B, bare, file string) string {
	b.Helper()
	repo, err := git.PlainOpen(bare)
	if err != nil {
		b.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		b.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		b.Fatal(err)
	}
	f, err := c.File(file)
	if err != nil {
		return ""
	}
	s, _ := f.Contents()
	return s
}

// benchSettle waits until neither main nor the state branch has moved for
// half a second.
func benchSettle(b *testing.B, bare string) {
	b.Helper()
	tips := func() string {
		repo, err := git.PlainOpen(bare)
		if err != nil {
			b.Fatal(err)
		}
		var out []string
		for _, branch := range []string{"main", controller.DefaultStateBranch} {
			if ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true); err == nil {
				out = append(out, ref.Hash().String())
			}
		}
		return strings.Join(out, " ")
	}
	last, since := tips(), time.Now()
	benchWait(b, 5*time.Minute, "repository "+bare+" to settle", func() bool {
		if now := tips(); now != last {
			last, since = now, time.Now()
		}
		return time.Since(since) > 500*time.Millisecond
	})
}

func benchWait(b *testing.B, timeout time.Duration, what string, ok func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// benchCPUProfile profiles the steady-state window into
// $VECTORFLOW_BENCH_CPUPROFILE when it is set (-cpuprofile would include
// the settling).
func benchCPUProfile(b *testing.B) (stop func()) {
	b.Helper()
	path := os.Getenv("VECTORFLOW_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func cpuSeconds(from, to syscall.Rusage) float64 {
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(to.Utime) - tv(from.Utime) + tv(to.Stime) - tv(from.Stime)
}

func benchEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func benchEnvInt(b *testing.B, name string, def int) int {
	b.Helper()
	n, err := strconv.Atoi(benchEnv(name, strconv.Itoa(def)))
	if err != nil || n < 1 {
		b.Fatalf("%s must be a positive number", name)
	}
	return n
}
