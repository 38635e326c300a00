package gitwriter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestApplyChecksEveryEditedTree: the check sees the tree the commit would
// have, before anything is pushed, and sees it again when a lost race makes
// the writer re-apply the edits on the other writer's commit.
func TestApplyChecksEveryEditedTree(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	clone := cloneRepo(t, r)
	var seen []string
	change := promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1"))
	change.Check = func(tree *object.Tree) error {
		settings, err := tree.File("settings.env")
		if err != nil {
			return err
		}
		content, err := settings.Contents()
		if err != nil {
			return err
		}
		_, foreignErr := tree.File("foreign/1.txt")
		seen = append(seen, content)
		switch len(seen) {
		case 1:
			if foreignErr == nil {
				t.Errorf("the first check already sees the other writer's file")
			}
			pushForeign(t, clone, "foreign/1.txt", "x\n") // this attempt's push loses
		case 2:
			if foreignErr != nil {
				t.Errorf("the re-applied edit was not checked on the other writer's commit: %v", foreignErr)
			}
		}
		return nil
	}
	res, err := newTestWriter(t, WriterOptions{}).Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"}, change)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("the check ran %d times, want once per attempt (2)", len(seen))
	}
	for i, s := range seen {
		if !strings.Contains(s, "release=v1\n") {
			t.Errorf("check %d saw settings.env without the edit:\n%s", i+1, s)
		}
	}
	if tip := r.tip(t, "main"); res[0].Commit.String() != tip {
		t.Errorf("result %s is not the tip %s", res[0].Commit, tip)
	}
}

// TestApplyCheckRefusal: a refused check fails the change for good with a
// CheckError, and the branch does not move.
func TestApplyCheckRefusal(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	before := r.tip(t, "main")
	refused := errors.New("component api renders nowhere")
	calls := 0
	change := promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1"))
	change.Check = func(*object.Tree) error { calls++; return refused }
	_, err := newTestWriter(t, WriterOptions{}).Apply(context.Background(), Target{Remote: r.httpRemote(), Branch: "main"}, change)
	var ce *CheckError
	if !errors.As(err, &ce) || ce.Change != "p-1" || !errors.Is(err, refused) {
		t.Fatalf("want a CheckError of p-1 wrapping the refusal, got %v", err)
	}
	if calls != 1 {
		t.Errorf("a refused check ran %d times: a refusal is not retried", calls)
	}
	if after := r.tip(t, "main"); after != before {
		t.Errorf("main moved from %s to %s although the check refused", before, after)
	}
	if got := r.promotions(t, "main"); len(got) != 0 {
		t.Errorf("promotions landed although the check refused: %v", got)
	}
}

// TestApplyChecksAnAlreadyAppliedEdit: when the branch already holds what
// the edits write, the result would say the change is applied, so the
// check must pass on that tree too.
func TestApplyChecksAnAlreadyAppliedEdit(t *testing.T) {
	r := newServerRepo(t, fixtureDir)
	w := newTestWriter(t, WriterOptions{})
	target := Target{Remote: r.httpRemote(), Branch: "main"}
	if _, err := w.Apply(context.Background(), target, promotionChange("p-1", 1, lineEdit("settings.env", "release", "v1"))); err != nil {
		t.Fatal(err)
	}
	before := r.tip(t, "main")
	again := promotionChange("p-2", 2, lineEdit("settings.env", "release", "v1"))
	again.Check = func(*object.Tree) error { return errors.New("the overlay does not run it") }
	res, err := w.Apply(context.Background(), target, again)
	var ce *CheckError
	if !errors.As(err, &ce) || ce.Change != "p-2" {
		t.Fatalf("want a CheckError of p-2, got %v (results %+v)", err, res)
	}
	if after := r.tip(t, "main"); after != before {
		t.Errorf("main moved from %s to %s", before, after)
	}
}
