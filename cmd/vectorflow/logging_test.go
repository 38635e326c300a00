package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
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
