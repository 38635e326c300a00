package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

// TestRedactingWriter: what reaches the logs and the terminal has no
// credentials, even when a URL that carries them got into the text some
// other way (a landscape's repository URL, a library's error), and the
// writer reports the length it was given, as io.Writer callers expect.
func TestRedactingWriter(t *testing.T) {
	var out bytes.Buffer
	w := redactingWriter{&out}
	in := `{"level":"error","msg":"pass failed","error":"fetch branch main of https://bot:hunter2@git.example.com/prod.git: EOF"}` + "\n"
	n, err := w.Write([]byte(in))
	if err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	want := `{"level":"error","msg":"pass failed","error":"fetch branch main of https://xxxxx@git.example.com/prod.git: EOF"}` + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("redacted output (-want +got):\n%s", diff)
	}
}

// TestLogLevels: each --log-level (and the old -v N it replaces) lets
// through the entries Flux's level of that name lets through, in the
// encoding asked for.
func TestLogLevels(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // messages written
	}{
		{nil, []string{"info", "error"}},
		{[]string{"--log-level", "error"}, []string{"error"}},
		{[]string{"--log-level", "info"}, []string{"info", "error"}},
		{[]string{"--log-level", "debug"}, []string{"info", "debug", "error"}},
		{[]string{"--log-level", "trace"}, []string{"info", "debug", "trace", "error"}},
		{[]string{"-v", "0"}, []string{"info", "error"}},
		{[]string{"-v", "1"}, []string{"info", "debug", "error"}},
		{[]string{"-v", "2"}, []string{"info", "debug", "trace", "error"}},
	} {
		cmd := &cobra.Command{}
		var lf logFlags
		lf.register(cmd)
		cmd.SetErr(io.Discard)
		if err := cmd.ParseFlags(append(tc.args, "--log-encoding", "json")); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		log, err := lf.logger(&out)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("info")
		log.V(1).Info("debug")
		log.V(2).Info("trace")
		log.Error(errors.New("boom"), "error")
		var got []string
		dec := json.NewDecoder(&out)
		for dec.More() {
			var entry struct{ Msg string }
			if err := dec.Decode(&entry); err != nil {
				t.Fatalf("%v: a log entry is not JSON: %v\n%s", tc.args, err, out.String())
			}
			got = append(got, entry.Msg)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%v: entries written (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestLogKeepsEveryTransition: the log is where operators read what
// changed, so a burst of identical messages (a first pass over many
// repositories logs hundreds of "transition" lines in one second) is
// written whole. zap's production sampling kept the first 100 of a
// message per second and then one in 100, and the lines lost were those
// of whichever repository came last.
func TestLogKeepsEveryTransition(t *testing.T) {
	for _, encoding := range []string{"json", "console"} {
		cmd := &cobra.Command{}
		var lf logFlags
		lf.register(cmd)
		if err := cmd.ParseFlags([]string{"--log-encoding", encoding}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		log, err := lf.logger(&out)
		if err != nil {
			t.Fatal(err)
		}
		const burst = 500
		for i := range burst {
			log.Info("transition", "change", i)
		}
		if got := bytes.Count(out.Bytes(), []byte("\n")); got != burst {
			t.Errorf("--log-encoding %s: %d of %d transition lines written", encoding, got, burst)
		}
	}
}
