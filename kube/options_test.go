package kube

import (
	"testing"
	"time"
)

func TestOrdinal(t *testing.T) {
	for _, tc := range []struct {
		host   string
		shards int
		want   int
	}{
		{"vectorflow-0", 3, 0},
		{"vectorflow-2", 3, 2},
		{"vectorflow-3", 3, -1}, // more replicas than shards: no shard of its own
		{"vectorflow-7d9f8c6b5-x2x4q", 3, -1},
		{"vectorflow", 1, -1},
		{"my-vectorflow-12", 20, 12},
	} {
		if got := Ordinal(tc.host, tc.shards); got != tc.want {
			t.Errorf("Ordinal(%q, %d) = %d, want %d", tc.host, tc.shards, got, tc.want)
		}
	}
}

func TestOptionsCheck(t *testing.T) {
	flux := LeaseTiming{LeaseDuration: 35 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"one replica", Options{Shards: 1, ShardID: -1}, ""},
		{"leader election, Flux's defaults", Options{LeaderElection: true, Timing: flux, Shards: 3, ShardID: -1}, ""},
		{"no shards", Options{Shards: 0, ShardID: -1}, "--shards 0: want at least 1"},
		{"shard id out of range", Options{Shards: 3, ShardID: 3}, "--shard-id 3: the shards are 0 to 2 (--shards 3)"},
		{"static shards need an id", Options{Shards: 3, ShardID: -1},
			"--shards 3 without --enable-leader-election needs --shard-id (or a StatefulSet pod name ending in the ordinal): which shard does this replica run?"},
		{"renew deadline past the lease", Options{LeaderElection: true, Shards: 1, ShardID: -1,
			Timing: LeaseTiming{LeaseDuration: 10 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second}},
			"leader election wants --leader-election-retry-period (1s) < --leader-election-renew-deadline (10s) < --leader-election-lease-duration (10s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := tc.o.Check(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Check() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRegistry: on Kubernetes /metrics has the Go runtime's and the
// process's metrics, once each.
func TestRegistry(t *testing.T) {
	for range 2 {
		mfs, err := Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, mf := range mfs {
			have[mf.GetName()] = true
		}
		for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
			if !have[name] {
				t.Errorf("the registry has no %s", name)
			}
		}
	}
}
