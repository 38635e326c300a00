package render

import (
	"strings"
	"sync"
	"testing"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// changingTree is a folder whose files change while a build reads them:
// every read after a file's first returns edited content.
type changingTree struct {
	repofs.Tree
	mu    sync.Mutex
	reads map[string]int
}

func (t *changingTree) ReadFile(name string) ([]byte, error) {
	data, err := t.Tree.ReadFile(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reads[name]++
	if err == nil && t.reads[name] > 1 {
		data = []byte(strings.ReplaceAll(string(data), "value-1", "value-2"))
	}
	return data, err
}

// TestBuildReadsEachFileOnce: kustomize asks for a file more than once in
// one build (CleanedAbs, then ReadFile). Each ask read the file from the
// tree again: a folder's file twice from disk, and what kustomize built
// from could be a later content than the one the build's cache key
// hashed. A build reads each file from the tree once and builds from that.
func TestBuildReadsEachFileOnce(t *testing.T) {
	dir := writeFiles(t, map[string]file{
		"base/kustomization.yaml":    {content: "resources:\n- cm.yaml\n"},
		"base/cm.yaml":               {content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  key: value-1\n"},
		"overlay/kustomization.yaml": {content: "resources:\n- ../base\nnamePrefix: x-\n"},
	})
	tree := &changingTree{Tree: repofs.DirTree(dir), reads: map[string]int{}}
	got, err := NewRenderer(Options{}).Build(tree, "overlay")
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range tree.reads {
		if n > 1 {
			t.Errorf("the build read %s from the tree %d times", name, n)
		}
	}
	if !strings.Contains(string(got), "value-1") || strings.Contains(string(got), "value-2") {
		t.Errorf("the build did not render the content it first read:\n%s", got)
	}
}
