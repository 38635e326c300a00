package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// table is rows of columns, printed aligned: what the commands without
// kubectl-style output (audit, validate) print.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cols ...string) { t.rows = append(t.rows, cols) }

func (t *table) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(cols []string) {
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	line(t.header)
	for _, r := range t.rows {
		line(r)
	}
	return tw.Flush()
}

// printStructured prints v as json or yaml; ok is false for table output.
// get prints with cli-runtime's printers instead (outputFormat).
func printStructured(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	case "table", "":
		return false, nil
	}
	return true, fmt.Errorf("unknown output format %q: use table, json or yaml", format)
}

// outputFormat is a parsed -o flag of get: kubectl's formats, printed with
// cli-runtime's printers.
type outputFormat struct {
	// kind is table, wide, name, json, yaml or jsonpath.
	kind     string
	jsonpath string
}

// outputFormats is what -o accepts, for its help and its errors.
const outputFormats = "wide, name, json, yaml or jsonpath=TEMPLATE"

func parseOutputFormat(s string) (outputFormat, error) {
	switch s {
	case "", "table":
		return outputFormat{kind: "table"}, nil
	case "wide", "name", "json", "yaml":
		return outputFormat{kind: s}, nil
	}
	if tmpl, ok := strings.CutPrefix(s, "jsonpath="); ok {
		if tmpl == "" {
			return outputFormat{}, fmt.Errorf("-o jsonpath= needs a template, for example -o jsonpath='{.items[*].metadata.name}'")
		}
		return outputFormat{kind: "jsonpath", jsonpath: relaxedJSONPath(tmpl)}, nil
	}
	return outputFormat{}, fmt.Errorf("unknown output format %q: use %s", s, outputFormats)
}

// relaxedJSONPath lets a template be written without its braces
// (`.status.state`), as kubectl lets it.
func relaxedJSONPath(tmpl string) string {
	if strings.Contains(tmpl, "{") {
		return tmpl
	}
	if !strings.HasPrefix(tmpl, ".") {
		tmpl = "." + tmpl
	}
	return "{" + tmpl + "}"
}

// structured reports whether f prints objects rather than rows.
func (f outputFormat) structured() bool { return f.kind != "table" && f.kind != "wide" }

// printer is cli-runtime's printer for f.
func (f outputFormat) printer() (printers.ResourcePrinter, error) {
	switch f.kind {
	case "table", "wide":
		return printers.NewTablePrinter(printers.PrintOptions{Wide: f.kind == "wide"}), nil
	case "name":
		return &printers.NamePrinter{}, nil
	case "json":
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	case "jsonpath":
		p, err := printers.NewJSONPathPrinter(f.jsonpath)
		if err != nil {
			return nil, fmt.Errorf("-o jsonpath=%s: %w", f.jsonpath, err)
		}
		p.AllowMissingKeys(true)
		return p, nil
	}
	return nil, fmt.Errorf("unknown output format %q: use %s", f.kind, outputFormats)
}

// printObjects prints objects with p: each on its own for -o name, a
// single object as itself, several (or none) in a `kind: List` as kubectl
// prints them.
func printObjects(p printers.ResourcePrinter, w io.Writer, objs []runtime.Object, single bool) error {
	if _, ok := p.(*printers.NamePrinter); ok || (single && len(objs) == 1) {
		for _, o := range objs {
			if err := p.PrintObj(o, w); err != nil {
				return err
			}
		}
		return nil
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: make([]runtime.RawExtension, 0, len(objs))}
	for _, o := range objs {
		list.Items = append(list.Items, runtime.RawExtension{Object: o})
	}
	return p.PrintObj(list, w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// transitionsShownByLog reports whether run's log already showed a person
// each transition, as it happened: the log, at info level or finer, logs
// every one, and when standard output is the terminal that shows the log,
// the summary run --once prints at the end would repeat each. A summary
// for a pipe or a file is still printed.
func transitionsShownByLog(level logLevel, stdoutTerminal, stderrTerminal bool) bool {
	return stdoutTerminal && stderrTerminal && zapcore.Level(level) <= zapcore.InfoLevel
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
