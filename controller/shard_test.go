package controller

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShardOf: one repository is in one shard whatever the spelling of its
// URL, the hash is FNV-1a of the normalized URL (stable across releases, or
// a rolling update would move repositories between replicas; the wants are
// computed outside Go), and 30 repositories spread over every one of 3
// shards.
func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		urls   []string
		shards int
		want   int
	}{
		{[]string{"https://github.com/acme/app", "https://github.com/acme/app.git", "HTTPS://GitHub.com/acme/app/", "git@github.com:acme/app.git", "ssh://git@github.com/acme/app"}, 3, 1},
		{[]string{"https://github.com/acme/app"}, 1, 0},
		{[]string{"https://github.com/acme/app"}, 0, 0},
		{[]string{"https://github.com/acme/web"}, 7, 3},
	} {
		for _, u := range tc.urls {
			if got := ShardOf(u, tc.shards); got != tc.want {
				t.Errorf("ShardOf(%q, %d) = %d, want %d", u, tc.shards, got, tc.want)
			}
		}
	}
	counts := make([]int, 3)
	for i := range 30 {
		counts[ShardOf(fmt.Sprintf("http://127.0.0.1:4000/repo-%02d.git", i), 3)]++
	}
	for shard, n := range counts {
		if n == 0 {
			t.Errorf("shard %d of 3 has none of 30 repositories: %v", shard, counts)
		}
	}
	if diff := cmp.Diff(30, counts[0]+counts[1]+counts[2]); diff != "" {
		t.Error(diff)
	}
}
