package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// manyStages is a snapshot of n stages on overlays of one base; every third
// overlay names a resource that does not exist, so it does not build.
func manyStages(t *testing.T, n int) *Snapshot {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("base/kustomization.yaml", "resources:\n- cm.yaml\n")
	write("base/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	tree := repofs.DirTree(dir)
	s := &Snapshot{StageIndex: map[string]StageRef{}}
	for i := range n {
		name := fmt.Sprintf("s%03d", i)
		overlay := "overlays/" + name
		k := fmt.Sprintf("namePrefix: %s-\nresources:\n- ../../base\n", name)
		if i%3 == 0 {
			k += "- missing.yaml\n"
		}
		write(overlay+"/kustomization.yaml", k)
		stage := &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.StageSpec{Landscape: "l", Path: overlay}}
		s.Objects = append(s.Objects, Object{File: "vectorflow/" + name + ".yaml", Kind: v1alpha1.StageKind, Name: name, Value: stage})
		s.StageIndex[StageKey("l", name)] = StageRef{Landscape: "l", Name: name, Overlay: overlay, Tree: tree}
	}
	return s
}

// slowBuilder is a real Renderer whose builds of earlier overlays take
// longer, so concurrent builds finish in the reverse order; it counts the
// builds running at once.
type slowBuilder struct {
	*render.Renderer
	delay         func(dir string) time.Duration
	running, most atomic.Int32
	started       atomic.Int32
	onStart       func(n int32)
	mu            sync.Mutex
}

func (b *slowBuilder) BuildReads(ctx context.Context, tree repofs.Tree, dir string) ([]byte, []string, error) {
	n := b.started.Add(1)
	if b.onStart != nil {
		b.onStart(n)
	}
	now := b.running.Add(1)
	defer b.running.Add(-1)
	b.mu.Lock()
	if now > b.most.Load() {
		b.most.Store(now)
	}
	b.mu.Unlock()
	select {
	case <-time.After(b.delay(dir)):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return b.Renderer.BuildReads(ctx, tree, dir)
}

// TestBuildStagesConcurrently: overlays build on several workers at once,
// and the problems are those of one build after another, in the same order.
func TestBuildStagesConcurrently(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := manyStages(t, 30)
	one := func(string) time.Duration { return 0 }
	runtime.GOMAXPROCS(1)
	want, err := BuildStages(context.Background(), s, &slowBuilder{Renderer: render.NewRenderer(render.Options{}), delay: one})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 10 {
		t.Fatalf("want 10 problems (every third overlay), got %d: %v", len(want), want)
	}
	runtime.GOMAXPROCS(4)
	b := &slowBuilder{Renderer: render.NewRenderer(render.Options{}), delay: func(dir string) time.Duration {
		var i int
		_, _ = fmt.Sscanf(filepath.Base(dir), "s%d", &i)
		return time.Duration(30-i) * time.Millisecond
	}}
	got, err := BuildStages(context.Background(), s, b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("concurrent BuildStages differs from one build at a time (-want +got):\n%s", diff)
	}
	if most := b.most.Load(); most < 2 || most > 4 {
		t.Errorf("%d builds ran at once, want between 2 and GOMAXPROCS (4)", most)
	}
}

// TestBuildStagesStopsWhenCancelled: once ctx is done, BuildStages returns
// its error at once and starts no further build.
func TestBuildStagesStopsWhenCancelled(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := manyStages(t, 60)
	// The timeout only keeps a broken BuildStages from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := &slowBuilder{Renderer: render.NewRenderer(render.Options{}), delay: func(string) time.Duration { return time.Hour }}
	b.onStart = func(n int32) {
		if n == 3 {
			cancel()
		}
	}
	start := time.Now()
	_, err := BuildStages(ctx, s, b)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("BuildStages = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("BuildStages took %v after cancel", d)
	}
	if n := b.started.Load(); n > 3+4 {
		t.Errorf("%d builds started, want at most 3 + one per worker", n)
	}
}
