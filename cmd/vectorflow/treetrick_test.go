package main

import (
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// TestDuplicateTreeEntryIsRefused: git itself writes trees with one entry
// per name, but a hand-made tree object may hold two entries named
// `promotions`, and a server without receive.fsckObjects takes it. An
// unsigned commit whose root tree has a forged `promotions` directory
// before the real one, plus an approvals/ file, must not pass for "adds an
// approval record": the forged directory carries a promotion that needs no
// approval, which would run into test.
func TestDuplicateTreeEntryIsRefused(t *testing.T) {
	f := newFlowFixture(t)
	f.run(t)
	wantState(t, f.promotions(t), "dev-to-test-2", v1alpha1.PromotionWaiting)

	dir := f.stateClone(t)
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	tip, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	root, err := tip.Tree()
	if err != nil {
		t.Fatal(err)
	}
	// The forged promotion: dev-to-test-2 again, as dev-to-test-7, needing no
	// approval.
	old, err := root.File("promotions/dev-to-test/dev-to-test-2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	content, err := old.Contents()
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.ReplaceAll(content, "dev-to-test-2", "dev-to-test-7")
	forged = strings.Replace(forged, "requireApproval: true", "requireApproval: false", 1)
	forged = strings.Replace(forged, "sequence: 2\n", "sequence: 7\n", 1)
	if forged == content || !strings.Contains(forged, "requireApproval: false") || !strings.Contains(forged, "sequence: 7\n") {
		t.Fatalf("dev-to-test-2 changed shape; update this test:\n%s", content)
	}
	st := repo.Storer
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		return testutil.StoreObject(t, st, o)
	}
	blobHash := testutil.StoreBlob(t, st, []byte(forged))
	sub := func(tr *object.Tree, name string) *object.Tree {
		s, err := tr.Tree(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	promotions := sub(root, "promotions")
	devToTest := sub(promotions, "dev-to-test")
	forgedDevToTest := &object.Tree{Entries: append(append([]object.TreeEntry(nil), devToTest.Entries...),
		object.TreeEntry{Name: "dev-to-test-7.yaml", Mode: filemode.Regular, Hash: blobHash})}
	forgedPromotions := &object.Tree{}
	for _, e := range promotions.Entries {
		if e.Name == "dev-to-test" {
			e.Hash = put(forgedDevToTest)
		}
		forgedPromotions.Entries = append(forgedPromotions.Entries, e)
	}
	approvalHash := testutil.StoreBlob(t, st, []byte(approvalYAML("dev-to-test-2", "acme:nothing")))
	approvals := &object.Tree{Entries: []object.TreeEntry{{Name: "x.yaml", Mode: filemode.Regular, Hash: approvalHash}}}
	approvalsDir := &object.Tree{Entries: []object.TreeEntry{{Name: "dev-to-test-2", Mode: filemode.Dir, Hash: put(approvals)}}}
	newRoot := &object.Tree{}
	for _, e := range root.Entries {
		if e.Name == "promotions" {
			// The forged directory first: a reader keeping the last entry of
			// a name sees the real one.
			newRoot.Entries = append(newRoot.Entries, object.TreeEntry{Name: "promotions", Mode: filemode.Dir, Hash: put(forgedPromotions)})
		}
		newRoot.Entries = append(newRoot.Entries, e)
	}
	newRoot.Entries = append([]object.TreeEntry{{Name: "approvals", Mode: filemode.Dir, Hash: put(approvalsDir)}}, newRoot.Entries...)
	treeHash := put(newRoot)
	commit := strings.TrimSpace(testutil.Git(t, dir, nil, "commit-tree", treeHash.String(), "-p", tip.Hash.String(), "-m", "approve dev-to-test-2"))
	testutil.Git(t, dir, nil, "push", "-q", "origin", commit+":refs/heads/vectorflow/state")

	out, err := f.cliE("run", "--once", "--signing-key", f.controller)
	if err == nil || !strings.Contains(err.Error(), commit[:12]) || !strings.Contains(err.Error(), "promotions") {
		t.Errorf("run on a state commit with two promotions/ entries: err %v, want the commit %s refused\n%s", err, commit[:12], out)
	}
	t.Logf("refused: %v", err)
	f.wantNotExecuted(t, "test", "dev-to-test-7")
}
