package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// TestRacingControllersExecuteEachPromotionOnce runs two controllers with
// their own writers against one repository on a real git server, round after
// round while a person changes the template. Each promotion must land on the
// target branch exactly once, none may fail, and the state branch must only
// ever move forward.
func TestRacingControllersExecuteEachPromotionOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a git server and many passes")
	}
	f := newRaceFixture(t)
	controllers := []*Controller{f.controller(t), f.controller(t)}

	const rounds = 4
	var observed []plumbing.Hash // state commits some pass reported making
	executions := make([]int, len(controllers))
	for round := 0; round < rounds; round++ {
		if round > 0 {
			f.pushTemplateChange(t, fmt.Sprintf("1.0.%d", round+1), fmt.Sprintf("1.0.%d", round+2))
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make([]error, len(controllers))
		for i, c := range controllers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				passes, err := c.RunUntilStable(context.Background(), 60)
				errs[i] = err
				mu.Lock()
				defer mu.Unlock()
				for _, p := range passes {
					executions[i] += len(p.Executed)
					if !p.Commit.IsZero() {
						observed = append(observed, p.Commit)
					}
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: controller %d: %v", round+1, i+1, err)
			}
		}
		observed = append(observed, f.stateTip(t))
	}

	clone := f.clone(t)
	executed := map[string]int{}
	log := testutil.Git(t, clone, nil, "log", "--format=%B%x00", "origin/main")
	for _, msg := range strings.Split(log, "\x00") {
		if tr, ok := gitwriter.ParseTrailers(strings.TrimSpace(msg)); ok {
			executed[tr.Promotion]++
		}
	}
	t.Logf("promotion commits on main: %v; executions per controller: %v; state commits observed: %d", executed, executions, len(observed))
	for name, n := range executed {
		if n != 1 {
			t.Errorf("promotion %s has %d commits on main, want exactly 1", name, n)
		}
	}
	if executed["latest-to-dev-"+fmt.Sprint(rounds)] != 1 {
		t.Errorf("the last round's vector was not promoted to dev: %v", executed)
	}

	files := map[string][]byte{}
	for _, p := range strings.Fields(testutil.Git(t, clone, nil, "ls-tree", "-r", "--name-only", "origin/"+DefaultStateBranch)) {
		files[p] = []byte(testutil.Git(t, clone, nil, "show", "origin/"+DefaultStateBranch+":"+p))
	}
	state, decodeErrs := reconcilers.DecodeState(files)
	if len(decodeErrs) > 0 {
		t.Fatalf("state branch: %v", decodeErrs)
	}
	for _, name := range keys.Sorted(state.Promotions) {
		p := state.Promotions[name]
		switch p.Status.State {
		case v1alpha1.PromotionSucceeded, v1alpha1.PromotionSuperseded, v1alpha1.PromotionWaiting:
		default:
			t.Errorf("%s ended %s, want Succeeded, Superseded or Waiting: %+v", name, p.Status.State, p.Status.Conditions)
		}
		if p.Status.State == v1alpha1.PromotionSucceeded && executed[name] != 1 {
			t.Errorf("%s is Succeeded at %s but has %d commits on main", name, p.Status.Commit, executed[name])
		}
	}

	// Every round's vector reached test: the newest promotion of each
	// automatic config succeeded.
	for _, config := range []string{"latest-to-dev", "dev-to-test"} {
		var newest *v1alpha1.VectorPromotion
		for _, p := range state.Promotions {
			if p.Spec.VectorPromotionConfigName == config && (newest == nil || p.Spec.Sequence > newest.Spec.Sequence) {
				newest = p
			}
		}
		if newest == nil || newest.Status.State != v1alpha1.PromotionSucceeded || newest.Spec.Sequence < rounds {
			t.Errorf("newest promotion of %s: %+v, want a Succeeded one with sequence >= %d", config, newest, rounds)
		}
	}

	history := map[string]bool{}
	for _, h := range strings.Fields(testutil.Git(t, clone, nil, "rev-list", "--first-parent", "origin/"+DefaultStateBranch)) {
		history[h] = true
	}
	for _, h := range observed {
		if !history[h.String()] {
			t.Errorf("state commit %s was observed as a tip but is not in the state branch's history: it was overwritten", h)
		}
	}
	if merges := strings.TrimSpace(testutil.Git(t, clone, nil, "rev-list", "--merges", "origin/"+DefaultStateBranch)); merges != "" {
		t.Errorf("the state branch has merges, want a linear history: %s", merges)
	}
}

// raceFixture is the quickstart on a git server with every promotion
// automatic except test-to-prod, so two stages are written per round.
type raceFixture struct {
	srv    *testutil.GitServer
	url    string
	signer gitwriter.Signer
}

func newRaceFixture(t *testing.T) *raceFixture {
	t.Helper()
	testutil.RequireGit(t)
	dir := testutil.CopyDir(t, filepath.Join("..", "examples", "quickstart"))
	file := filepath.Join(dir, "vectorflow", "promotions.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	exampleKey := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBIKmQETi40xtnnFdhUcbxbea0XwaqKrvfMa/IPBVZrx alice@example.com"
	promotions := string(data)
	if !strings.Contains(promotions, exampleKey) || !strings.Contains(promotions, "required: true") {
		t.Fatal("the quickstart's promotions.yaml changed; update this test")
	}
	promotions = strings.ReplaceAll(promotions, exampleKey, strings.TrimSpace(testutil.NewSSHKey(t, nil).AuthorizedKey))
	// dev-to-test is the first config with an approval: let it run on its own.
	promotions = strings.Replace(promotions, "required: true", "required: false", 1)
	if err := os.WriteFile(file, []byte(promotions), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &raceFixture{srv: testutil.StartGitServer(t)}
	f.srv.InitRepo(t, dir, "main", "acme.git")
	f.url = f.srv.HTTPURL("acme.git")
	key := testutil.NewOpenPGPKey(t, "vectorflow", "vectorflow@vectorflow.dev", nil)
	if f.signer, err = gitwriter.NewSigner(key.PrivateArmored, nil); err != nil {
		t.Fatal(err)
	}
	return f
}

// controller returns a controller with its own writer (and so its own
// object store and push coalescing), sharing only the signing key.
func (f *raceFixture) controller(t testing.TB) *Controller {
	t.Helper()
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: f.signer})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{URL: f.url, Branch: "main", Writer: w, Auth: func(string) source.Auth {
		return source.Auth{Username: f.srv.Username, Password: f.srv.Password}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *raceFixture) clone(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	testutil.Git(t, dir, nil, "clone", "-q", "--no-single-branch", "--branch", "main", f.srv.HTTPURLWithCredentials("acme.git"), ".")
	return dir
}

func (f *raceFixture) stateTip(t testing.TB) plumbing.Hash {
	t.Helper()
	out := testutil.Git(t, t.TempDir(), nil, "ls-remote", f.srv.HTTPURLWithCredentials("acme.git"), "refs/heads/"+DefaultStateBranch)
	fields := strings.Fields(out)
	if len(fields) == 0 {
		t.Fatalf("no state branch on the server: %q", out)
	}
	return plumbing.NewHash(fields[0])
}

// pushTemplateChange moves service-a from one version to another in a
// commit a person pushes with the git binary.
func (f *raceFixture) pushTemplateChange(t testing.TB, from, to string) {
	t.Helper()
	// The controllers may push to main meanwhile: like a person, fetch
	// again and redo the change when the push is refused.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		dir := f.clone(t)
		file := filepath.Join(dir, "vectorflow", "template.yaml")
		data, rerr := os.ReadFile(file)
		if rerr != nil {
			t.Fatal(rerr)
		}
		needle := "name: registry.example.com/acme/service-a\n      version: \"" + from + "\""
		if !strings.Contains(string(data), needle) {
			t.Fatalf("template.yaml has no %q:\n%s", needle, data)
		}
		changed := strings.Replace(string(data), needle, "name: registry.example.com/acme/service-a\n      version: \""+to+"\"", 1)
		if werr := os.WriteFile(file, []byte(changed), 0o644); werr != nil {
			t.Fatal(werr)
		}
		testutil.Git(t, dir, nil, "commit", "-qam", "bump service-a to "+to)
		if _, err = testutil.GitE(dir, nil, "push", "-q", "origin", "HEAD:main"); err == nil {
			return
		}
	}
	t.Fatalf("push the template change: %v", err)
}

// TestTwoControllersAndAForeignWriterLoseNothing runs two controllers with
// their own writers, one pass each per round, while a person bumps the
// template every round in the middle of the passes and a foreign writer
// keeps pushing unrelated commits to main, the branch the promotions are
// written to. A pass may lose a race and fail (it is
// retried); nothing may be lost: every promotion commit is on main exactly
// once, every foreign commit is still there, every promotion (cleaned-up
// ones in the version they were deleted from) ended Succeeded or
// Superseded, the last bump runs in dev and test, and the state branch is
// linear and lost no tip any pass reported. Bounded by rounds and time.
func TestTwoControllersAndAForeignWriterLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a git server and many passes")
	}
	const (
		maxRounds = 60
		budget    = 40 * time.Second
	)
	f := newRaceFixture(t)
	controllers := []*Controller{f.controller(t), f.controller(t)}
	person, foreign := f.clone(t), f.clone(t)
	var foreignCommits []string
	var observed []plumbing.Hash
	passFailures := 0
	start, rounds := time.Now(), 0
	for rounds < maxRounds && time.Since(start) < budget {
		rounds++
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range controllers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.Pass(ctx)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					passFailures++
					t.Logf("round %d: a pass failed (retried next round): %v", rounds, err)
				}
				if !res.Commit.IsZero() {
					observed = append(observed, res.Commit)
				}
			}()
		}
		// The person and the foreign writer race the controllers for main.
		for i := 0; i < 2; i++ {
			if h, ok := foreignCommit(t, foreign, fmt.Sprintf("round %d.%d", rounds, i)); ok {
				foreignCommits = append(foreignCommits, h)
			}
			if i == 0 {
				bumpTemplate(t, person, fmt.Sprintf("1.0.%d", rounds+1), fmt.Sprintf("1.0.%d", rounds+2))
			}
		}
		wg.Wait()
		cancel()
	}
	// Settle without the foreign writer: every pass must now succeed.
	for i, c := range controllers {
		passes, err := c.RunUntilStable(context.Background(), 30)
		if err != nil {
			t.Fatalf("settling controller %d after %d rounds: %v", i+1, rounds, err)
		}
		for _, p := range passes {
			if !p.Commit.IsZero() {
				observed = append(observed, p.Commit)
			}
		}
	}
	t.Logf("%d rounds in %s; %d foreign commits; %d failed passes (lost races)",
		rounds, time.Since(start).Round(time.Millisecond), len(foreignCommits), passFailures)

	clone := f.clone(t)
	for _, h := range foreignCommits {
		if _, err := testutil.GitE(clone, nil, "merge-base", "--is-ancestor", h, "origin/main"); err != nil {
			t.Errorf("foreign commit %s is no longer on main: it was overwritten", h)
		}
	}
	commits := map[string][]string{}
	log := testutil.Git(t, clone, nil, "log", "--format=%H%n%B%x00", "origin/main")
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
	known := map[string]bool{}
	finished := func(where string, p *v1alpha1.VectorPromotion) {
		known[p.Name] = true
		if p.Spec.VectorPromotionConfigName == "test-to-prod" {
			return // waits for an approval
		}
		switch p.Status.State {
		case v1alpha1.PromotionSucceeded:
			if cs := commits[p.Name]; len(cs) != 1 || cs[0] != p.Status.Commit {
				t.Errorf("%s is Succeeded at %s %s, but main has %v for it", p.Name, p.Status.Commit, where, cs)
			}
		case v1alpha1.PromotionSuperseded:
		default:
			t.Errorf("%s is %s %s, want Succeeded or Superseded: %+v", p.Name, p.Status.State, where, p.Status.Conditions)
		}
	}
	state := readStateAt(t, clone, "origin/"+DefaultStateBranch, "")
	for _, name := range keys.Sorted(state.Promotions) {
		finished("on the state branch", state.Promotions[name])
	}
	cleaned := 0
	deletions := testutil.Git(t, clone, nil, "log", "--no-renames", "--diff-filter=D", "--name-only", "--format=commit %H", "origin/"+DefaultStateBranch, "--", reconcilers.PromotionsDir+"/")
	var deletedIn string
	for _, line := range strings.Split(deletions, "\n") {
		switch line = strings.TrimSpace(line); {
		case strings.HasPrefix(line, "commit "):
			deletedIn = strings.TrimPrefix(line, "commit ")
		case line != "":
			for _, p := range readStateAt(t, clone, deletedIn+"^", line).Promotions {
				cleaned++
				finished("when cleaned up in "+deletedIn, p)
			}
		}
	}
	t.Logf("%d promotion commits on main; %d promotions on the state branch, %d cleaned up before", len(commits), len(state.Promotions), cleaned)
	for name := range commits {
		if !known[name] {
			t.Errorf("main has a commit for %s, which the state branch never recorded", name)
		}
	}
	for _, stage := range []string{"dev", "test"} {
		want := fmt.Sprintf("- name: registry.example.com/acme/service-a\n    newTag: \"1.0.%d\"", rounds+2)
		if overlay := testutil.Git(t, clone, nil, "show", "origin/main:apps/overlays/"+stage+"/kustomization.yaml"); !strings.Contains(overlay, want) {
			t.Errorf("the %s overlay does not run the last bump (%s):\n%s", stage, want, overlay)
		}
	}
	history := map[string]bool{}
	for _, h := range strings.Fields(testutil.Git(t, clone, nil, "rev-list", "--first-parent", "origin/"+DefaultStateBranch)) {
		history[h] = true
	}
	for _, h := range observed {
		if !history[h.String()] {
			t.Errorf("state commit %s was reported by a pass but is not in the state branch's history: it was overwritten", h)
		}
	}
	if merges := strings.TrimSpace(testutil.Git(t, clone, nil, "rev-list", "--merges", "origin/"+DefaultStateBranch)); merges != "" {
		t.Errorf("the state branch has merges, want a linear history: %s", merges)
	}
}

// readStateAt decodes the state branch at rev: every file, or only path.
func readStateAt(t *testing.T, dir, rev, path string) *reconcilers.State {
	t.Helper()
	paths := []string{path}
	if path == "" {
		paths = strings.Fields(testutil.Git(t, dir, nil, "ls-tree", "-r", "--name-only", rev))
	}
	files := map[string][]byte{}
	for _, p := range paths {
		files[p] = []byte(testutil.Git(t, dir, nil, "show", rev+":"+p))
	}
	state, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		t.Fatalf("the state at %s does not decode: %v", rev, errs)
	}
	return state
}

// bumpTemplate moves service-a from one version to another in the clone
// dir, rebasing onto main when a promotion commit won the race.
func bumpTemplate(t *testing.T, dir, from, to string) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		testutil.Git(t, dir, nil, "fetch", "-q", "origin", "main")
		testutil.Git(t, dir, nil, "reset", "-q", "--hard", "origin/main")
		file := filepath.Join(dir, "vectorflow", "template.yaml")
		data, rerr := os.ReadFile(file)
		if rerr != nil {
			t.Fatal(rerr)
		}
		needle := "name: registry.example.com/acme/service-a\n      version: \"" + from + "\""
		if !strings.Contains(string(data), needle) {
			t.Fatalf("template.yaml has no %q:\n%s", needle, data)
		}
		changed := strings.Replace(string(data), needle, "name: registry.example.com/acme/service-a\n      version: \""+to+"\"", 1)
		if werr := os.WriteFile(file, []byte(changed), 0o644); werr != nil {
			t.Fatal(werr)
		}
		testutil.Git(t, dir, nil, "commit", "-qam", "bump service-a to "+to)
		if _, err = testutil.GitE(dir, nil, "push", "-q", "origin", "HEAD:main"); err == nil {
			return
		}
	}
	t.Fatalf("push the template change: %v", err)
}

// foreignCommit pushes a commit touching a file vectorflow does not own to
// main, as another automation would, and returns it; ok is false when a
// promotion commit won every race for main.
func foreignCommit(t *testing.T, dir, note string) (string, bool) {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		testutil.Git(t, dir, nil, "fetch", "-q", "origin", "main")
		testutil.Git(t, dir, nil, "reset", "-q", "--hard", "origin/main")
		f, err := os.OpenFile(filepath.Join(dir, "NOTES.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fmt.Fprintln(f, note)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, nil, "add", "NOTES.txt")
		testutil.Git(t, dir, nil, "commit", "-qm", "notes: "+note)
		if _, err := testutil.GitE(dir, nil, "push", "-q", "origin", "HEAD:main"); err == nil {
			return strings.TrimSpace(testutil.Git(t, dir, nil, "rev-parse", "HEAD")), true
		}
	}
	return "", false
}
