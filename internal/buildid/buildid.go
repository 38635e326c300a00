// Package buildid names the vectorflow build that is running, for the keys
// of on-disk caches: a new binary may render or decode differently, so what
// one build cached is never read by another.
package buildid

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
)

// String identifies this build: the module version and VCS revision it was
// built from, with every dependency's version (kustomize's among them). A
// build from a modified or unknown revision (tests, `go run`) is identified
// by its executable file too, so two such builds never share a cache entry.
func String() string {
	once.Do(func() { id = compute() })
	return id
}

var (
	once sync.Once
	id   string
)

func compute() string {
	var b strings.Builder
	info, ok := debug.ReadBuildInfo()
	if !ok {
		b.WriteString("no build info\n")
	} else {
		fmt.Fprintf(&b, "%s %s %s\n", info.GoVersion, info.Main.Path, info.Main.Version)
		for _, d := range info.Deps {
			fmt.Fprintf(&b, "%s %s %s\n", d.Path, d.Version, d.Sum)
			if d.Replace != nil {
				fmt.Fprintf(&b, "=> %s %s %s\n", d.Replace.Path, d.Replace.Version, d.Replace.Sum)
			}
		}
	}
	revision, modified := "", true
	if ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value != "false"
			}
		}
	}
	fmt.Fprintf(&b, "revision %s modified %t\n", revision, modified)
	if revision == "" || modified {
		// No revision names the source: the executable itself does.
		exe, err := os.Executable()
		if err == nil {
			if st, err := os.Stat(exe); err == nil {
				fmt.Fprintf(&b, "executable %s %d %d\n", exe, st.Size(), st.ModTime().UnixNano())
				return b.String()
			}
		}
		fmt.Fprintf(&b, "process %d\n", os.Getpid()) // unknown: share nothing
	}
	return b.String()
}
