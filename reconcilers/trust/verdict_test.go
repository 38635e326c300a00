package trust

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJudgeCommit(t *testing.T) {
	h := func(s string) string { return strings.Repeat(s, 40)[:40] }
	good, bad, this := h("a"), h("b"), h("c")
	goodContent, badContent := h("1"), h("2")
	trustedParent := CommitVerdict{Trusted: true, LastTrusted: good, Content: goodContent}
	refused := &RefusedCommit{Commit: bad, Author: "alice", Changes: []PathChange{{"promotions/a/a-1.yaml", PathModified}}}
	taintedParent := CommitVerdict{LastTrusted: good, Content: goodContent, Refused: refused}
	added := func(p string) PathChange { return PathChange{Path: p, Action: PathAdded} }
	trusted := func(content string) CommitVerdict {
		return CommitVerdict{Trusted: true, LastTrusted: this, Content: content}
	}
	refusedHere := func(changes ...PathChange) CommitVerdict {
		return CommitVerdict{LastTrusted: good, Content: goodContent,
			Refused: &RefusedCommit{Commit: this, Author: "mallory", Changes: changes}}
	}
	tests := []struct {
		name    string
		facts   CommitFacts
		parents []CommitVerdict
		want    CommitVerdict
	}{
		{
			name:    "a state signer may change anything on a trusted parent",
			facts:   CommitFacts{StateSigner: "vectorflow", Content: badContent},
			parents: []CommitVerdict{trustedParent},
			want:    trusted(badContent),
		},
		{
			name:    "anyone may add a file under approvals/",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{added("approvals/a-1/alice.yaml")}}},
			parents: []CommitVerdict{trustedParent},
			want:    trusted(goodContent),
		},
		{
			name:    "anyone may add a directory under requests/",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{added("requests/a/"), added("approvals/")}}},
			parents: []CommitVerdict{trustedParent},
			want:    trusted(goodContent),
		},
		{
			name:    "anyone may add a hold or a release under holds/",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{added("holds/prod/eu/20261201T120000Z-a1b2c3d4.yaml")}}},
			parents: []CommitVerdict{trustedParent},
			want:    trusted(goodContent),
		},
		{
			name:    "anyone may add a stage's first hold directory",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{added("holds/")}}},
			parents: []CommitVerdict{trustedParent},
			want:    trusted(goodContent),
		},
		{
			name:    "rewriting a hold is refused",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{{"holds/prod/eu/x.yaml", PathModified}}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(PathChange{"holds/prod/eu/x.yaml", PathModified}),
		},
		{
			name:    "deleting a hold is refused",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{{"holds/prod/eu/x.yaml", PathDeleted}}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(PathChange{"holds/prod/eu/x.yaml", PathDeleted}),
		},
		{
			name:    "a file named holds is not the holds directory",
			facts:   CommitFacts{Content: badContent, Changes: [][]PathChange{{added("holds")}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(added("holds")),
		},
		{
			name:    "modifying an approval is refused",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{{"approvals/a-1.yaml", PathModified}}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(PathChange{"approvals/a-1.yaml", PathModified}),
		},
		{
			name:    "deleting a request is refused",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{{"requests/a/x.yaml", PathDeleted}}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(PathChange{"requests/a/x.yaml", PathDeleted}),
		},
		{
			name: "adding a promotion is refused, approvals added with it or not",
			facts: CommitFacts{Content: badContent, Changes: [][]PathChange{{added("approvals/a-1.yaml"),
				added("promotions/a/a-9.yaml")}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(added("promotions/a/a-9.yaml")),
		},
		{
			name:    "a file named approvals is not the approvals directory",
			facts:   CommitFacts{Content: badContent, Changes: [][]PathChange{{added("approvals")}}},
			parents: []CommitVerdict{trustedParent},
			want:    refusedHere(added("approvals")),
		},
		{
			name:    "a merge must only add records against every parent",
			facts:   CommitFacts{Content: goodContent, Changes: [][]PathChange{{added("approvals/x.yaml")}, {{"promotions/a/a-1.yaml", PathModified}}}},
			parents: []CommitVerdict{trustedParent, {Trusted: true, LastTrusted: h("d"), Content: h("3")}},
			want:    refusedHere(PathChange{"promotions/a/a-1.yaml", PathModified}),
		},
		{
			name:  "an untrusted root commit may only add records",
			facts: CommitFacts{Content: badContent, Changes: [][]PathChange{{added("promotions/")}}},
			want:  CommitVerdict{Refused: &RefusedCommit{Commit: this, Author: "mallory", Changes: []PathChange{added("promotions/")}}},
		},
		{
			name:  "a state signer's root commit is trusted",
			facts: CommitFacts{StateSigner: "vectorflow", Content: badContent},
			want:  trusted(badContent),
		},
		{
			name:    "an approval added on a tainted parent stays tainted",
			facts:   CommitFacts{Content: badContent, Changes: [][]PathChange{{added("approvals/a-1/bob.yaml")}}},
			parents: []CommitVerdict{taintedParent},
			want:    taintedParent,
		},
		{
			name:    "a state signer's commit restoring the last trusted content heals",
			facts:   CommitFacts{StateSigner: "vectorflow", Content: goodContent},
			parents: []CommitVerdict{taintedParent},
			want:    trusted(goodContent),
		},
		{
			name:    "a state signer's commit that does not restore it does not heal",
			facts:   CommitFacts{StateSigner: "vectorflow", Content: badContent},
			parents: []CommitVerdict{taintedParent},
			want: CommitVerdict{LastTrusted: good, Content: goodContent, Refused: &RefusedCommit{Commit: bad, Author: "alice",
				Changes: refused.Changes, NotRestoring: []string{this}}},
		},
		{
			name:    "a merge of a tainted parent by a state signer must restore it",
			facts:   CommitFacts{StateSigner: "vectorflow", Content: h("3")},
			parents: []CommitVerdict{{Trusted: true, LastTrusted: h("d"), Content: h("3")}, taintedParent},
			want: CommitVerdict{LastTrusted: good, Content: goodContent, Refused: &RefusedCommit{Commit: bad, Author: "alice",
				Changes: refused.Changes, NotRestoring: []string{this}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.facts.Commit = this
			if tt.facts.StateSigner == "" {
				tt.facts.Author = "mallory"
			}
			got := JudgeCommit(tt.facts, tt.parents)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("JudgeCommit (-want +got):\n%s", diff)
			}
		})
	}
	if len(refused.NotRestoring) != 0 {
		t.Errorf("JudgeCommit changed its parent's verdict: %+v", refused)
	}
}

func TestRefusedCommitDescribe(t *testing.T) {
	r := &RefusedCommit{Commit: strings.Repeat("b", 40), Author: "Alice <alice@example.com>",
		Changes: []PathChange{{"promotions/test-to-prod/test-to-prod-1.yaml", PathModified}},
		Signer:  "signed by alice", Why: "alice is an approver of dev-to-test; approvers may only add approval records"}
	got := r.Describe("vectorflow/state", strings.Repeat("a", 40))
	want := "state commit bbbbbbbbbbbb by Alice <alice@example.com> modified promotions/test-to-prod/test-to-prod-1.yaml, " +
		"signed by alice: alice is an approver of dev-to-test; approvers may only add approval records. Nothing is decided on top of it: " +
		"revert it in a commit signed by the controller's key (or a run --trust key) that restores the content of aaaaaaaaaaaa, " +
		"the last trusted commit (approvals/ and requests/ aside), or reset vectorflow/state to aaaaaaaaaaaa"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
}
