package render

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestBuildLimitsHoldOnEveryBuildOfATree: the Renderer remembers what it
// read from a commit's tree and which contents passed the YAML check, and
// every build of the same tree is still bounded as strictly as the first:
// each overlay of a hostile base is refused, the repository budget counts
// the base's bytes in every build, and the mapping work adds up per build.
func TestBuildLimitsHoldOnEveryBuildOfATree(t *testing.T) {
	// Every overlay reads the base and two files of its own, all of the
	// same size and mapping work.
	fixture := func(base string) (files map[string]file, size, work int64) {
		files = map[string]file{
			"base/kustomization.yaml": {content: "resources: [cm.yaml]\n"},
			"base/cm.yaml":            {content: base},
		}
		for i := range 3 {
			var extra strings.Builder
			fmt.Fprintf(&extra, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n")
			for k := range 10 {
				fmt.Fprintf(&extra, "  k%d: v%d\n", k, i)
			}
			files[fmt.Sprintf("o%d/kustomization.yaml", i)] = file{content: fmt.Sprintf("namePrefix: o%d-\nresources: [../base, extra.yaml]\n", i)}
			files[fmt.Sprintf("o%d/extra.yaml", i)] = file{content: extra.String()}
		}
		for _, name := range []string{"base/kustomization.yaml", "base/cm.yaml", "o0/kustomization.yaml", "o0/extra.yaml"} {
			data := files[name].content
			w, err := repofs.CheckYAMLWork(name, []byte(data), repofs.Limits{}.WithDefaults())
			if err != nil {
				return files, 0, 0 // a hostile base: its own limit is the one tested
			}
			size += int64(len(data))
			work += w
		}
		return files, size, work
	}
	_, size, _ := fixture(wideMapping(100))
	_, _, work := fixture(wideMapping(1000))
	cases := map[string]struct {
		base   string
		limits repofs.Limits
		want   string // "" means every build succeeds
	}{
		"alias bomb":        {base: aliasBomb(4, 9), want: "aliases expand"},
		"40,000 keys":       {base: wideMapping(40000), want: "40000 keys"},
		"oversized file":    {base: wideMapping(100), limits: repofs.Limits{MaxFileSize: 512}, want: "--max-file-size"},
		"repository budget": {base: wideMapping(100), limits: repofs.Limits{MaxRepositorySize: size - 1}, want: "--max-repository-size"},
		"budget per build":  {base: wideMapping(100), limits: repofs.Limits{MaxRepositorySize: size}},
		"mapping work":      {base: wideMapping(1000), limits: repofs.Limits{MaxMappingWork: work - 1}, want: "too large together"},
		"work within bound": {base: wideMapping(1000), limits: repofs.Limits{MaxMappingWork: work}},
	}
	for name, c := range cases {
		files, _, _ := fixture(c.base)
		_, trees := bothTrees(t, files)
		for treeName, tree := range trees {
			t.Run(name+"/"+treeName, func(t *testing.T) {
				r := NewRenderer(Options{Limits: c.limits})
				for round := range 2 {
					for i := range 3 {
						dir := fmt.Sprintf("o%d", i)
						_, err := r.Build(tree, dir)
						if c.want == "" {
							if err != nil {
								t.Fatalf("round %d: Build(%s): %v", round, dir, err)
							}
							continue
						}
						var le *repofs.LimitError
						if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) {
							t.Fatalf("round %d: Build(%s) = %v, want a *LimitError saying %q", round, dir, err, c.want)
						}
					}
				}
			})
		}
	}
}
