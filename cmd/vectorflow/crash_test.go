package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// TestRunSurvivesSIGKILL runs the built binary as a real process against the
// real git server while a person keeps bumping the template, and kills it
// with SIGKILL at random moments (seeded; the seed is logged, and
// VECTORFLOW_CRASH_SEED replays one), restarting it each time. Once it has
// settled, every promotion commit is on its target branch exactly once,
// every promotion of an automatic config ended Succeeded or Superseded with
// the newest vector in dev and test, and the state branch is linear, never
// lost a tip anyone saw, and still decodes and verifies (run --once walks
// it). Promotions cleaned up meanwhile (keepLastPromotions) are checked in
// the version they were deleted from. Bounded to about a minute: at most maxKills kills in budget.
func TestRunSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a process for about a minute")
	}
	const (
		maxKills  = 40
		budget    = 30 * time.Second
		bumpEvery = 3 // kills between template bumps
	)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VECTORFLOW_CRASH_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("VECTORFLOW_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay with VECTORFLOW_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))

	f := newFlowFixture(t)
	// dev-to-test runs on its own, so each bump makes two promotion
	// commits; test-to-prod keeps waiting for an approval.
	f.editFile(t, "vectorflow/promotions.yaml", func(s string) string {
		return strings.Replace(s, "required: true", "required: false", 1)
	}, "let dev-to-test run without an approval")
	bin := buildVectorflow(t)
	bare := f.srv.BarePath("acme.git")

	var observed []string // state branch tips seen between kills
	start, kills, bumps, midPromotion := time.Now(), 0, 0, 0
	var last *process
	for kills < maxKills && time.Since(start) < budget {
		last = startProcess(t, bin, "run", "--interval", "200ms", "--repo", f.url, "--signing-key", f.controller, "--log-encoding", "json")
		time.Sleep(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
		if err := last.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-last.done
		kills++
		if tip, err := testutil.GitE(bare, nil, "rev-parse", "--verify", "-q", controller.DefaultStateBranch); err == nil {
			observed = append(observed, strings.TrimSpace(tip))
			// A kill that left a promotion InProgress cut one short.
			if out, _ := testutil.GitE(bare, nil, "grep", "-l", "state: InProgress", strings.TrimSpace(tip), "--", "promotions/"); out != "" {
				midPromotion++
			}
		}
		if kills%bumpEvery == 1 {
			f.bumpServiceA(t, bumps)
			bumps++
		}
	}
	t.Logf("%d kills (%d with a promotion in progress), %d template bumps in %s", kills, midPromotion, bumps, time.Since(start).Round(time.Millisecond))

	// Settle: passes until nothing changes, walking the whole state
	// branch (its trust check) on the way.
	cmd := exec.Command(bin, "run", "--once", "--repo", f.url, "--signing-key", f.controller, "--log-encoding", "json")
	cmd.Env = append(os.Environ(), "VECTORFLOW_GIT_USERNAME="+f.srv.Username, "VECTORFLOW_GIT_PASSWORD="+f.srv.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run --once after the kills: %v\n%s\nlast killed run:\n%s", err, out, last.logs())
	}

	checkPromotionsOnce(t, bare, observed, map[string]bool{"latest-to-dev": true, "dev-to-test": true})
	want := fmt.Sprintf("- name: registry.example.com/acme/service-a\n    newTag: \"1.0.%d\"", bumps+2)
	for _, stage := range []string{"dev", "test"} {
		if overlay := testutil.Git(t, bare, nil, "show", "main:apps/overlays/"+stage+"/kustomization.yaml"); !strings.Contains(overlay, want) {
			t.Errorf("the %s overlay does not run the last bump (%s):\n%s", stage, want, overlay)
		}
	}
}

// checkPromotionsOnce asserts what no crash or race may break, on the
// repository's bare directory: each promotion commit on main exactly once
// and the one its promotion recorded; every promotion of the automatic
// configs Succeeded or Superseded, their newest ones Succeeded; a linear
// state branch holding every tip in observed.
func checkPromotionsOnce(t *testing.T, bare string, observed []string, automatic map[string]bool) {
	t.Helper()
	commits := map[string][]string{} // promotion -> commits naming it
	log := testutil.Git(t, bare, nil, "log", "--format=%H%n%B%x00", "main")
	for _, entry := range strings.Split(log, "\x00") {
		hash, msg, _ := strings.Cut(strings.TrimSpace(entry), "\n")
		if tr, ok := gitwriter.ParseTrailers(strings.TrimSpace(msg)); ok {
			commits[tr.Promotion] = append(commits[tr.Promotion], hash)
		}
	}
	for name, cs := range commits {
		if len(cs) != 1 {
			t.Errorf("promotion %s has %d commits on main, want exactly 1: %v", name, len(cs), cs)
		}
	}

	files := map[string][]byte{}
	for _, p := range strings.Fields(testutil.Git(t, bare, nil, "ls-tree", "-r", "--name-only", controller.DefaultStateBranch)) {
		files[p] = []byte(testutil.Git(t, bare, nil, "show", controller.DefaultStateBranch+":"+p))
	}
	state, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		t.Fatalf("the state branch does not decode: %v", errs)
	}
	newest := map[string]*v1alpha1.VectorPromotion{}
	known := map[string]bool{}
	for name, p := range state.Promotions {
		known[name] = true
		config := p.Spec.VectorPromotionConfigName
		if !automatic[config] {
			continue
		}
		switch p.Status.State {
		case v1alpha1.PromotionSucceeded:
			if cs := commits[name]; len(cs) != 1 || cs[0] != p.Status.Commit {
				t.Errorf("%s is Succeeded at %s, but main has %v for it", name, p.Status.Commit, cs)
			}
		case v1alpha1.PromotionSuperseded:
		default:
			t.Errorf("%s ended %s, want Succeeded or Superseded: %+v", name, p.Status.State, p.Status.Conditions)
		}
		if n := newest[config]; n == nil || p.Spec.Sequence > n.Spec.Sequence {
			newest[config] = p
		}
	}
	for config := range automatic {
		n := newest[config]
		if n == nil || n.Status.State != v1alpha1.PromotionSucceeded {
			t.Errorf("newest promotion of %s: %+v, want a Succeeded one", config, n)
		}
	}
	// Promotions cleaned up since (ttlAfterFinished, keepLastPromotions)
	// must have finished before they went: their last version says how.
	deletions := testutil.Git(t, bare, nil, "log", "--no-renames", "--diff-filter=D", "--name-only", "--format=commit %H", controller.DefaultStateBranch, "--", "promotions/")
	var deletedIn string
	cleaned := 0
	for _, line := range strings.Split(deletions, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "commit "):
			deletedIn = strings.TrimPrefix(line, "commit ")
		case line != "":
			before, errs := reconcilers.DecodeState(map[string][]byte{line: []byte(testutil.Git(t, bare, nil, "show", deletedIn+"^:"+line))})
			if len(errs) > 0 {
				t.Fatalf("%s before %s does not decode: %v", line, deletedIn, errs)
			}
			for name, p := range before.Promotions {
				known[name] = true
				if !automatic[p.Spec.VectorPromotionConfigName] {
					continue
				}
				cleaned++
				switch p.Status.State {
				case v1alpha1.PromotionSucceeded:
					if cs := commits[name]; len(cs) != 1 || cs[0] != p.Status.Commit {
						t.Errorf("%s was Succeeded at %s when cleaned up in %s, but main has %v for it", name, p.Status.Commit, deletedIn, cs)
					}
				case v1alpha1.PromotionSuperseded:
				default:
					t.Errorf("%s was %s when cleaned up in %s: lost", name, p.Status.State, deletedIn)
				}
			}
		}
	}

	for name := range commits {
		if !known[name] {
			t.Errorf("main has a commit for %s, which the state branch never recorded", name)
		}
	}
	t.Logf("%d promotion commits on main; %d promotions on the state branch, %d cleaned up before; %d state tips observed",
		len(commits), len(state.Promotions), cleaned, len(observed))
	if merges := strings.TrimSpace(testutil.Git(t, bare, nil, "rev-list", "--merges", controller.DefaultStateBranch)); merges != "" {
		t.Errorf("the state branch has merges, want a linear history: %s", merges)
	}
	for _, tip := range observed {
		if _, err := testutil.GitE(bare, nil, "merge-base", "--is-ancestor", tip, controller.DefaultStateBranch); err != nil {
			t.Errorf("state tip %s was seen but is not in the state branch's history: it was overwritten", tip)
		}
	}
}

// editFile changes one file of the config repository in a commit a person
// pushes with the git binary.
func (f *flowFixture) editFile(t *testing.T, path string, edit func(string) string, message string) {
	t.Helper()
	dir := f.clone(t)
	file := filepath.Join(dir, path)
	writeFile(t, filepath.Dir(file), filepath.Base(file), []byte(edit(readFile(t, file))))
	testutil.Git(t, dir, nil, "commit", "-qam", message)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
}

// bumpServiceA moves service-a from 1.0.(n+2) to 1.0.(n+3) like a person
// would, fetching again when a promotion commit won the race for main.
func (f *flowFixture) bumpServiceA(t *testing.T, n int) {
	t.Helper()
	from, to := fmt.Sprintf("1.0.%d", n+2), fmt.Sprintf("1.0.%d", n+3)
	needle := "name: registry.example.com/acme/service-a\n      version: \"" + from + "\""
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		dir := f.clone(t)
		file := filepath.Join(dir, "vectorflow", "template.yaml")
		old := readFile(t, file)
		if !strings.Contains(old, needle) {
			t.Fatalf("template.yaml has no %q", needle)
		}
		writeFile(t, filepath.Dir(file), "template.yaml", []byte(strings.Replace(old, needle,
			"name: registry.example.com/acme/service-a\n      version: \""+to+"\"", 1)))
		testutil.Git(t, dir, nil, "commit", "-qam", "bump service-a to "+to)
		if _, err = testutil.GitE(dir, nil, "push", "-q", "origin", "main"); err == nil {
			return
		}
	}
	t.Fatalf("push the bump of service-a to %s: %v", to, err)
}
