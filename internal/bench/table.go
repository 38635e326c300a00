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
	Validate Step = "validate" // vectorflow validate --repo, with an empty cache
	Cold     Step = "run-cold" // the first run --once, with an empty cache
	Warm     Step = "run-warm" // a second run --once, nothing changed, the first one's cache
	Promote  Step = "promote"  // run --once after one template bump, the same cache
	// LiveIdle is one pass of a running `run` that a webhook triggered with
	// nothing changed (vectorflow_reconcile_duration_seconds), and
	// LiveFetch the fetch within it (vectorflow_git_fetch_duration_seconds).
	LiveIdle  Step = "live-idle"
	LiveFetch Step = "live-fetch"
	// LivePromote is from the webhook of a template bump to the first
	// stage's overlay naming the new tag on the server, in a running `run`
	// (the median of its promotions).
	LivePromote Step = "live-promote"
	Shell       Step = "shell" // clone + kustomize edit set image + commit -S + push
	Floor       Step = "floor" // git push of the commit a promotion makes
	// Kustomize is kustomize's library alone building every stage overlay
	// on every core (KustomizeAlone): what validate's builds cost with
	// nothing of vectorflow's around them.
	Kustomize Step = "kustomize"
)

// Steps is the order of the table's columns.
var Steps = []Step{Validate, Cold, Warm, Promote, LiveIdle, LiveFetch, LivePromote, Shell, Floor, Kustomize}

// vectorflowStep says whether a step's peak RSS is vectorflow's (the
// others are git's and kustomize's).
func vectorflowStep(s Step) bool { return s != Shell && s != Floor && s != Kustomize }

// Sample is one measurement of one step at one repository.
type Sample struct {
	Shape  Shape
	Stages int
	Step   Step
	Time   time.Duration
	// MaxRSS is the child's peak resident set, in bytes.
	MaxRSS int64
	// Failed is a step that did not do its work (Auto's run --once that
	// does not settle, a promotion that did not arrive); Time is then how
	// long it took to give up.
	Failed bool
}

// Row is the medians of one repository's samples.
type Row struct {
	Shape  Shape
	Stages int
	Median map[Step]time.Duration
	Runs   int   // samples per step
	MaxRSS int64 // the largest of the vectorflow steps
	// RSS is each vectorflow step's largest peak RSS, in bytes.
	RSS map[Step]int64
	// Failed are the steps that failed in any run; their medians are of
	// the runs that worked, if any.
	Failed map[Step]bool
}

// Rows groups samples by shape and size, in the order they first appear.
func Rows(samples []Sample) []Row {
	type key struct {
		shape  Shape
		stages int
	}
	var order []key
	times := map[key]map[Step][]time.Duration{}
	rss := map[key]map[Step]int64{}
	failed := map[key]map[Step]bool{}
	for _, s := range samples {
		k := key{s.Shape, s.Stages}
		if times[k] == nil {
			times[k] = map[Step][]time.Duration{}
			rss[k] = map[Step]int64{}
			order = append(order, k)
		}
		if s.Failed {
			if failed[k] == nil {
				failed[k] = map[Step]bool{}
			}
			failed[k][s.Step] = true
		} else {
			times[k][s.Step] = append(times[k][s.Step], s.Time)
		}
		if vectorflowStep(s.Step) {
			rss[k][s.Step] = max(rss[k][s.Step], s.MaxRSS)
		}
	}
	rows := make([]Row, 0, len(order))
	for _, k := range order {
		r := Row{Shape: k.shape, Stages: k.stages, Median: map[Step]time.Duration{}, RSS: rss[k], Failed: failed[k]}
		for _, b := range rss[k] {
			r.MaxRSS = max(r.MaxRSS, b)
		}
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
// goals are stated in, and the peak RSS; then each vectorflow step's peak
// RSS; then, per shape, the scaling exponent between each pair of
// consecutive sizes.
func Print(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"shape", "stages", "runs"}
	for _, s := range Steps {
		header = append(header, string(s))
	}
	header = append(header, "validate/kustomize", "warm/cold", "promote/shell", "promote/floor", "live-promote/floor", "peak RSS")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		cells := []string{string(r.Shape), fmt.Sprint(r.Stages), fmt.Sprint(r.Runs)}
		for _, s := range Steps {
			cell := seconds(r.Median[s])
			if r.Failed[s] {
				cell = "failed"
			}
			cells = append(cells, cell)
		}
		cells = append(cells,
			ratio(r.Median[Validate], r.Median[Kustomize]),
			ratio(r.Median[Warm], r.Median[Cold]),
			ratio(r.Median[Promote], r.Median[Shell]),
			ratio(r.Median[Promote], r.Median[Floor]),
			ratio(r.Median[LivePromote], r.Median[Floor]),
			megabytes(r.MaxRSS))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nvectorflow's peak RSS per step (live-* is one running `run`):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header = []string{"shape", "stages"}
	var rssSteps []Step
	for _, s := range Steps {
		if vectorflowStep(s) && s != LiveFetch {
			rssSteps = append(rssSteps, s)
			header = append(header, string(s))
		}
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		cells := []string{string(r.Shape), fmt.Sprint(r.Stages)}
		for _, s := range rssSteps {
			cells = append(cells, megabytes(r.RSS[s]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	scaled := []Step{Validate, Cold, Warm, Promote, LiveIdle, LivePromote}
	var exp strings.Builder
	for _, r := range rows {
		prev := nearestSmaller(rows, r)
		if prev.Stages == 0 {
			continue
		}
		fmt.Fprintf(&exp, "%s\t%d→%d\t", r.Shape, prev.Stages, r.Stages)
		for _, s := range scaled {
			fmt.Fprintf(&exp, "%s\t", exponent(Exponent(prev.Stages, prev.Median[s], r.Stages, r.Median[s])))
		}
		exp.WriteString("\n")
	}
	if exp.Len() == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nscaling exponent (log-log slope; 1 is linear, 2 quadratic):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header = []string{"shape", "stages"}
	for _, s := range scaled {
		header = append(header, string(s))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	fmt.Fprint(tw, exp.String())
	return tw.Flush()
}

// Goal is one goal of the issue at one measured repository.
type Goal struct {
	Goal   string // what is promised, e.g. "chain 1,000 stages: validate ≤ 1 s"
	Figure string // what was measured
	Met    bool
}

func (g Goal) String() string {
	verdict := "missed"
	if g.Met {
		verdict = "met"
	}
	return fmt.Sprintf("%s: %s, %s", g.Goal, g.Figure, verdict)
}

// Goals checks the goals of issue 17 against the rows, for the sizes that
// were measured: validate at 1,000 and 10,000 stages, a cold reconcile and
// its memory at 10,000, an unchanged pass in a running run beyond its fetch
// at 1,000 and 10,000, the warm run --once against the cold one (at 1,000
// stages and more, and with blobs: below that a process's start is most of
// either), one promotion against the shell way and the floor, and the
// memory with blobs of blobBytes. A cell that was not measured misses its
// goal.
func Goals(rows []Row, blobBytes int64) []Goal {
	var goals []Goal
	limit := func(r Row, goal string, step Step, most time.Duration) {
		g := Goal{Goal: fmt.Sprintf("%s %s stages: %s ≤ %s", r.Shape, thousands(r.Stages), goal, bound(most)), Figure: "not measured"}
		if got := r.Median[step]; r.Failed[step] {
			g.Figure = "failed"
		} else if got > 0 {
			g.Figure, g.Met = short(got), got <= most
		}
		goals = append(goals, g)
	}
	rss := func(r Row, goal string, most int64) {
		g := Goal{Goal: fmt.Sprintf("%s %s stages: %s ≤ %s", r.Shape, thousands(r.Stages), goal, size(most)), Figure: "not measured"}
		if r.MaxRSS > 0 {
			g.Figure, g.Met = megabytes(r.MaxRSS), r.MaxRSS <= most
		}
		goals = append(goals, g)
	}
	// times is a ratio of a to b of at most most, or below it if strict.
	times := func(r Row, goal string, a, b Step, most float64, strict bool) {
		g := Goal{Goal: fmt.Sprintf("%s %s stages: %s", r.Shape, thousands(r.Stages), goal), Figure: "not measured"}
		if x, y := r.Median[a], r.Median[b]; r.Failed[a] || r.Failed[b] {
			g.Figure = "failed"
		} else if x > 0 && y > 0 {
			k := float64(x) / float64(y)
			g.Figure = fmt.Sprintf("%s against %s, %.2f×", short(x), short(y), k)
			g.Met = k < most || !strict && k == most
		}
		goals = append(goals, g)
	}
	beyondFetch := func(r Row, most time.Duration) {
		g := Goal{Goal: fmt.Sprintf("%s %s stages: an unchanged pass in a running run ≤ %s beyond its fetch", r.Shape, thousands(r.Stages), bound(most)), Figure: "not measured"}
		if pass, fetch := r.Median[LiveIdle], r.Median[LiveFetch]; pass > 0 && fetch > 0 {
			beyond := max(pass-fetch, 0)
			g.Figure = fmt.Sprintf("%s (pass %s, fetch %s)", short(beyond), short(pass), short(fetch))
			g.Met = beyond <= most
		}
		goals = append(goals, g)
	}
	// besideKustomize adds to the validate goal just checked what
	// kustomize alone took to build the same overlays.
	besideKustomize := func(r Row) {
		if k := r.Median[Kustomize]; k > 0 && !r.Failed[Kustomize] {
			goals[len(goals)-1].Figure += fmt.Sprintf(" (kustomize alone %s)", short(k))
		}
	}
	for _, r := range rows {
		if r.Shape.Automatic() {
			g := Goal{Goal: fmt.Sprintf("%s %s stages: a template change reaches the last automatic stage in one run --once", r.Shape, thousands(r.Stages)), Figure: "not measured"}
			switch {
			case r.Failed[Promote]:
				g.Figure = "failed"
			case r.Median[Promote] > 0:
				g.Figure, g.Met = short(r.Median[Promote]), true
			}
			goals = append(goals, g)
		}
		switch r.Stages {
		case 1000:
			limit(r, "validate", Validate, time.Second)
			besideKustomize(r)
			beyondFetch(r, 50*time.Millisecond)
		case 10000:
			limit(r, "validate", Validate, 20*time.Second)
			besideKustomize(r)
			limit(r, "cold run --once", Cold, time.Minute)
			rss(r, "peak RSS", 1<<30)
			beyondFetch(r, 200*time.Millisecond)
		}
		if r.Stages >= 1000 || r.Shape == Blobs {
			times(r, "second run --once ≤ 10 % of the first", Warm, Cold, 0.10, false)
		}
		if r.Shape == Blobs {
			goal := fmt.Sprintf("peak RSS with %s of blobs", size(blobBytes))
			if blobBytes != 1<<30 {
				goal += " (the goal is for 1 GB)"
			}
			rss(r, goal, 300<<20)
		}
		if !r.Shape.Automatic() { // whose bump is as many promotions as stages
			times(r, "one promotion by run --once faster than the shell way", Promote, Shell, 1, true)
			times(r, "one promotion in a running run ≤ 2× the floor", LivePromote, Floor, 2, false)
		}
	}
	return goals
}

// PrintGoals writes one line per goal.
func PrintGoals(w io.Writer, goals []Goal) error {
	if len(goals) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\ngoals of issue 17:\n")
	for _, g := range goals {
		b.WriteString("  " + g.String() + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
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

// short is a duration as the goals state them: milliseconds below a
// second, seconds with one decimal above.
func short(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// bound is a goal's limit: whole seconds as the issue states them.
func bound(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return short(d)
}

// size is a goal's limit or a size of blobs: whole gigabytes as such.
func size(b int64) string {
	if b >= 1<<30 && b%(1<<30) == 0 {
		return fmt.Sprintf("%d GB", b>>30)
	}
	return megabytes(b)
}

func megabytes(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d MB", b>>20)
}

// thousands writes n with a comma every three digits, as the issue does.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
