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
	samples = append(samples, Sample{Shape: Chain, Stages: 10, Step: Shell, Time: time.Second, MaxRSS: 1 << 40})
	rows := Rows(samples)
	want := []Row{
		{Shape: Chain, Stages: 10, Runs: 4, MaxRSS: 10 << 20, Median: map[Step]time.Duration{
			Validate: 20 * time.Millisecond, Cold: 20 * time.Millisecond, Warm: 20 * time.Millisecond,
			Promote: 20 * time.Millisecond, Shell: 25 * time.Millisecond, Floor: 20 * time.Millisecond}},
		{Shape: Chain, Stages: 100, Runs: 3, MaxRSS: 100 << 20, Median: map[Step]time.Duration{
			Validate: 200 * time.Millisecond, Cold: 200 * time.Millisecond, Warm: 200 * time.Millisecond,
			Promote: 200 * time.Millisecond, Shell: 200 * time.Millisecond, Floor: 200 * time.Millisecond}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Fatalf("Rows (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := Print(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"0.200 s", "1.00×", "100 MB", "chain  10→100      1.00      1.00      1.00     1.00"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, out.String())
		}
	}
}
