package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3}, 3},
		{[]time.Duration{9, 1, 5}, 5},
		{[]time.Duration{4, 1, 3, 2}, 2},
	} {
		if diff := cmp.Diff(tc.want, Median(tc.in)); diff != "" {
			t.Errorf("Median(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestExponent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n1, n2 int
		t1, t2 time.Duration
		want   float64
	}{
		{"linear", 10, 100, time.Second, 10 * time.Second, 1},
		{"quadratic", 100, 1000, time.Second, 100 * time.Second, 2},
		{"constant", 10, 1000, time.Second, time.Second, 0},
	} {
		if got := Exponent(tc.n1, tc.t1, tc.n2, tc.t2); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: Exponent = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Exponent(10, 0, 100, time.Second); !math.IsNaN(got) {
		t.Errorf("Exponent of an unmeasured cost = %v, want NaN", got)
	}
}

func TestRowsAndPrint(t *testing.T) {
	var samples []Sample
	for _, n := range []int{10, 100} {
		for _, s := range Steps {
			for _, d := range []time.Duration{1, 3, 2} {
				samples = append(samples, Sample{Shape: Chain, Stages: n, Step: s, Time: d * time.Duration(n) * time.Millisecond, MaxRSS: int64(n) << 20})
			}
		}
	}
	samples = append(samples,
		Sample{Shape: Chain, Stages: 10, Step: Shell, Time: time.Second, MaxRSS: 1 << 40},
		Sample{Shape: Chain, Stages: 100, Step: Validate, Time: 200 * time.Millisecond, MaxRSS: 300 << 20})
	rows := Rows(samples)
	rss := func(mb int64, validate int64) map[Step]int64 {
		return map[Step]int64{Validate: validate << 20, Cold: mb << 20, Warm: mb << 20, Promote: mb << 20,
			LiveIdle: mb << 20, LiveFetch: mb << 20, LivePromote: mb << 20}
	}
	want := []Row{
		{Shape: Chain, Stages: 10, Runs: 4, MaxRSS: 10 << 20, RSS: rss(10, 10), Median: map[Step]time.Duration{
			Validate: 20 * time.Millisecond, Cold: 20 * time.Millisecond, Warm: 20 * time.Millisecond,
			Promote: 20 * time.Millisecond, LiveIdle: 20 * time.Millisecond, LiveFetch: 20 * time.Millisecond,
			LivePromote: 20 * time.Millisecond, Shell: 25 * time.Millisecond, Floor: 20 * time.Millisecond, Kustomize: 20 * time.Millisecond}},
		{Shape: Chain, Stages: 100, Runs: 4, MaxRSS: 300 << 20, RSS: rss(100, 300), Median: map[Step]time.Duration{
			Validate: 200 * time.Millisecond, Cold: 200 * time.Millisecond, Warm: 200 * time.Millisecond,
			Promote: 200 * time.Millisecond, LiveIdle: 200 * time.Millisecond, LiveFetch: 200 * time.Millisecond,
			LivePromote: 200 * time.Millisecond, Shell: 200 * time.Millisecond, Floor: 200 * time.Millisecond, Kustomize: 200 * time.Millisecond}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("Rows (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := Print(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"0.200 s", "1.00×", "300 MB",
		"live-promote/floor", "validate/kustomize",
		// the peak RSS of each step: validate's 300 MB beside the others'
		"chain     100    300 MB    100 MB    100 MB   100 MB     100 MB        100 MB",
		"chain  10→100      1.00      1.00      1.00     1.00       1.00          1.00",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, out.String())
		}
	}
}

func TestGoals(t *testing.T) {
	ms := time.Millisecond
	row := func(shape Shape, stages int, rss int64, median map[Step]time.Duration) Row {
		return Row{Shape: shape, Stages: stages, Runs: 1, MaxRSS: rss, Median: median}
	}
	for _, tc := range []struct {
		name      string
		rows      []Row
		blobBytes int64
		want      []string
	}{
		{
			name: "small sizes have only the promotion goals",
			rows: []Row{row(Chain, 10, 90<<20, map[Step]time.Duration{
				Validate: 200 * ms, Cold: 400 * ms, Warm: 150 * ms, Promote: 440 * ms, Shell: 260 * ms,
				LiveIdle: 10 * ms, LiveFetch: 5 * ms, LivePromote: 100 * ms, Floor: 50 * ms})},
			want: []string{
				"chain 10 stages: one promotion by run --once faster than the shell way: 440 ms against 260 ms, 1.69×, missed",
				"chain 10 stages: one promotion in a running run ≤ 2× the floor: 100 ms against 50 ms, 2.00×, met",
			},
		},
		{
			name: "1,000 stages: validate, the unchanged pass beyond its fetch, warm against cold",
			rows: []Row{row(Apps, 1000, 200<<20, map[Step]time.Duration{
				Validate: 5300 * ms, Cold: 8 * time.Second, Warm: 800 * ms, Promote: 200 * ms, Shell: 400 * ms,
				LiveIdle: 70 * ms, LiveFetch: 30 * ms, LivePromote: 110 * ms, Floor: 50 * ms, Kustomize: 1500 * ms})},
			want: []string{
				"apps 1,000 stages: validate ≤ 1 s: 5.3 s (kustomize alone 1.5 s), missed",
				"apps 1,000 stages: an unchanged pass in a running run ≤ 50 ms beyond its fetch: 40 ms (pass 70 ms, fetch 30 ms), met",
				"apps 1,000 stages: second run --once ≤ 10 % of the first: 800 ms against 8.0 s, 0.10×, met",
				"apps 1,000 stages: one promotion by run --once faster than the shell way: 200 ms against 400 ms, 0.50×, met",
				"apps 1,000 stages: one promotion in a running run ≤ 2× the floor: 110 ms against 50 ms, 2.20×, missed",
			},
		},
		{
			name: "10,000 stages: validate, cold, memory; cells not measured miss",
			rows: []Row{row(Chain, 10000, 1<<30+1, map[Step]time.Duration{
				Validate: 19 * time.Second, Cold: 61 * time.Second, Warm: 3 * time.Second, Promote: 400 * ms, Shell: 400 * ms,
				LiveIdle: 250 * ms, LivePromote: 100 * ms, Floor: 50 * ms})},
			want: []string{
				"chain 10,000 stages: validate ≤ 20 s: 19.0 s, met",
				"chain 10,000 stages: cold run --once ≤ 60 s: 61.0 s, missed",
				"chain 10,000 stages: peak RSS ≤ 1 GB: 1024 MB, missed",
				"chain 10,000 stages: an unchanged pass in a running run ≤ 200 ms beyond its fetch: not measured, missed",
				"chain 10,000 stages: second run --once ≤ 10 % of the first: 3.0 s against 61.0 s, 0.05×, met",
				"chain 10,000 stages: one promotion by run --once faster than the shell way: 400 ms against 400 ms, 1.00×, missed",
				"chain 10,000 stages: one promotion in a running run ≤ 2× the floor: 100 ms against 50 ms, 2.00×, met",
			},
		},
		{
			name:      "blobs: memory and warm against cold at 10 stages",
			blobBytes: 1 << 30,
			rows: []Row{row(Blobs, 10, 280<<20, map[Step]time.Duration{
				Validate: 2 * time.Second, Cold: 20 * time.Second, Warm: 3 * time.Second, Promote: 3 * time.Second, Shell: 9 * time.Second,
				LiveIdle: 20 * ms, LiveFetch: 10 * ms, LivePromote: 300 * ms, Floor: 100 * ms})},
			want: []string{
				"blobs 10 stages: second run --once ≤ 10 % of the first: 3.0 s against 20.0 s, 0.15×, missed",
				"blobs 10 stages: peak RSS with 1 GB of blobs ≤ 300 MB: 280 MB, met",
				"blobs 10 stages: one promotion by run --once faster than the shell way: 3.0 s against 9.0 s, 0.33×, met",
				"blobs 10 stages: one promotion in a running run ≤ 2× the floor: 300 ms against 100 ms, 3.00×, missed",
			},
		},
		{
			name: "auto: the bump reaches the last stage, or failed; no one-promotion goals",
			rows: []Row{
				row(Auto, 10, 90<<20, map[Step]time.Duration{Promote: 2600 * ms, Shell: 400 * ms, LivePromote: time.Second, Floor: 50 * ms}),
				{Shape: Auto, Stages: 1000, Runs: 1, MaxRSS: 200 << 20, Failed: map[Step]bool{Promote: true, Cold: true},
					Median: map[Step]time.Duration{Validate: 900 * ms, Warm: time.Second, Shell: 400 * ms, LiveIdle: 40 * ms, LiveFetch: 20 * ms, Floor: 50 * ms}},
			},
			want: []string{
				"auto 10 stages: a template change reaches the last automatic stage in one run --once: 2.6 s, met",
				"auto 1,000 stages: a template change reaches the last automatic stage in one run --once: failed, missed",
				"auto 1,000 stages: validate ≤ 1 s: 900 ms, met",
				"auto 1,000 stages: an unchanged pass in a running run ≤ 50 ms beyond its fetch: 20 ms (pass 40 ms, fetch 20 ms), met",
				"auto 1,000 stages: second run --once ≤ 10 % of the first: failed, missed",
			},
		},
		{
			name: "apps-auto: the bump reaches the first application's last stage; no one-promotion goals",
			rows: []Row{row(AppsAuto, 10000, 900<<20, map[Step]time.Duration{
				Validate: 18 * time.Second, Cold: 59 * time.Second, Warm: 2 * time.Second, Promote: 3 * time.Second, Shell: 400 * ms,
				LiveIdle: 250 * ms, LiveFetch: 100 * ms, LivePromote: 2 * time.Second, Floor: 50 * ms})},
			want: []string{
				"apps-auto 10,000 stages: a template change reaches the last automatic stage in one run --once: 3.0 s, met",
				"apps-auto 10,000 stages: validate ≤ 20 s: 18.0 s, met",
				"apps-auto 10,000 stages: cold run --once ≤ 60 s: 59.0 s, met",
				"apps-auto 10,000 stages: peak RSS ≤ 1 GB: 900 MB, met",
				"apps-auto 10,000 stages: an unchanged pass in a running run ≤ 200 ms beyond its fetch: 150 ms (pass 250 ms, fetch 100 ms), met",
				"apps-auto 10,000 stages: second run --once ≤ 10 % of the first: 2.0 s against 59.0 s, 0.03×, met",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, g := range Goals(tc.rows, tc.blobBytes) {
				got = append(got, g.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Goals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrintGoals(t *testing.T) {
	var out bytes.Buffer
	if err := PrintGoals(&out, nil); err != nil || out.Len() != 0 {
		t.Fatalf("PrintGoals of no goals wrote %q, %v; want nothing", out.String(), err)
	}
	if err := PrintGoals(&out, []Goal{{Goal: "a ≤ 1 s", Figure: "2 s"}, {Goal: "b ≤ 1 s", Figure: "1 s", Met: true}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("\ngoals of issue 17:\n  a ≤ 1 s: 2 s, missed\n  b ≤ 1 s: 1 s, met\n", out.String()); diff != "" {
		t.Errorf("PrintGoals (-want +got):\n%s", diff)
	}
}

func TestReadHistogram(t *testing.T) {
	const metrics = `# HELP vectorflow_reconcile_duration_seconds Duration of one reconcile pass of a repository.
# TYPE vectorflow_reconcile_duration_seconds histogram
vectorflow_reconcile_duration_seconds_bucket{repository="http://127.0.0.1:1/a.git",le="0.005"} 0
vectorflow_reconcile_duration_seconds_bucket{repository="http://127.0.0.1:1/a.git",le="+Inf"} 3
vectorflow_reconcile_duration_seconds_sum{repository="http://127.0.0.1:1/a.git"} 1.5
vectorflow_reconcile_duration_seconds_count{repository="http://127.0.0.1:1/a.git"} 3
vectorflow_reconcile_duration_seconds_sum{repository="a b}"} 0.25 1700000000
vectorflow_reconcile_duration_seconds_count{repository="a b}"} 1 1700000000
vectorflow_reconcile_duration_seconds_summary_sum 100
vectorflow_git_fetch_duration_seconds_sum 0.75
vectorflow_git_fetch_duration_seconds_count 4
`
	for _, tc := range []struct {
		name string
		want Histogram
	}{
		{"vectorflow_reconcile_duration_seconds", Histogram{Sum: 1.75, Count: 4}},
		{"vectorflow_git_fetch_duration_seconds", Histogram{Sum: 0.75, Count: 4}},
		{"vectorflow_git_push_duration_seconds", Histogram{}},
	} {
		got, err := ReadHistogram(metrics, tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := ReadHistogram("x_sum{a=\"b\"} many\n", "x"); err == nil || !strings.Contains(err.Error(), `x_sum: "many" is not a number`) {
		t.Errorf("a sum that is no number: err = %v, want one naming it", err)
	}
	if _, err := ReadHistogram("x_count -1\n", "x"); err == nil || !strings.Contains(err.Error(), "x_count") {
		t.Errorf("a negative count: err = %v, want one naming it", err)
	}
}

func TestOwnTop(t *testing.T) {
	const top = `File: vectorflow
Type: cpu
Showing nodes accounting for 4.10s, 93.61% of 4.38s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      4.20s 95.89%  runtime.main
         0     0%     0%      4.10s 93.61%  main.main
     0.01s  0.23%  0.23%      3.90s 89.04%  github.com/vectorflow-dev/vectorflow/controller.(*Controller).Pass
         0     0%  0.23%      3.00s 68.49%  sigs.k8s.io/kustomize/api/resource.(*Resource).Append
     0.20s  4.57%  4.79%      2.50s 57.08%  github.com/vectorflow-dev/vectorflow/source.Load
         0     0%  4.79%      1.00s 22.83%  github.com/vectorflow-dev/vectorflowx/other.F
         0     0%  4.79%      0.50s 11.42%  github.com/vectorflow-dev/vectorflow/render.Build
`
	want := []string{
		"0.01s  0.23%  0.23%      3.90s 89.04%  github.com/vectorflow-dev/vectorflow/controller.(*Controller).Pass",
		"0.20s  4.57%  4.79%      2.50s 57.08%  github.com/vectorflow-dev/vectorflow/source.Load",
	}
	if diff := cmp.Diff(want, OwnTop(top, 2)); diff != "" {
		t.Errorf("OwnTop(2) (-want +got):\n%s", diff)
	}
	if got := OwnTop(top, 10); len(got) != 3 {
		t.Errorf("OwnTop(10) = %d entries, want the 3 of vectorflow's packages:\n%s", len(got), strings.Join(got, "\n"))
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{10: "10", 100: "100", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFailedSteps: a step that failed in one run is marked, its time left
// out of the median, and the table says "failed" rather than a time.
func TestFailedSteps(t *testing.T) {
	rows := Rows([]Sample{
		{Shape: Auto, Stages: 10, Step: Cold, Time: 9 * time.Second, MaxRSS: 1 << 20, Failed: true},
		{Shape: Auto, Stages: 10, Step: Cold, Time: time.Second, MaxRSS: 1 << 20},
		{Shape: Auto, Stages: 10, Step: Warm, Time: time.Second, MaxRSS: 1 << 20},
	})
	want := []Row{{Shape: Auto, Stages: 10, Runs: 1, MaxRSS: 1 << 20, RSS: map[Step]int64{Cold: 1 << 20, Warm: 1 << 20},
		Failed: map[Step]bool{Cold: true}, Median: map[Step]time.Duration{Cold: time.Second, Warm: time.Second}}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("Rows (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := Print(&out, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "auto      10     1         -    failed   1.000 s") {
		t.Errorf("the table does not show the cold run as failed:\n%s", out.String())
	}
}
