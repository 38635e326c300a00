package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Shape of the benchmark repository: benchChains chains of benchLandscapes
// stages each, fed by one template per chain, so benchChains*len(landscapes)
// configs (200); benchHistory promotions per config on the state branch
// (1,000).
const (
	benchChains  = 50
	benchHistory = 5
	benchChanged = 50
)

var benchLandscapes = []string{"dev", "test", "stage", "prod"}

// BenchmarkPass measures one pass over a repository with 200 configs and
// 1,000 promotions on the state branch, on a loopback git server:
//   - unchanged: nothing changed since the last pass (what a poll costs);
//   - fetch: only what such a pass reads: the snapshot (fetch and load)
//     and the state branch (fetch, read and decode every file);
//   - unchanged-decided: the same, with the unchanged-inputs shortcut
//     defeated, so the state is decoded, decided, encoded and diffed;
//   - decide: Decide alone on the inputs of such a pass;
//   - decode-state, encode-state: the state codec alone (1,700 files);
//   - changed-50: 50 templates changed; reported split into fetch-ms
//     (snapshot and state branch), decide-ms, encode-ms (EncodeState and
//     StateDiff), state-push-ms and execute-ms (the 50 overlay commits, one
//     coalesced push).
func BenchmarkPass(b *testing.B) {
	f := newBenchFixture(b)
	ctx := context.Background()
	c := f.controller(b)
	if _, err := c.RunUntilStable(ctx, 20); err != nil {
		b.Fatal(err)
	}

	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			res, err := c.Pass(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if res.Changed() {
				b.Fatalf("a pass over an unchanged repository wrote: %v", res.Transitions)
			}
		}
	})

	b.Run("fetch", func(b *testing.B) {
		for b.Loop() {
			f.read(b, c)
		}
	})

	b.Run("unchanged-decided", func(b *testing.B) {
		for b.Loop() {
			c.inputs = ""
			res, err := c.Pass(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if res.Changed() {
				b.Fatalf("a pass over an unchanged repository wrote: %v", res.Transitions)
			}
		}
	})

	b.Run("decide", func(b *testing.B) {
		snap, _, _, state := f.read(b, c)
		if n := len(state.Promotions); n < benchChains*len(benchLandscapes)*benchHistory {
			b.Fatalf("the state holds %d promotions", n)
		}
		in := pass.Inputs{Snapshot: snap, State: state}
		now := time.Now()
		for b.Loop() {
			d := pass.Decide(in, now)
			if len(d.Start) != 0 {
				b.Fatalf("an unchanged repository started %v", d.Start)
			}
		}
	})

	// The state branch codec on its own, cold (a restarted controller) and
	// warm (what every later pass pays for 1,000 promotions).
	b.Run("decode-state-cold", func(b *testing.B) {
		_, _, files, _ := f.read(b, c)
		for b.Loop() {
			if _, errs := reconcilers.DecodeState(files); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("decode-state-warm", func(b *testing.B) {
		_, _, files, _ := f.read(b, c)
		for b.Loop() {
			if _, errs := c.codec.Decode(files); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("encode-state-cold", func(b *testing.B) {
		_, _, files, state := f.read(b, c)
		for b.Loop() {
			after, err := reconcilers.EncodeState(state)
			if err != nil {
				b.Fatal(err)
			}
			if diff := reconcilers.StateDiff(files, after); len(diff) != 0 {
				b.Fatalf("re-encoding the state changed %d files", len(diff))
			}
		}
	})
	b.Run("encode-state-warm", func(b *testing.B) {
		_, _, files, state := f.read(b, c)
		for b.Loop() {
			after, err := c.codec.Encode(state)
			if err != nil {
				b.Fatal(err)
			}
			if diff := reconcilers.StateDiff(files, after); len(diff) != 0 {
				b.Fatalf("re-encoding the state changed %d files", len(diff))
			}
		}
	})

	b.Run("changed-50", func(b *testing.B) {
		var fetch, decide, encode, statePush, execute time.Duration
		round := 0
		for b.Loop() {
			b.StopTimer()
			round++
			f.pushTemplateVersions(b, benchChanged, round)
			b.StartTimer()

			// The phases of Controller.pass, timed one by one.
			t0 := time.Now()
			snap, tip, files, state := f.read(b, c)
			t1 := time.Now()
			d := pass.Decide(pass.Inputs{Snapshot: snap, State: state}, time.Now())
			t1d := time.Now()
			after, err := c.codec.Encode(d.State)
			if err != nil {
				b.Fatal(err)
			}
			diff := reconcilers.StateDiff(files, after)
			t2 := time.Now()
			if _, err := c.opts.Writer.CompareAndSwap(ctx, c.stateTarget(), tip, diff, StateMessage(d.Transitions)); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			results, err := c.execute(ctx, snap, d.State, d.Start)
			if err != nil {
				b.Fatal(err)
			}
			t4 := time.Now()
			fetch, decide, encode = fetch+t1.Sub(t0), decide+t1d.Sub(t1), encode+t2.Sub(t1d)
			statePush, execute = statePush+t3.Sub(t2), execute+t4.Sub(t3)

			b.StopTimer()
			if len(d.Start) != benchChanged || len(results) != benchChanged {
				b.Fatalf("round %d started %d promotions and executed %d, want %d", round, len(d.Start), len(results), benchChanged)
			}
			// Record the results, as the next pass of the controller would.
			c.results = results
			if _, err := c.Pass(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		n := float64(b.N)
		b.ReportMetric(float64(fetch.Milliseconds())/n, "fetch-ms")
		b.ReportMetric(float64(decide.Milliseconds())/n, "decide-ms")
		b.ReportMetric(float64(encode.Milliseconds())/n, "encode-ms")
		b.ReportMetric(float64(statePush.Milliseconds())/n, "state-push-ms")
		b.ReportMetric(float64(execute.Milliseconds())/n, "execute-ms")
	})
}

// benchFixture is the generated repository on a git server, its state
// branch seeded with the promotion history, and a working copy a person
// edits the templates in.
type benchFixture struct {
	srv    *testutil.GitServer
	url    string
	signer gitwriter.Signer
	work   string
	// versions of each template's api component, by chain.
	versions map[int]string
}

func newBenchFixture(b *testing.B) *benchFixture {
	b.Helper()
	testutil.RequireGit(b)
	f := &benchFixture{srv: testutil.StartGitServer(b), versions: map[int]string{}}
	for n := 0; n < benchChains; n++ {
		f.versions[n] = fmt.Sprintf("1.0.%d", benchHistory)
	}
	dir := b.TempDir()
	writeBenchRepo(b, dir, f.versions)
	f.srv.InitRepo(b, dir, "main", "bench.git")
	f.url = f.srv.HTTPURL("bench.git")
	key := testutil.NewOpenPGPKey(b, "vectorflow", "vectorflow@vectorflow.dev", nil)
	var err error
	if f.signer, err = gitwriter.NewSigner(key.PrivateArmored, nil); err != nil {
		b.Fatal(err)
	}

	files, err := reconcilers.EncodeState(benchHistoryState(b, time.Now().Add(-time.Hour)))
	if err != nil {
		b.Fatal(err)
	}
	w := f.writer(b)
	repo, err := source.Open(f.url, f.auth(f.url))
	if err != nil {
		b.Fatal(err)
	}
	target := gitwriter.Target{Remote: gitwriter.Remote{URL: f.url, Auth: repo.AuthMethod()}, Branch: DefaultStateBranch}
	if _, err := w.CompareAndSwap(context.Background(), target, plumbing.ZeroHash, files, "seed the promotion history\n"); err != nil {
		b.Fatal(err)
	}

	f.work = b.TempDir()
	testutil.Git(b, f.work, nil, "clone", "-q", "--branch", "main", f.srv.HTTPURLWithCredentials("bench.git"), ".")
	return f
}

func (f *benchFixture) auth(string) source.Auth {
	return source.Auth{Username: f.srv.Username, Password: f.srv.Password}
}

func (f *benchFixture) writer(b *testing.B) *gitwriter.Writer {
	b.Helper()
	w, err := gitwriter.NewWriter(gitwriter.WriterOptions{
		Identity: gitwriter.Identity{Name: "vectorflow", Email: "vectorflow@vectorflow.dev"}, Signer: f.signer})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

func (f *benchFixture) controller(b *testing.B) *Controller {
	b.Helper()
	c, err := New(Options{URL: f.url, Branch: "main", Writer: f.writer(b), Auth: f.auth})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// read loads the snapshot and the state branch as c's pass would.
func (f *benchFixture) read(b *testing.B, c *Controller) (*source.Snapshot, plumbing.Hash, map[string][]byte, *reconcilers.State) {
	b.Helper()
	ctx := context.Background()
	snap, err := c.opts.Loader.Load(ctx, f.url, "main")
	if err != nil {
		b.Fatal(err)
	}
	if len(snap.Problems) > 0 {
		b.Fatalf("the generated repository has problems: %v", snap.Problems)
	}
	tip, files, err := c.opts.Writer.Read(ctx, c.stateTarget(), "")
	if err != nil {
		b.Fatal(err)
	}
	state, errs := c.codec.Decode(files)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return snap, tip, files, state
}

// pushTemplateVersions moves the api component of the first n templates to
// a new version in one commit, pushed with the git binary on top of the
// controller's promotion commits.
func (f *benchFixture) pushTemplateVersions(b *testing.B, n, round int) {
	b.Helper()
	testutil.Git(b, f.work, nil, "pull", "-q", "--rebase", "origin", "main")
	for i := 0; i < n; i++ {
		f.versions[i] = fmt.Sprintf("1.%d.0", round)
	}
	testutil.WriteFiles(b, f.work, map[string]string{"vectorflow/templates.yaml": benchTemplates(f.versions)})
	testutil.Git(b, f.work, nil, "commit", "-qam", fmt.Sprintf("bump %d templates (round %d)", n, round))
	testutil.Git(b, f.work, nil, "push", "-q", "origin", "HEAD:main")
}

// writeBenchRepo generates the declarative repository: landscapes, one
// template per chain on a shared base template, a stage per chain and
// landscape with its overlay under apps/overlays/<stage> sharing apps/base,
// and a config per stage (the template feeds dev, each stage the next).
// Overlays run the newest vector of the history, so nothing drifts.
func writeBenchRepo(b *testing.B, dir string, versions map[int]string) {
	b.Helper()
	files := map[string]string{
		"apps/base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n",
		"apps/base/deployment.yaml": `apiVersion: apps/v1
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
          image: registry.example.com/platform/proxy
`,
		"vectorflow/templates.yaml": benchTemplates(versions),
	}
	var landscapes, stages, configs strings.Builder
	for _, l := range benchLandscapes {
		fmt.Fprintf(&landscapes, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: %s\nspec: {}\n", l)
	}
	for n := 0; n < benchChains; n++ {
		vector := benchVectorRef(n, benchHistory)
		for i, l := range benchLandscapes {
			stage := benchStage(n, l)
			fmt.Fprintf(&stages, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n  landscape: %s\n  path: apps/overlays/%s\n", stage, l, stage)
			var images strings.Builder
			for _, c := range benchComponents(n, benchHistory) {
				fmt.Fprintf(&images, "  - name: %s\n    newTag: %q\n", c.Name, c.Tag)
			}
			files["apps/overlays/"+stage+"/kustomization.yaml"] = fmt.Sprintf(
				"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  name: %s\n  annotations:\n    vectorflow.dev/vector: %s\nnamespace: %s\nresources:\n  - ../../base\nimages:\n%s",
				stage, vector, stage, images.String())
			src := fmt.Sprintf("    kind: VectorTemplate\n    name: %s", benchTemplate(n))
			if i > 0 {
				src = fmt.Sprintf("    kind: Stage\n    name: %s\n    landscape: %s", benchStage(n, benchLandscapes[i-1]), benchLandscapes[i-1])
			}
			fmt.Fprintf(&configs, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: %s\nspec:\n  source:\n%s\n  target:\n    kind: Stage\n    name: %s\n    landscape: %s\n",
				benchConfig(n, l), src, stage, l)
			if i > 0 { // a Stage source waits for an approval: someone must be able to give it
				configs.WriteString("  approval:\n    approvers:\n      - name: alice\n        publicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBIKmQETi40xtnnFdhUcbxbea0XwaqKrvfMa/IPBVZrx alice@example.com\n")
			}
		}
	}
	files["vectorflow/landscapes.yaml"] = landscapes.String()
	files["vectorflow/stages.yaml"] = stages.String()
	files["vectorflow/configs.yaml"] = configs.String()
	testutil.WriteFiles(b, dir, files)
}

// benchHistoryState is the state branch after benchHistory promotions of
// every config: vectors 1..benchHistory of each template, all promoted
// through every stage, finished at finished.
func benchHistoryState(b *testing.B, finished time.Time) *reconcilers.State {
	b.Helper()
	s := reconcilers.NewState()
	for n := 0; n < benchChains; n++ {
		for k := 1; k <= benchHistory; k++ {
			components := benchComponents(n, k)
			version := benchVersion(k)
			s.Vectors[benchVectorRef(n, k)] = &v1alpha1.Vector{
				ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(benchTemplate(n) + "-" + version)},
				Spec: v1alpha1.VectorSpec{Template: benchTemplate(n), Version: version, Components: components,
					Digest: reconcilers.ComponentsDigest(components)},
			}
		}
		since := metav1.NewTime(finished.UTC().Truncate(time.Second))
		s.Templates[benchTemplate(n)] = &v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: benchTemplate(n)},
			Status: v1alpha1.VectorTemplateStatus{LatestVector: benchVectorRef(n, benchHistory), LatestVectorSince: &since}}
		for i, l := range benchLandscapes {
			src := v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: benchTemplate(n)}
			if i > 0 {
				src = v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: benchStage(n, benchLandscapes[i-1]), Landscape: benchLandscapes[i-1]}
			}
			cfg := passtest.NewConfig(benchConfig(n, l), src, l)
			cfg.Spec.Target.Name = benchStage(n, l)
			for k := 1; k <= benchHistory; k++ {
				at := finished.Add(time.Duration(k-benchHistory) * time.Minute)
				p := reconcilers.NewPromotion(cfg, benchVectorRef(n, k), int64(k), at)
				var err error
				if p.Spec.RequireApproval {
					res, err := reconcilers.Approve(p, "alice", at)
					if err != nil {
						b.Fatal(err)
					}
					p = res.Promotion
				}
				if p, _, err = reconcilers.Start(p, at); err != nil {
					b.Fatal(err)
				}
				if p, _, err = reconcilers.Complete(p, reconcilers.Result{Outcome: reconcilers.OutcomeSucceeded,
					Commit: fmt.Sprintf("%040x", n*1000+i*100+k)}, at); err != nil {
					b.Fatal(err)
				}
				s.Promotions[p.Name] = &p
			}
			s.Configs[cfg.Name] = &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: cfg.Name},
				Status: v1alpha1.VectorPromotionConfigStatus{Sequence: benchHistory}}
		}
	}
	return s
}

func benchTemplates(versions map[int]string) string {
	var t strings.Builder
	t.WriteString("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: platform\nspec:\n  components:\n" +
		"    - name: registry.example.com/platform/proxy\n      version: \"3.1.0\"\n" +
		"    - name: registry.example.com/platform/agent\n      version: \"0.9.4\"\n")
	for n := 0; n < benchChains; n++ {
		fmt.Fprintf(&t, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: %s\nspec:\n  base:\n    name: platform\n  components:\n"+
			"    - name: registry.example.com/app%02d/api\n      version: %q\n"+
			"    - name: registry.example.com/app%02d/worker\n      version: \"2.0.0\"\n", benchTemplate(n), n, versions[n], n)
	}
	return t.String()
}

// benchComponents are template n's components at history step k, sorted by
// name as assembly sorts them.
func benchComponents(n, k int) []v1alpha1.VectorComponent {
	return []v1alpha1.VectorComponent{
		{Name: fmt.Sprintf("registry.example.com/app%02d/api", n), Tag: fmt.Sprintf("1.0.%d", k)},
		{Name: fmt.Sprintf("registry.example.com/app%02d/worker", n), Tag: "2.0.0"},
		{Name: "registry.example.com/platform/agent", Tag: "0.9.4"},
		{Name: "registry.example.com/platform/proxy", Tag: "3.1.0"},
	}
}

func benchTemplate(n int) string         { return fmt.Sprintf("app%02d", n) }
func benchStage(n int, l string) string  { return fmt.Sprintf("app%02d-%s", n, l) }
func benchConfig(n int, l string) string { return fmt.Sprintf("app%02d-to-%s", n, l) }
func benchVersion(k int) string {
	return reconcilers.VectorVersion(time.Date(2026, 11, 1, 9, k, 0, 0, time.UTC))
}
func benchVectorRef(n, k int) string { return benchTemplate(n) + ":" + benchVersion(k) }
