package main

import (
	"io"

	"go.uber.org/zap/zapcore"

	"github.com/vectorflow-dev/vectorflow/source"
)

// zapLevel maps -v N to zap's level: logr's V(N) is zap's -N.
func zapLevel(verbosity int) zapcore.Level { return zapcore.Level(-verbosity) }

// redactingWriter redacts every URL in what is written through it: the
// last line of defence between a credential and the logs, the terminal or
// a CI job's output, whichever code path formatted the text. Each write is
// redacted on its own; the loggers and printers write a whole entry or cell
// at a time, so a URL is never split across writes.
type redactingWriter struct{ w io.Writer }

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, source.RedactText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
