package controller

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
)

// The core's LandedResults reads target histories through landedHistories:
// each promotion's commits with their vectors, and no history for a config
// whose target was not read.
func TestLandedHistories(t *testing.T) {
	older := plumbing.NewHash("1111111111111111111111111111111111111111")
	newer := plumbing.NewHash("2222222222222222222222222222222222222222")
	h := gitwriter.NewHistory(newer,
		gitwriter.HistoryEntry{Promotion: "latest-to-dev-2", Config: "latest-to-dev", Sequence: 2, Vector: "acme:2", Target: "Stage/dev/dev", Commit: older},
		gitwriter.HistoryEntry{Promotion: "latest-to-dev-2", Config: "latest-to-dev", Sequence: 2, Vector: "acme:3", Target: "Stage/dev/dev", Commit: newer})
	got := landedHistories(map[string]*gitwriter.History{"latest-to-dev": h, "unread": nil})
	if _, ok := got["unread"]; ok {
		t.Errorf("a config without a history read has one: %v", got["unread"])
	}
	if got["latest-to-dev"] == nil {
		t.Fatal("no history for latest-to-dev")
	}
	want := []pass.LandedCommit{}
	for _, e := range h.Commits("latest-to-dev-2") {
		want = append(want, pass.LandedCommit{Vector: e.Vector, Commit: e.Commit.String()})
	}
	if len(want) != 2 {
		t.Fatalf("the history holds %d commits of latest-to-dev-2, want 2", len(want))
	}
	if diff := cmp.Diff(want, got["latest-to-dev"].Landed("latest-to-dev-2")); diff != "" {
		t.Errorf("Landed (-want +got):\n%s", diff)
	}
	if l := got["latest-to-dev"].Landed("latest-to-dev-9"); len(l) != 0 {
		t.Errorf("Landed of a promotion not on the branch = %v, want none", l)
	}
}
