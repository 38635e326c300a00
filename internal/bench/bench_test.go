package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/internal/demo"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestBench is `make bench`: per shape and size it builds the repository
// on one loopback git server and times, as separate processes,
// vectorflow's validate, a cold and a warm `run --once` and one template
// promotion (`run --once` after the bump), then the shell way (clone +
// kustomize edit set image + git commit -S + push) and the floor (a bare
// git push of one commit), and prints medians, ratios and exponents.
//
// Without settings it is the small version `make test` runs (10 and 100
// stages once, 8 MB of blobs), which checks that every cell is measured.
// VECTORFLOW_BENCH_SIZES (e.g. 10,100,1000,10000), VECTORFLOW_BENCH_SHAPES
// (chain,apps,blobs), VECTORFLOW_BENCH_REPS (runs per repository below
// 1,000 stages; larger ones and blobs run once), VECTORFLOW_BENCH_BLOB_MB and
// VECTORFLOW_BENCH_OUT (a file for the table) scale it.
func TestBench(t *testing.T) {
	o := benchOptions(t)
	h := newHarness(t)
	load := loadAverage()
	var samples []Sample
	for _, shape := range o.shapes {
		sizes := o.sizes
		if shape == Blobs {
			sizes = []int{10}
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
	fmt.Print("\n" + out.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		for _, s := range Steps {
			if r.Median[s] <= 0 {
				t.Errorf("%s %d: %s was not measured", r.Shape, r.Stages, s)
			}
		}
		if r.MaxRSS <= 0 {
			t.Errorf("%s %d: no peak RSS for vectorflow", r.Shape, r.Stages)
		}
	}
}

type options struct {
	sizes     []int
	shapes    []Shape
	reps      int
	blobBytes int64
	out       string
}

func benchOptions(t *testing.T) options {
	t.Helper()
	o := options{sizes: []int{10, 100}, shapes: []Shape{Chain, Apps, Blobs}, reps: 1, blobBytes: 8 << 20,
		out: os.Getenv("VECTORFLOW_BENCH_OUT")}
	if v := os.Getenv("VECTORFLOW_BENCH_SIZES"); v != "" {
		o.sizes = nil
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
	env        []string
	repos      int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	keys := t.TempDir()
	h := &harness{srv: testutil.StartGitServer(t), kustomize: testutil.KustomizeBinary(t)}
	h.bin = filepath.Join(t.TempDir(), "vectorflow")
	if out, err := exec.Command("go", "build", "-o", h.bin, "../../cmd/vectorflow").CombinedOutput(); err != nil {
		t.Fatalf("go build vectorflow: %v\n%s", err, out)
	}
	controller := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	h.signingKey = writeFile(t, keys, "controller.asc", controller.PrivateArmored)
	h.approver = testutil.NewOpenPGPKey(t, "alice", "alice@example.com", nil).PublicArmored
	h.shellKey = writeFile(t, keys, "person", testutil.NewSSHKey(t, nil).PrivatePEM)
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
	if err := demo.WriteFiles(fixture, repo.Files); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, fixture, nil, "init", "-q", "-b", "main")
	testutil.Git(t, fixture, nil, "add", "-A")
	testutil.Git(t, fixture, nil, "commit", "-qm", fmt.Sprintf("%s of %d stages", repo.Shape, repo.Stages))

	var samples []Sample
	add := func(step Step, d time.Duration, rss int64) {
		samples = append(samples, Sample{Shape: repo.Shape, Stages: repo.Stages, Step: step, Time: d, MaxRSS: rss})
	}
	for rep := 0; rep < reps; rep++ {
		h.repos++
		name := fmt.Sprintf("%s-%d-%d.git", repo.Shape, repo.Stages, h.repos)
		bare := h.srv.BarePath(name)
		testutil.Git(t, "", nil, "init", "-q", "--bare", "-b", "main", bare)
		for _, kv := range [][2]string{{"receive.autogc", "false"}, {"gc.auto", "0"}, {"http.receivepack", "true"}} {
			testutil.Git(t, bare, nil, "config", kv[0], kv[1])
		}
		testutil.Git(t, fixture, nil, "push", "-q", bare, "main")
		url := h.srv.HTTPURL(name)
		run := []string{"run", "--once", "--repo", url, "--signing-key", h.signingKey, "--max-repository-size", "4Gi"}

		d, rss := h.vectorflow(t, "validate", "--repo", url, "--max-repository-size", "4Gi")
		add(Validate, d, rss)
		d, rss = h.vectorflow(t, run...)
		add(Cold, d, rss)
		d, rss = h.vectorflow(t, run...)
		add(Warm, d, rss)

		// One promotion: a person bumps the template; run --once carries
		// it into the first stage's overlay (the next stage waits for an
		// approver).
		work := t.TempDir()
		h.git(t, work, "clone", "-q", "--branch", "main", h.srv.HTTPURLWithCredentials(name), ".")
		version := fmt.Sprintf("2.0.%d", rep)
		template := filepath.Join(work, filepath.FromSlash(repo.Template))
		old, err := os.ReadFile(template)
		if err != nil {
			t.Fatal(err)
		}
		bumped, err := repo.Bump(old, repo.Version, version)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Dir(template), filepath.Base(template), bumped)
		h.git(t, work, "commit", "-qam", "bump to "+version)
		h.git(t, work, "push", "-q", "origin", "main")
		d, rss = h.vectorflow(t, run...)
		add(Promote, d, rss)
		overlay := h.git(t, bare, "show", "main:"+repo.Overlay+"/kustomization.yaml")
		if !strings.Contains(overlay, fmt.Sprintf("newTag: %q", version)) && !strings.Contains(overlay, "newTag: "+version+"\n") {
			t.Fatalf("%s: run --once did not promote %s into %s:\n%s", name, version, repo.Overlay, overlay)
		}

		add(Shell, h.shellPromotion(t, name, repo, fmt.Sprintf("3.0.%d", rep)), 0)
		add(Floor, h.floorPush(t, work), 0)
	}
	return samples
}

// vectorflow runs the binary and returns its wall time and peak RSS.
func (h *harness) vectorflow(t *testing.T, args ...string) (time.Duration, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("vectorflow %s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 4000))
	}
	return d, peakRSS(cmd.ProcessState)
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

// floorPush is the least any promotion costs: one small commit, already
// made, pushed to the same server.
func (h *harness) floorPush(t *testing.T, work string) time.Duration {
	t.Helper()
	h.git(t, work, "pull", "-q", "--rebase", "origin", "main")
	writeFile(t, work, "floor.txt", []byte(time.Now().String()))
	h.git(t, work, "add", "floor.txt")
	h.git(t, work, "commit", "-qm", "floor")
	start := time.Now()
	h.git(t, work, "push", "-q", "origin", "main")
	return time.Since(start)
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
