package render

import (
	"context"
	"fmt"
	"testing"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestBuildAheadServesOnlyTheCommitThatHoldsIt: an overlay built in a
// commit's tree with its kustomization edited in memory (repofs.WithFile,
// what a promotion builds ahead of its commit) answers a later check in a
// commit that holds exactly that edit without running kustomize, and is
// never the answer for a commit that holds anything else.
func TestBuildAheadServesOnlyTheCommitThatHoldsIt(t *testing.T) {
	overlay := func(tag string) string {
		return fmt.Sprintf("resources:\n- ../base\nimages:\n- name: app\n  newTag: %q\n", tag)
	}
	fixture := func(tag string) map[string]file {
		return map[string]file{
			"base/kustomization.yaml": {content: "resources:\n- app.yaml\n"},
			"base/app.yaml": {content: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n" +
				"    spec:\n      containers:\n      - name: app\n        image: app:0.0.0\n"},
			"dev/kustomization.yaml": {content: overlay(tag)},
		}
	}
	images := func(r *Renderer, tree repofs.Tree) string {
		t.Helper()
		got, err := r.Images(context.Background(), tree, "dev")
		if err != nil || len(got) != 1 {
			t.Fatalf("Images = %v, %v; want one image", got, err)
		}
		return got[0].Image
	}
	before := commitDir(t, writeFiles(t, fixture("1.0.0")))
	ahead, err := repofs.WithFile(before, "dev/kustomization.yaml", []byte(overlay("2.0.0")))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRenderer(Options{})
	if got := images(r, ahead); got != "app:2.0.0" {
		t.Fatalf("built ahead: %s, want app:2.0.0", got)
	}
	if m := r.Stats().Misses; m != 1 {
		t.Fatalf("%d builds ran kustomize, want 1", m)
	}
	if got := images(r, commitDir(t, writeFiles(t, fixture("2.0.0")))); got != "app:2.0.0" || r.Stats().Misses != 1 {
		t.Errorf("the commit of the edit: %s after %d builds, want app:2.0.0 from the one built ahead", got, r.Stats().Misses)
	}
	if got := images(r, commitDir(t, writeFiles(t, fixture("3.0.0")))); got != "app:3.0.0" || r.Stats().Misses != 2 {
		t.Errorf("a commit of another edit: %s after %d builds, want app:3.0.0 built anew", got, r.Stats().Misses)
	}
	if got := images(r, before); got != "app:1.0.0" {
		t.Errorf("the tree before the edit: %s, want app:1.0.0", got)
	}
}
