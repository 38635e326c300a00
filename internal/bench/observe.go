package bench

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Histogram is the running totals of one Prometheus histogram, summed over
// its label sets: two readings around a pass give that pass's duration.
type Histogram struct {
	Sum   float64 // seconds
	Count uint64
}

// ReadHistogram finds the totals of histogram name in a /metrics answer
// (the Prometheus text format). A histogram nothing was observed in yet is
// absent, and reads as zero.
func ReadHistogram(metrics, name string) (Histogram, error) {
	var h Histogram
	sc := bufio.NewScanner(strings.NewReader(metrics))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		metric, value, ok := strings.Cut(line, " ")
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			// Label values may hold spaces: the value follows the last brace.
			j := strings.LastIndexByte(line, '}')
			metric, value, ok = line[:i], line[j+1:], j > i
		}
		if !ok {
			continue
		}
		value, _, _ = strings.Cut(strings.TrimSpace(value), " ") // a timestamp may follow
		switch metric {
		case name + "_sum":
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return Histogram{}, fmt.Errorf("/metrics: %s_sum: %q is not a number", name, value)
			}
			h.Sum += v
		case name + "_count":
			v, err := strconv.ParseFloat(value, 64)
			if err != nil || v < 0 {
				return Histogram{}, fmt.Errorf("/metrics: %s_count: %q is not a count", name, value)
			}
			h.Count += uint64(v)
		}
	}
	return h, sc.Err()
}

// OwnTop is the first n entries of a `go tool pprof -top -cum` listing that
// are vectorflow's own functions (module github.com/vectorflow-dev/vectorflow,
// its dependencies left out), as listed.
func OwnTop(top string, n int) []string {
	const module = "github.com/vectorflow-dev/vectorflow/"
	var out []string
	for _, line := range strings.Split(top, "\n") {
		f := strings.Fields(line)
		// flat flat% sum% cum cum% function…
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") || !strings.HasPrefix(f[5], module) {
			continue
		}
		out = append(out, strings.TrimSpace(line))
		if len(out) == n {
			break
		}
	}
	return out
}
