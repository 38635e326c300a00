package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Step is one thing the harness times.
type Step string

const (
	Validate Step = "validate"       // vectorflow validate --repo
	Cold     Step = "run-cold"       // the first run --once
	Warm     Step = "run-warm"       // a second run --once, nothing changed
	Promote  Step = "promote"        // run --once after one template bump
	Shell    Step = "shell"          // clone + kustomize edit set image + commit -S + push
	Floor    Step = "floor"          // git push of one commit
	RSS      Step = "vectorflow-rss" // the largest peak RSS of the vectorflow processes
)

// Steps is the order of the table's columns.
var Steps = []Step{Validate, Cold, Warm, Promote, Shell, Floor}

// Sample is one measurement of one step at one repository.
type Sample struct {
	Shape  Shape
	Stages int
	Step   Step
	Time   time.Duration
	// MaxRSS is the child's peak resident set, in bytes.
	MaxRSS int64
}

// Row is the medians of one repository's samples.
type Row struct {
	Shape  Shape
	Stages int
	Median map[Step]time.Duration
	Runs   int   // samples per step
	MaxRSS int64 // the largest of the vectorflow steps
}

// Rows groups samples by shape and size, in the order they first appear.
func Rows(samples []Sample) []Row {
	type key struct {
		shape  Shape
		stages int
	}
	var order []key
	times := map[key]map[Step][]time.Duration{}
	rss := map[key]int64{}
	for _, s := range samples {
		k := key{s.Shape, s.Stages}
		if times[k] == nil {
			times[k] = map[Step][]time.Duration{}
			order = append(order, k)
		}
		times[k][s.Step] = append(times[k][s.Step], s.Time)
		if s.Step != Shell && s.Step != Floor {
			rss[k] = max(rss[k], s.MaxRSS)
		}
	}
	rows := make([]Row, 0, len(order))
	for _, k := range order {
		r := Row{Shape: k.shape, Stages: k.stages, Median: map[Step]time.Duration{}, MaxRSS: rss[k]}
		for step, ts := range times[k] {
			r.Median[step] = Median(ts)
			r.Runs = max(r.Runs, len(ts))
		}
		rows = append(rows, r)
	}
	return rows
}

// Median is the middle of ts (the mean of the two middle ones for an even
// count), 0 for none.
func Median(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Exponent is the log-log slope of a cost between two sizes: 1 is linear,
// 2 quadratic. It is NaN when either cost is missing.
func Exponent(n1 int, t1 time.Duration, n2 int, t2 time.Duration) float64 {
	if n1 <= 0 || n2 <= 0 || n1 == n2 || t1 <= 0 || t2 <= 0 {
		return math.NaN()
	}
	return math.Log(float64(t2)/float64(t1)) / math.Log(float64(n2)/float64(n1))
}

// Print writes the table: per repository the medians, the ratios that the
// goals are stated in, and the peak RSS; then, per shape, the scaling
// exponent between each pair of consecutive sizes.
func Print(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"shape", "stages", "runs"}
	for _, s := range Steps {
		header = append(header, string(s))
	}
	header = append(header, "warm/cold", "promote/shell", "promote/floor", "peak RSS")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		cells := []string{string(r.Shape), fmt.Sprint(r.Stages), fmt.Sprint(r.Runs)}
		for _, s := range Steps {
			cells = append(cells, seconds(r.Median[s]))
		}
		cells = append(cells,
			ratio(r.Median[Warm], r.Median[Cold]),
			ratio(r.Median[Promote], r.Median[Shell]),
			ratio(r.Median[Promote], r.Median[Floor]),
			fmt.Sprintf("%d MB", r.MaxRSS>>20))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	var exp strings.Builder
	for _, r := range rows {
		prev := nearestSmaller(rows, r)
		if prev.Stages == 0 {
			continue
		}
		fmt.Fprintf(&exp, "%s\t%d→%d\t", r.Shape, prev.Stages, r.Stages)
		for _, s := range []Step{Validate, Cold, Warm, Promote} {
			fmt.Fprintf(&exp, "%s\t", exponent(Exponent(prev.Stages, prev.Median[s], r.Stages, r.Median[s])))
		}
		exp.WriteString("\n")
	}
	if exp.Len() == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nscaling exponent (log-log slope; 1 is linear, 2 quadratic):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tstages\tvalidate\trun-cold\trun-warm\tpromote\t")
	fmt.Fprint(tw, exp.String())
	return tw.Flush()
}

func nearestSmaller(rows []Row, r Row) Row {
	var best Row
	for _, p := range rows {
		if p.Shape == r.Shape && p.Stages < r.Stages && p.Stages > best.Stages {
			best = p
		}
	}
	return best
}

func seconds(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f s", d.Seconds())
}

func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func exponent(k float64) string {
	if math.IsNaN(k) {
		return "-"
	}
	return fmt.Sprintf("%.2f", k)
}
