package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// table is rows of columns, printed aligned.
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
