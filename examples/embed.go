// Package examples holds the example repositories. The quickstart is
// embedded so `vectorflow demo` can build its throwaway repository from it
// on a machine that has only the binary.
package examples

import "embed"

// Quickstart is the examples/quickstart directory, rooted at "quickstart".
//
//go:embed all:quickstart
var Quickstart embed.FS
