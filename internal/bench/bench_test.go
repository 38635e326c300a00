package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestBench is `make bench`: per shape and size it builds the repository
// on one loopback git server and times, as separate processes,
// vectorflow's validate, a cold and a warm `run --once` and one template
// promotion (`run --once` after the bump); then, in one running `run`
// (--listen), an unchanged pass a webhook triggers and one promotion from
// the webhook of a bump to the overlay on the server; then the shell way
// (clone + kustomize edit set image + git commit -S + push) and the floor
// (a bare git push of one commit). It prints medians, ratios, peak RSS per
// step, exponents and each goal of issue 17 met or missed.
//
// Every repository gets caches of its own (VECTORFLOW_CACHE_DIR): validate
// and the cold run each start from an empty one, the warm run, the
// promotion and the running `run` reuse the cold run's.
//
// For the auto shape, where a template change must reach the last of a
// deep chain of automatic stages, a run --once that does not settle or a
// change that does not get there is shown as "failed" (the goal missed);
// any other failure stops the bench.
//
// Without settings it is the small version `make test` runs (10 and 100
// stages once, 8 MB of blobs), which checks that every cell is measured.
// VECTORFLOW_BENCH_SIZES (e.g. 10,100,1000,10000), VECTORFLOW_BENCH_SHAPES
// (chain,apps,apps-auto,auto,blobs), VECTORFLOW_BENCH_REPS (runs per
// repository below 1,000 stages; larger ones and blobs run once),
// VECTORFLOW_BENCH_BLOB_MB and VECTORFLOW_BENCH_OUT (a file for the table)
// scale it;
// VECTORFLOW_BENCH_PROFILE=1 profiles every vectorflow step and prints the
// top of vectorflow's own functions under the table; the profiles are kept
// in VECTORFLOW_BENCH_PROFILE_DIR when it is set (for go tool pprof).
func TestBench(t *testing.T) {
	o := benchOptions(t)
	h := newHarness(t, o.profile, o.profileDir)
	load := loadAverage()
	var samples []Sample
	for _, shape := range o.shapes {
		sizes := o.sizes
		switch shape {
		case Blobs:
			sizes = []int{10}
		case Auto:
			sizes = autoSizes(o)
		case AppsAuto:
			if !o.sizesSet {
				sizes = []int{10} // ten passes over every config cold, ten a bump
			}
		}
		for _, n := range sizes {
			repo, err := Generate(shape, n, h.approver, o.blobBytes)
			if err != nil {
				t.Fatal(err)
			}
			reps := o.reps
			if n >= 1000 || shape == Blobs {
				reps = 1 // minutes each on 2 shared cores
			}
			samples = append(samples, h.measure(t, repo, reps)...)
		}
	}
	rows := Rows(samples)
	var out bytes.Buffer
	fmt.Fprintf(&out, "vectorflow bench: %d CPUs, load average %s before, %s after; blobs %d MB\n\n",
		runtime.NumCPU(), load, loadAverage(), o.blobBytes>>20)
	if err := Print(&out, rows); err != nil {
		t.Fatal(err)
	}
	if err := PrintGoals(&out, Goals(rows, o.blobBytes)); err != nil {
		t.Fatal(err)
	}
	h.printProfiles(t, &out)
	fmt.Print("\n" + out.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		for _, s := range Steps {
			switch {
			case r.Failed[s] && r.Shape != Auto:
				t.Errorf("%s %d: %s failed", r.Shape, r.Stages, s)
			case r.Median[s] <= 0 && !r.Failed[s]:
				t.Errorf("%s %d: %s was not measured", r.Shape, r.Stages, s)
			}
			if vectorflowStep(s) && r.RSS[s] <= 0 {
				t.Errorf("%s %d: no peak RSS for vectorflow's %s", r.Shape, r.Stages, s)
			}
		}
		if r.MaxRSS <= 0 {
			t.Errorf("%s %d: no peak RSS for vectorflow", r.Shape, r.Stages)
		}
	}
}

// autoSizes are the sizes of the auto shape: its chain moves one stage a
// pass, each pass over every config, so the small version runs 10 stages
// only, and no run goes beyond 1,000 (about a minute for run --once, and
// six for a running run, which pushes every hop).
func autoSizes(o options) []int {
	if !o.sizesSet {
		return []int{10}
	}
	var sizes []int
	for _, n := range o.sizes {
		if n <= 1000 {
			sizes = append(sizes, n)
		}
	}
	return sizes
}

type options struct {
	sizesSet  bool
	sizes     []int
	shapes    []Shape
	reps      int
	blobBytes int64
	out       string
	profile   bool
	// profileDir keeps the profiles for a closer look; "" deletes them
	// with the test's temporary directory.
	profileDir string
}

func benchOptions(t *testing.T) options {
	t.Helper()
	o := options{sizes: []int{10, 100}, shapes: []Shape{Chain, Apps, AppsAuto, Auto, Blobs}, reps: 1, blobBytes: 8 << 20,
		out: os.Getenv("VECTORFLOW_BENCH_OUT"), profile: os.Getenv("VECTORFLOW_BENCH_PROFILE") == "1",
		profileDir: os.Getenv("VECTORFLOW_BENCH_PROFILE_DIR")}
	if v := os.Getenv("VECTORFLOW_BENCH_SIZES"); v != "" {
		o.sizes, o.sizesSet = nil, true
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 10 {
				t.Fatalf("VECTORFLOW_BENCH_SIZES: %q is not a number of stages of at least 10", f)
			}
			o.sizes = append(o.sizes, n)
		}
	}
	if v := os.Getenv("VECTORFLOW_BENCH_SHAPES"); v != "" {
		o.shapes = nil
		for _, f := range strings.Split(v, ",") {
			o.shapes = append(o.shapes, Shape(strings.TrimSpace(f)))
		}
	}
	if v := os.Getenv("VECTORFLOW_BENCH_REPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("VECTORFLOW_BENCH_REPS: %q is not a positive number", v)
		}
		o.reps = n
	}
	if v := os.Getenv("VECTORFLOW_BENCH_BLOB_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("VECTORFLOW_BENCH_BLOB_MB: %q is not a positive number", v)
		}
		o.blobBytes = int64(n) << 20
	}
	return o
}

// harness holds what every measurement shares: one git server, the built
// binary, the keys.
type harness struct {
	srv        *testutil.GitServer
	bin        string
	kustomize  string
	signingKey string // the controller's OpenPGP key file
	shellKey   string // the person's SSH key file for git commit -S
	approver   []byte // an armored OpenPGP public key every approval names
	secretFile string // the webhook secret of the running run
	secret     []byte
	env        []string
	repos      int
	// profiles is where CPU profiles go, "" for none; profiled lists them
	// in the order they were taken.
	profiles string
	profiled []profile
}

// profile is the CPU profile of one vectorflow step at one repository.
type profile struct {
	shape  Shape
	stages int
	step   Step
	file   string
}

func newHarness(t *testing.T, profiles bool, profileDir string) *harness {
	t.Helper()
	keys := t.TempDir()
	h := &harness{srv: testutil.StartGitServer(t), kustomize: testutil.KustomizeBinary(t)}
	h.bin = filepath.Join(t.TempDir(), "vectorflow")
	if out, err := exec.Command("go", "build", "-o", h.bin, "../../cmd/vectorflow").CombinedOutput(); err != nil {
		t.Fatalf("go build vectorflow: %v\n%s", err, out)
	}
	if profiles {
		h.profiles = profileDir
		if h.profiles == "" {
			h.profiles = t.TempDir()
		} else if err := os.MkdirAll(h.profiles, 0o755); err != nil {
			t.Fatalf("VECTORFLOW_BENCH_PROFILE_DIR: %v", err)
		}
	}
	controller := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	h.signingKey = writeFile(t, keys, "controller.asc", controller.PrivateArmored)
	h.approver = testutil.NewOpenPGPKey(t, "alice", "alice@example.com", nil).PublicArmored
	h.shellKey = writeFile(t, keys, "person", testutil.NewSSHKey(t, nil).PrivatePEM)
	h.secret = []byte(fmt.Sprintf("bench-%d", time.Now().UnixNano()))
	h.secretFile = writeFile(t, keys, "webhook-secret", h.secret)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VECTORFLOW_") {
			h.env = append(h.env, kv)
		}
	}
	h.env = append(h.env, "VECTORFLOW_GIT_USERNAME="+h.srv.Username, "VECTORFLOW_GIT_PASSWORD="+h.srv.Password,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Pat", "GIT_AUTHOR_EMAIL=pat@example.com", "GIT_COMMITTER_NAME=Pat", "GIT_COMMITTER_EMAIL=pat@example.com",
		"HOME="+keys)
	return h
}

// measure runs every step reps times, each time on a fresh copy of repo.
func (h *harness) measure(t *testing.T, repo Repository, reps int) []Sample {
	t.Helper()
	fixture := t.TempDir()
	if err := repo.Write(fixture); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, fixture, nil, "init", "-q", "-b", "main")
	// Blobs go straight into a pack, undeltified, as a server's large
	// files are, so neither the bench nor the server spends minutes
	// searching deltas between random bytes.
	testutil.Git(t, fixture, nil, "config", "core.bigFileThreshold", "1m")
	testutil.Git(t, fixture, nil, "add", "-A")
	testutil.Git(t, fixture, nil, "commit", "-qm", fmt.Sprintf("%s of %d stages", repo.Shape, repo.Stages))
	// The server holds the repository in a pack, as a push or a forge's
	// housekeeping leaves it: served from loose objects, every full clone
	// (validate, the cold run, the shell way) would wait seconds for the
	// server to compress thousands of objects, a cost no real server has.
	// Without -a the blobs, already packed by git add, are not copied.
	testutil.Git(t, fixture, nil, "repack", "-dq")

	var samples []Sample
	add := func(step Step, d time.Duration, rss int64) {
		samples = append(samples, Sample{Shape: repo.Shape, Stages: repo.Stages, Step: step, Time: d, MaxRSS: rss})
	}
	failed := func() { samples[len(samples)-1].Failed = true }
	for rep := 0; rep < reps; rep++ {
		h.repos++
		name := fmt.Sprintf("%s-%d-%d.git", repo.Shape, repo.Stages, h.repos)
		bare := h.srv.BarePath(name)
		// A local clone hardlinks the fixture's objects: a gigabyte of
		// blobs costs no copy.
		testutil.Git(t, "", nil, "clone", "-q", "--bare", fixture, bare)
		for _, kv := range [][2]string{{"receive.autogc", "false"}, {"gc.auto", "0"}, {"http.receivepack", "true"}, {"core.bigFileThreshold", "1m"}} {
			testutil.Git(t, bare, nil, "config", kv[0], kv[1])
		}
		url := h.srv.HTTPURL(name)
		run := []string{"run", "--once", "--repo", url, "--signing-key", h.signingKey, "--max-repository-size", "4Gi"}
		// The caches of this repository: deleted after it, as a gigabyte
		// of blobs fills them.
		caches, err := os.MkdirTemp(t.TempDir(), "cache-")
		if err != nil {
			t.Fatal(err)
		}
		validateCache, runCache := filepath.Join(caches, "validate"), filepath.Join(caches, "run")
		for _, dir := range []string{validateCache, runCache} {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		// A run --once of Auto that does not settle is the goal missed,
		// shown as such; any other failure stops the bench.
		step := func(s Step, cache string, args ...string) {
			d, rss, out, err := h.vectorflow(t, h.stepEnv(repo, rep, s, cache), args...)
			add(s, d, rss)
			if err != nil {
				if repo.Shape != Auto || !strings.Contains(out, "did not settle") {
					t.Fatalf("vectorflow %s: %v\n%s", strings.Join(args, " "), err, tail(out, 4000))
				}
				t.Logf("%s: vectorflow %s: %s", name, s, tail(out, 300))
				failed()
			}
		}

		// kustomize alone on the same overlays, on as many cores as
		// validate's builds have: the cost below validate's.
		alone, err := KustomizeAlone(repo, runtime.GOMAXPROCS(0))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		add(Kustomize, alone, 0)
		step(Validate, validateCache, "validate", "--repo", url, "--max-repository-size", "4Gi")
		step(Cold, runCache, run...)
		step(Warm, runCache, run...)

		// One promotion: a person bumps the template; run --once carries
		// it into the first stage's overlay (the next stage waits for an
		// approver).
		work := t.TempDir()
		h.git(t, work, "clone", "-q", "--branch", "main", h.srv.HTTPURLWithCredentials(name), ".")
		version := fmt.Sprintf("2.0.%d", rep)
		h.bump(t, work, repo, repo.Version, version)
		step(Promote, runCache, run...)
		if overlay := h.git(t, bare, "show", "main:"+repo.Overlay+"/kustomization.yaml"); !namesTag(overlay, version) {
			if repo.Shape != Auto {
				t.Fatalf("%s: run --once did not promote %s into %s:\n%s", name, version, repo.Overlay, overlay)
			}
			samples[len(samples)-1].Failed = true
		}

		live := h.live(t, repo, rep, url, bare, work, runCache, version, livePromotions(repo, rep))
		add(LiveIdle, live.idle, live.rss)
		if live.unsettled {
			failed()
		}
		add(LiveFetch, live.fetch, live.rss)
		if live.unsettled {
			failed()
		}
		add(LivePromote, live.promote, live.rss)
		if live.promoteFailed {
			failed()
		}

		add(Shell, h.shellPromotion(t, name, repo, fmt.Sprintf("3.0.%d", rep)), 0)
		add(Floor, h.floorPush(t, work, repo), 0)
		if err := os.RemoveAll(caches); err != nil {
			t.Fatal(err)
		}
	}
	return samples
}

// bump is a person changing the template's version from one to another
// and pushing it.
func (h *harness) bump(t *testing.T, work string, repo Repository, from, to string) {
	t.Helper()
	h.git(t, work, "pull", "-q", "--rebase", "origin", "main")
	template := filepath.Join(work, filepath.FromSlash(repo.Template))
	old, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	bumped, err := repo.Bump(old, from, to)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(template), filepath.Base(template), bumped)
	h.git(t, work, "commit", "-qam", "bump to "+to)
	h.git(t, work, "push", "-q", "origin", "main")
}

func namesTag(overlay, version string) bool {
	return strings.Contains(overlay, fmt.Sprintf("newTag: %q", version)) || strings.Contains(overlay, "newTag: "+version+"\n")
}

// stepEnv is the environment of one vectorflow step: its cache directory
// and, when profiling, its CPU profile (the first run's of each step).
func (h *harness) stepEnv(repo Repository, rep int, s Step, cache string) []string {
	env := append(slices.Clone(h.env), "VECTORFLOW_CACHE_DIR="+cache)
	if h.profiles != "" && rep == 0 {
		file := filepath.Join(h.profiles, fmt.Sprintf("%s-%d-%s.pprof", repo.Shape, repo.Stages, s))
		h.profiled = append(h.profiled, profile{shape: repo.Shape, stages: repo.Stages, step: s, file: file})
		env = append(env, "VECTORFLOW_CPUPROFILE="+file)
	}
	return env
}

// vectorflow runs the binary and returns its wall time, peak RSS and
// output.
func (h *harness) vectorflow(t *testing.T, env []string, args ...string) (time.Duration, int64, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var rss int64
	if cmd.ProcessState != nil {
		rss = peakRSS(cmd.ProcessState)
	}
	return d, rss, out.String(), err
}

// liveFigures are what one running `run` measured.
type liveFigures struct {
	idle, fetch time.Duration // an unchanged pass, and its fetch
	promote     time.Duration // webhook of a bump → the overlay on the server (median)
	// promoteFailed is a bump that did not reach the overlay within
	// promoteTimeout; promote is then that timeout.
	promoteFailed bool
	// unsettled is Auto's chain still moving promoteTimeout after the
	// process was ready: nothing was measured.
	unsettled bool
	rss       int64
}

// promoteTimeout bounds one promotion in a running run; a chain of 1,000
// automatic stages that moves one stage a pass may need all of it.
const promoteTimeout = 10 * time.Minute

// livePromotions are the versions a running run promotes, one after the
// other: three, so one slow pass does not make the figure, except for
// Auto, whose one promotion travels a chain of up to 1,000 stages.
func livePromotions(repo Repository, rep int) []string {
	n := 3
	if repo.Shape == Auto {
		n = 1
	}
	var versions []string
	for i := range n {
		versions = append(versions, fmt.Sprintf("2.%d.%d", 1+i, rep))
	}
	return versions
}

// live starts `run` with --listen on the repository, which run --once has
// settled, waits until it is ready and idle, and measures an unchanged pass
// (the median of three, each triggered by a push webhook, read from
// /metrics) and promotions (the median): the template bumped from one
// version to the next and pushed, then the webhook, timed until
// repo.Overlay (the first stage's; an automatic shape's last) on the
// server names the new version; the process is idle again before the next.
func (h *harness) live(t *testing.T, repo Repository, rep int, url, bare, work, cache, from string, to []string) liveFigures {
	t.Helper()
	addr := freeAddress(t)
	cmd := exec.Command(h.bin, "run", "--repo", url, "--signing-key", h.signingKey, "--max-repository-size", "4Gi",
		"--listen", addr, "--interval", "1h", "--webhook-secret-file", h.secretFile)
	cmd.Env = h.stepEnv(repo, rep, Step("live"), cache)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start vectorflow run: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("vectorflow run on %s: %s\n%s", url, fmt.Sprintf(format, args...), tail(out.String(), 4000))
	}
	base := "http://" + addr
	running := func() bool {
		select {
		case <-exited:
			return false
		default:
			return true
		}
	}
	// stop ends the process as an operator does, so it writes its profile.
	stop := func() {
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
			fail("did not stop within a minute of SIGTERM")
		}
	}

	deadline := time.Now().Add(time.Hour)
	for !ready(base) {
		if !running() || time.Now().After(deadline) {
			fail("not ready within an hour")
		}
		time.Sleep(50 * time.Millisecond)
	}
	passes := func() (pass, fetch Histogram) {
		t.Helper()
		text, err := get(base + "/metrics")
		if err != nil {
			fail("read /metrics: %v", err)
		}
		if pass, err = ReadHistogram(text, "vectorflow_reconcile_duration_seconds"); err == nil {
			fetch, err = ReadHistogram(text, "vectorflow_git_fetch_duration_seconds")
		}
		if err != nil {
			fail("%v", err)
		}
		return pass, fetch
	}
	// Idle: no pass ends for three times the last one took (at first, the
	// mean of those so far; at least 300 ms), as passes that change
	// something follow each other at once. It reports false for Auto's
	// chain still moving promoteTimeout after it began waiting.
	settle := func() bool {
		last, _ := passes()
		quiet, lastPass := time.Now(), time.Duration(0)
		settling := time.Now()
		if last.Count > 0 {
			lastPass = time.Duration(last.Sum / float64(last.Count) * float64(time.Second))
		}
		for time.Since(quiet) < max(300*time.Millisecond, 3*lastPass) {
			if !running() {
				fail("exited")
			}
			if time.Now().After(deadline) {
				fail("still passing an hour after it started")
			}
			if repo.Shape == Auto && time.Since(settling) > promoteTimeout {
				return false
			}
			time.Sleep(100 * time.Millisecond)
			now, _ := passes()
			if now.Count != last.Count {
				lastPass = time.Duration((now.Sum - last.Sum) / float64(now.Count-last.Count) * float64(time.Second))
				last, quiet = now, time.Now()
			}
		}
		return true
	}
	if !settle() {
		t.Logf("vectorflow run on %s: the chain still moves %s after the process was ready", url, promoteTimeout)
		stop()
		return liveFigures{unsettled: true, promoteFailed: true, rss: peakRSS(cmd.ProcessState)}
	}

	var idle, fetch []time.Duration
	for range 3 {
		p0, f0 := passes()
		h.pushWebhook(t, base, url)
		p1, f1 := p0, f0
		for deadline := time.Now().Add(10 * time.Minute); p1.Count == p0.Count; p1, f1 = passes() {
			if !running() || time.Now().After(deadline) {
				fail("no pass within 10 minutes of a push webhook")
			}
			time.Sleep(5 * time.Millisecond) // /metrics costs the pass a little CPU
		}
		n := float64(p1.Count - p0.Count)
		idle = append(idle, time.Duration((p1.Sum-p0.Sum)/n*float64(time.Second)))
		fetch = append(fetch, time.Duration((f1.Sum-f0.Sum)/n*float64(time.Second)))
	}

	var figures liveFigures
	var promotions []time.Duration
	for i, version := range to {
		if i > 0 && !settle() {
			fail("the chain still moves %s after promoting %s", promoteTimeout, from)
		}
		took, ok := h.livePromotion(t, repo, url, bare, work, base, from, version, running, fail)
		if !ok {
			figures.promote, figures.promoteFailed = took, true
			break
		}
		promotions = append(promotions, took)
		from = version
	}
	if !figures.promoteFailed {
		figures.promote = Median(promotions)
	}

	stop()
	figures.idle, figures.fetch, figures.rss = Median(idle), Median(fetch), peakRSS(cmd.ProcessState)
	return figures
}

// livePromotion bumps the template from one version to another, sends
// the webhook and waits until repo.Overlay on the server names the new
// version; false when it does not within promoteTimeout.
func (h *harness) livePromotion(t *testing.T, repo Repository, url, bare, work, base, from, to string,
	running func() bool, fail func(string, ...any)) (time.Duration, bool) {
	t.Helper()
	h.bump(t, work, repo, from, to)
	head := h.headOf(t, bare)
	start := time.Now()
	h.pushWebhook(t, base, url)
	for {
		if now := h.headOf(t, bare); now != head {
			head = now
			if namesTag(h.git(t, bare, "show", head+":"+repo.Overlay+"/kustomization.yaml"), to) {
				return time.Since(start), true
			}
		}
		if !running() {
			fail("exited before %s reached %s", to, repo.Overlay)
		}
		if time.Since(start) > promoteTimeout {
			t.Logf("vectorflow run on %s: %s did not reach %s within %s of the webhook", url, to, repo.Overlay, promoteTimeout)
			return time.Since(start), false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// pushWebhook is what GitHub sends on a push to main of the repository,
// signed with the webhook secret.
func (h *harness) pushWebhook(t *testing.T, base, url string) {
	t.Helper()
	body := fmt.Appendf(nil, `{"ref":"refs/heads/main","repository":{"clone_url":%q}}`, url)
	mac := hmac.New(sha256.New, h.secret)
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, base+"/hooks/github", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("push webhook: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("push webhook: %s: %s", resp.Status, answer)
	}
}

// headOf is main's commit in a bare repository, read without starting git
// while the ref is loose (receive-pack writes it so), so polling it takes
// little from the two cores vectorflow runs on.
func (h *harness) headOf(t *testing.T, bare string) string {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(bare, "refs", "heads", "main")); err == nil {
		return strings.TrimSpace(string(b))
	}
	return strings.TrimSpace(h.git(t, bare, "rev-parse", "main"))
}

func ready(base string) bool {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), err
}

// freeAddress is a loopback address nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// printProfiles writes, per profiled step, the top entries of vectorflow's
// own functions by cumulative time.
func (h *harness) printProfiles(t *testing.T, w io.Writer) {
	t.Helper()
	if h.profiles == "" {
		return
	}
	fmt.Fprintln(w, "\nCPU profiles, vectorflow's own functions by cumulative time (flat flat% sum% cum cum%):")
	for _, p := range h.profiled {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=1000", h.bin, p.file).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof %s: %v\n%s", p.file, err, out)
		}
		fmt.Fprintf(w, "\n%s %d %s:\n", p.shape, p.stages, p.step)
		top := OwnTop(string(out), 10)
		if len(top) == 0 {
			fmt.Fprintln(w, "  (no samples in vectorflow's own functions)")
		}
		for _, line := range top {
			fmt.Fprintln(w, "  "+line)
		}
	}
}

// shellPromotion is what a person or a CI script does for one promotion.
func (h *harness) shellPromotion(t *testing.T, name string, repo Repository, version string) time.Duration {
	t.Helper()
	work := t.TempDir()
	start := time.Now()
	h.git(t, work, "clone", "-q", "--branch", "main", h.srv.HTTPURLWithCredentials(name), ".")
	cmd := exec.Command(h.kustomize, "edit", "set", "image", repo.Image+":"+version)
	cmd.Dir = filepath.Join(work, filepath.FromSlash(repo.Overlay))
	cmd.Env = h.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kustomize edit set image: %v\n%s", err, out)
	}
	h.git(t, work, "-c", "gpg.format=ssh", "-c", "user.signingkey="+h.shellKey, "commit", "-qS", "-am", "promote "+version)
	h.git(t, work, "push", "-q", "origin", "main")
	return time.Since(start)
}

// floorPush is the least a promotion costs: the commit a promotion makes
// (the image's tag in repo.Overlay, the first stage's overlay), already
// made, pushed to the same server with git; the median of floorPushes.
func (h *harness) floorPush(t *testing.T, work string, repo Repository) time.Duration {
	t.Helper()
	file := filepath.Join(work, filepath.FromSlash(repo.Overlay), "kustomization.yaml")
	var pushes []time.Duration
	for i := range floorPushes {
		h.git(t, work, "pull", "-q", "--rebase", "origin", "main")
		old, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		edited := imageTag(old, repo.Image, fmt.Sprintf("9.9.%d-%d", i, time.Now().UnixNano()))
		if bytes.Equal(edited, old) {
			t.Fatalf("floor: %s has no tag for %s to change:\n%s", file, repo.Image, old)
		}
		writeFile(t, filepath.Dir(file), filepath.Base(file), edited)
		h.git(t, work, "commit", "-qam", "floor")
		start := time.Now()
		h.git(t, work, "push", "-q", "origin", "main")
		pushes = append(pushes, time.Since(start))
	}
	return Median(pushes)
}

// floorPushes is how many pushes the floor is the median of: each is a
// tenth of a second, and one alone varies by a third.
const floorPushes = 5

// imageTag is an overlay's kustomization with image's newTag set to tag.
func imageTag(kustomization []byte, image, tag string) []byte {
	lines := strings.Split(string(kustomization), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "- name: "+image && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "newTag:") {
			indent := lines[i+1][:len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " "))]
			lines[i+1] = indent + fmt.Sprintf("newTag: %q", tag)
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

func (h *harness) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// peakRSS is the child's ru_maxrss, which Linux counts in KiB.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
