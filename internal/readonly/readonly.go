// Package readonly says whether this process checks that the objects the
// state codec and the loader share with their callers, to be read only,
// stay unchanged.
package readonly

import (
	"flag"
	"testing"
)

// Checked is true in a test binary that runs no benchmarks. Tests keep a
// copy of every object handed out to be read only and compare it at the
// next call, so a caller that changes one fails the test; vectorflow
// itself keeps no copies, and a benchmark measures what it does: with the
// checks, a promotion's pass at 10,000 stages took twice as long.
func Checked() bool {
	if !testing.Testing() {
		return false
	}
	// Set by `go test -bench`; registered by the test binary's main before
	// any test or benchmark runs.
	bench := flag.Lookup("test.bench")
	return bench == nil || bench.Value.String() == ""
}
