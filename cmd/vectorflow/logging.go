package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vectorflow-dev/vectorflow/source"
)

// logFlags are the logging flags of Flux's controllers
// (fluxcd/pkg/runtime/logger): --log-level and --log-encoding, with Flux's
// level names, so one runbook serves both. The encoding defaults to console,
// not Flux's json: run is started in a terminal or a CI job as often as in a
// pod, and it always has defaulted to console.
type logFlags struct {
	level    logLevel
	encoding string
}

func (f *logFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Var(&f.level, "log-level", "log verbosity: trace, debug, info (transitions and errors) or error")
	fs.StringVar(&f.encoding, "log-encoding", "console", "log encoding: console or json")
	deprecatedAlias(cmd, "log-format", "log-encoding")
	// -v N is an old way to say a level: logr's V(N) is zap's level -N.
	fs.VarP(verbosity{&f.level}, "verbosity", "v", "log verbosity (0 info, 1 debug)")
	markDeprecatedAlias(cmd, "verbosity", "log-level", "use --log-level instead (-v 1 is --log-level debug)")
}

// logger returns a structured logger writing to w: controller-runtime's
// production logger (its encoders, stack traces on errors) without its
// sampling, which drops all but one in 100 of a message logged more than
// 100 times a second: a first pass over many repositories logs hundreds of
// transitions at once, and every one is a record someone may look for.
func (f logFlags) logger(w io.Writer) (logr.Logger, error) {
	var enc zapcore.Encoder
	switch f.encoding {
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	case "console":
		enc = zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	default:
		return logr.Logger{}, fmt.Errorf("--log-encoding %q: use console or json", f.encoding)
	}
	sink := zapcore.AddSync(w)
	core := zapcore.NewCore(&ctrlzap.KubeAwareEncoder{Encoder: enc}, sink, zapcore.Level(f.level))
	return zapr.NewLogger(zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel), zap.ErrorOutput(sink))), nil
}

// logLevels are Flux's level names; zap counts logr's V(N) as level -N.
var logLevels = []struct {
	name  string
	level zapcore.Level
}{
	{"trace", zapcore.DebugLevel - 1},
	{"debug", zapcore.DebugLevel},
	{"info", zapcore.InfoLevel},
	{"error", zapcore.ErrorLevel},
}

// logLevel is the value of --log-level: a zap level, named as Flux names it.
type logLevel zapcore.Level

func (l *logLevel) Set(s string) error {
	for _, n := range logLevels {
		if n.name == s {
			*l = logLevel(n.level)
			return nil
		}
	}
	return fmt.Errorf("use trace, debug, info or error")
}

func (l *logLevel) String() string {
	for _, n := range logLevels {
		if logLevel(n.level) == *l {
			return n.name
		}
	}
	return strconv.Itoa(int(*l)) // a level only -v reaches
}

func (l *logLevel) Type() string { return "string" } // as Flux shows it

// verbosity is the old -v N: it sets the level --log-level sets.
type verbosity struct{ level *logLevel }

func (v verbosity) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 127 {
		return fmt.Errorf("want a number from 0 to 127 (or use --log-level)")
	}
	*v.level = logLevel(-n)
	return nil
}

func (v verbosity) String() string { return strconv.Itoa(-int(*v.level)) }

func (v verbosity) Type() string { return "int" }

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
