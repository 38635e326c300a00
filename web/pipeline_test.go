package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source"
)

// columns names each column's nodes by key.
func columns(p Pipeline) [][]string {
	var out [][]string
	for _, c := range p.Columns {
		var keys []string
		for _, n := range c.Nodes {
			keys = append(keys, n.Key)
		}
		out = append(out, keys)
	}
	return out
}

func TestPipelineLayout(t *testing.T) {
	snap := pipelineSnapshot(2, 3)
	got := columns(BuildPipeline(snap, fixtureNow))
	// The first stages are fed by the template, so they sit one deeper.
	want := [][]string{{"VectorTemplate/acme"}, {"l0/c0-s0", "l0/c1-s0"}, {"l1/c0-s1", "l1/c1-s1"}, {"l2/c0-s2", "l2/c1-s2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}

	// A cycle (which the configs' ConfigConflict refuses) still shows
	// every stage, after the others, marked.
	snap.Config.Configs["back"] = &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "back"}, Spec: v1alpha1.VectorPromotionConfigSpec{
		Source: v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "c0-s2", Landscape: "l2"},
		Target: v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: "c0-s1", Landscape: "l1"}}}
	p := BuildPipeline(snap, fixtureNow)
	got = columns(p)
	want = [][]string{{"VectorTemplate/acme"}, {"l0/c0-s0", "l0/c1-s0"}, {"l1/c1-s1"}, {"l2/c1-s2"}, {"l1/c0-s1", "l2/c0-s2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("columns with a cycle (-want +got):\n%s", diff)
	}
	if last := p.Columns[len(p.Columns)-1].Nodes[0]; !last.OnCycle {
		t.Errorf("%s is on a cycle but not marked", last.Key)
	}

	// A node shows its target and active vectors, for how long, the
	// config's drift and its waiting candidates.
	var n Node
	for _, c := range p.Columns {
		for _, x := range c.Nodes {
			if x.Key == source.StageKey("l1", "c1-s1") {
				n = x
			}
		}
	}
	if n.Vector != "acme:2026.11.30-100000000Z" || n.Since != "1d 2h" || n.ActiveVector != n.Vector || len(n.Edges) != 1 {
		t.Fatalf("node %+v", n)
	}
	e := n.Edges[0]
	if e.Drift == nil || e.Drift.Good || !n.Drifted || len(e.Candidates) != 1 || e.Candidates[0].Name != "c1-s0-to-s1-2" || !e.RequireApproval {
		t.Errorf("edge %+v", e)
	}
}

func TestAge(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {59 * time.Second, "59s"}, {61 * time.Second, "1m 1s"}, {3*time.Hour + 5*time.Minute, "3h 5m"}, {49 * time.Hour, "2d 1h"}, {-time.Hour, "0s"}} {
		since := metav1.NewTime(fixtureNow.Add(-c.d))
		if got := age(fixtureNow, &since); got != c.want {
			t.Errorf("age(%s) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := age(fixtureNow, nil); got != "" {
		t.Errorf("age(nil) = %q", got)
	}
}

// BenchmarkPipelinePage1000 renders the pipeline page of 1,000 stages (100
// pipelines of 10 stages) as the server does; it fails when a page takes
// 100 ms of CPU or more, or weighs 1 MB or more. CPU time rather than
// ns/op, which a loaded machine inflates with time spent waiting for a
// core; both are reported.
func BenchmarkPipelinePage1000(b *testing.B) {
	repo := newFakeRepository(100, 10)
	if n := len(repo.snap.Config.Stages); n != 1000 {
		b.Fatalf("%d stages", n)
	}
	h, err := NewHandler(Options{Repositories: []Repository{repo}, Now: func() time.Time { return fixtureNow }})
	if err != nil {
		b.Fatal(err)
	}
	var size int
	b.ReportAllocs()
	cpu := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/r/acme/", nil))
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
		size = w.Body.Len()
	}
	b.StopTimer()
	perOp := (cpuTime(b) - cpu) / time.Duration(b.N)
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric(float64(perOp.Nanoseconds()), "cpu-ns/op")
	if perOp >= 100*time.Millisecond {
		b.Errorf("the page of 1,000 stages took %s of CPU, want under 100ms", perOp)
	}
	if size >= 1<<20 {
		b.Errorf("the page of 1,000 stages is %d bytes, want under 1 MB", size)
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func TestStageVersions(t *testing.T) {
	files := versionFiles("acme:old", "acme:new")
	var got []string
	for _, v := range stageVersions(files, "l1", "c0-s1") {
		got = append(got, v.Vector+" "+strings.Join(v.UsedBy, ",")+" "+v.Ready.Reason)
	}
	if diff := cmp.Diff([]string{"acme:new target DeployedHealthy", "acme:old  DeployedHealthy"}, got); diff != "" {
		t.Errorf("versions of l1/c0-s1, newest first (-want +got):\n%s", diff)
	}
	if v := stageVersions(files, "l1", "c0-s2"); len(v) != 0 {
		t.Errorf("l1/c0-s2 has no version, got %+v", v)
	}
}

func TestPipelineEdgeListsFewCandidates(t *testing.T) {
	snap := pipelineSnapshot(1, 2)
	state := snap.State.State
	waiting := state.Promotions["c0-s0-to-s1-2"]
	for seq := int64(3); seq <= 6; seq++ {
		p := waiting.DeepCopy()
		p.Name, p.Spec.Sequence = fmt.Sprintf("c0-s0-to-s1-%d", seq), seq
		state.Promotions[p.Name] = p
	}
	p := BuildPipeline(snap, fixtureNow)
	e := p.Columns[2].Nodes[0].Edges[0]
	var names []string
	for _, c := range e.Candidates {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"c0-s0-to-s1-6", "c0-s0-to-s1-5", "c0-s0-to-s1-4"}, names); diff != "" || e.More != 2 ||
		e.MoreURL != "/r/acme/promotions?config=c0-s0-to-s1" || p.Waiting != 5 {
		t.Errorf("candidates (-want +got):\n%s\nmore %d at %s, %d waiting", diff, e.More, e.MoreURL, p.Waiting)
	}
}

func TestApproveCommand(t *testing.T) {
	snap := pipelineSnapshot(1, 2)
	p := snap.State.State.Promotions["c0-s0-to-s1-2"]
	if got, want := ApproveCommand(snap, p), "vectorflow approve c0-s0-to-s1-2 --repo https://git.example.com/acme.git --vector acme:2026.12.1-100000000Z --signing-key YOUR_KEY"; got != want {
		t.Errorf("ApproveCommand =\n%s\nwant\n%s", got, want)
	}
	snap.URL, snap.Branch, snap.StateBranch, snap.Config.ConfigPath = "/srv/git/my repo's.git", "release", "vf/state", "deploy/vf"
	if got, want := ApproveCommand(snap, p), `vectorflow approve c0-s0-to-s1-2 --repo '/srv/git/my repo'\''s.git' --branch release --config-path deploy/vf --state-branch vf/state --vector acme:2026.12.1-100000000Z --signing-key YOUR_KEY`; got != want {
		t.Errorf("ApproveCommand =\n%s\nwant\n%s", got, want)
	}
}

// TestAStageTheStateDoesNotHoldShowsNoTarget: a stage added since the last
// pass names a vector in its overlay, but only a pass, which renders the
// overlay, can say whether it runs it. Until then the page shows no target
// and says why.
func TestAStageTheStateDoesNotHoldShowsNoTarget(t *testing.T) {
	snap := pipelineSnapshot(1, 2)
	key := source.StageKey("l1", "c0-s1")
	delete(snap.State.State.Stages, key)
	ref := snap.Config.StageIndex[key]
	ref.Vector.Vector = "acme:2026.12.1-100000000Z"
	snap.Config.StageIndex[key] = ref
	for _, c := range BuildPipeline(snap, fixtureNow).Columns {
		for _, n := range c.Nodes {
			if n.Key != key {
				continue
			}
			if n.Vector != "" || len(n.Conditions) != 1 || n.Conditions[0].Reason != "NotRecorded" {
				t.Errorf("node of a stage the state does not hold: target %q, conditions %+v; want none, and why", n.Vector, n.Conditions)
			}
			return
		}
	}
	t.Fatalf("no node for %s", key)
}
