package controller

import (
	"fmt"
	"testing"

	"github.com/vectorflow-dev/vectorflow/source"
)

// stagesIn is a snapshot of the config repository url whose n stages live
// in the repositories urls name, in turn.
func stagesIn(url string, n int, urls ...string) *source.Snapshot {
	snap := &source.Snapshot{URL: url, StageIndex: map[string]source.StageRef{}}
	for i := range n {
		snap.StageIndex[source.StageKey("apps", fmt.Sprint("s", i))] = source.StageRef{URL: urls[i%len(urls)]}
	}
	return snap
}

// TestWatchesEveryLandscapeRepository: a push to any repository a stage
// lives in, under any spelling of its URL, concerns the controller; a push
// to another does not.
func TestWatchesEveryLandscapeRepository(t *testing.T) {
	c := &Controller{opts: Options{URL: "https://git.example/config.git"}}
	c.watched = watchedBy(stagesIn(c.opts.URL, 30, c.opts.URL, "https://git.example/team-a/apps.git", "git@git.example:team-b/apps.git"))
	for url, want := range map[string]bool{
		"https://git.example/config":          true,
		"https://git.example/team-a/apps.git": true,
		"https://git.example/team-a/apps":     true,
		"ssh://git@git.example/team-b/apps":   true,
		"https://git.example/team-b/apps.git": true,
		"https://git.example/team-c/apps.git": false,
	} {
		if got := c.Watches(url, ""); got != want {
			t.Errorf("Watches(%q) = %v, want %v", url, got, want)
		}
	}
}

// BenchmarkWatchedBy is what each pass spends listing what it watches, at
// 10,000 stages in two repositories.
func BenchmarkWatchedBy(b *testing.B) {
	snap := stagesIn("https://git.example/config.git", 10000, "https://git.example/config.git", "https://git.example/team-a/apps.git")
	for b.Loop() {
		watchedBy(snap)
	}
}
