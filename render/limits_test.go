package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// aliasBomb is a "billion laughs" document: each level names the previous
// one `width` times, so it expands to width^depth scalars while its text
// stays a few hundred bytes.
func aliasBomb(width, depth int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  l0: &l0 [lol]\n")
	for i := 1; i <= depth; i++ {
		refs := make([]string, width)
		for j := range refs {
			refs[j] = fmt.Sprintf("*l%d", i-1)
		}
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.Join(refs, ", "))
	}
	return b.String()
}

// wideMapping is one mapping with n keys: kyaml's mapping decode is
// quadratic in them.
func wideMapping(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wide\ndata:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String()
}

// TestBuildRefusesHostileYAML: a file that would make kustomize or kyaml
// run out of memory or time is refused before they see it, with an error
// naming the file and the limit. The bomb here expands to 4^9 (262,144)
// nodes, which kustomize builds today in a few hundred MB; the real one
// (9 levels of 9) took 19 GB, and the bound stops both alike.
func TestBuildRefusesHostileYAML(t *testing.T) {
	cases := map[string]struct {
		resource string
		limits   repofs.Limits
		want     []string
	}{
		"alias bomb":        {resource: aliasBomb(4, 9), want: []string{"apps/cm.yaml", "aliases expand", "10000"}},
		"billion laughs":    {resource: aliasBomb(9, 9), want: []string{"apps/cm.yaml", "aliases expand"}},
		"40,000 keys":       {resource: wideMapping(40000), want: []string{"apps/cm.yaml", "40000 keys", "at most 5000"}},
		"oversized file":    {resource: wideMapping(100), limits: repofs.Limits{MaxFileSize: 512}, want: []string{"apps/cm.yaml", "512 bytes", "--max-file-size"}},
		"repository budget": {resource: wideMapping(200), limits: repofs.Limits{MaxRepositorySize: 1024}, want: []string{"apps/cm.yaml", "1024 bytes", "--max-repository-size"}},
	}
	for name, c := range cases {
		if c.resource == "" {
			continue
		}
		_, trees := bothTrees(t, map[string]file{
			"apps/kustomization.yaml": {content: "resources: [cm.yaml]\n"},
			"apps/cm.yaml":            {content: c.resource},
		})
		for treeName, tree := range trees {
			t.Run(name+"/"+treeName, func(t *testing.T) {
				_, err := NewRenderer(Options{Limits: c.limits}).Build(tree, "apps")
				if err == nil {
					t.Fatal("Build succeeded; want the file refused")
				}
				var le *repofs.LimitError
				if !errors.As(err, &le) {
					t.Fatalf("Build error is not a *LimitError: %v", err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			})
		}
	}
}

// TestBuildBoundsMappingWork: files each within the key bound, together
// too costly for kyaml's quadratic mapping decode, are refused at the file
// that crosses the bound.
func TestBuildBoundsMappingWork(t *testing.T) {
	files := map[string]file{}
	var resources []string
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("cm-%d.yaml", i)
		files["apps/"+name] = file{content: strings.Replace(wideMapping(1000), "name: wide", fmt.Sprintf("name: wide-%d", i), 1)}
		resources = append(resources, name)
	}
	files["apps/kustomization.yaml"] = file{content: "resources: [" + strings.Join(resources, ", ") + "]\n"}
	tree := repofs.DirTree(writeFiles(t, files))
	if _, err := NewRenderer(Options{Limits: repofs.Limits{MaxMappingWork: 5*1000*1000 + 1000}}).Build(tree, "apps"); err != nil {
		t.Fatalf("five mappings of 1000 keys within a bound of 5,001,000: %v", err)
	}
	_, err := NewRenderer(Options{Limits: repofs.Limits{MaxMappingWork: 4*1000*1000 + 999}}).Build(tree, "apps")
	var le *repofs.LimitError
	if !errors.As(err, &le) || le.File != "apps/cm-4.yaml" || !strings.Contains(err.Error(), "keys squared add up to more than 4000999") {
		t.Fatalf("Build = %v, want the fifth file refused for mapping work", err)
	}
}

// TestCheckYAMLAllowsOrdinaryFiles: the bounds leave real manifests alone,
// aliases included when they expand modestly.
func TestCheckYAMLAllowsOrdinaryFiles(t *testing.T) {
	for name, content := range map[string]string{
		"small alias":    "a: &a {x: 1, y: 2}\nb: *a\nc: {<<: *a, z: 3}\n",
		"5000 keys":      wideMapping(5000),
		"not YAML":       "KEY=VALUE\n\tOTHER=1: [\n",
		"many documents": strings.Repeat("---\na: 1\n", 1000),
	} {
		if err := repofs.CheckYAML("f.yaml", []byte(content), repofs.Limits{}); err != nil {
			t.Errorf("%s: repofs.CheckYAML = %v, want nil", name, err)
		}
	}
}

// TestBuildContextStopsWaiting: a cancelled build returns at once with the
// context's error, though kustomize itself cannot be interrupted: it stops
// at its next file read.
func TestBuildContextStopsWaiting(t *testing.T) {
	files := map[string]file{}
	var resources []string
	for i := 0; i < 24; i++ {
		name := fmt.Sprintf("cm-%d.yaml", i)
		files["apps/"+name] = file{content: strings.Replace(wideMapping(4000), "name: wide", fmt.Sprintf("name: wide-%d", i), 1)}
		resources = append(resources, name)
	}
	files["apps/kustomization.yaml"] = file{content: "resources: [" + strings.Join(resources, ", ") + "]\n"}
	tree := repofs.DirTree(writeFiles(t, files))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := NewRenderer(Options{}).BuildContext(ctx, tree, "apps")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("BuildContext = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("BuildContext returned %s after the start, long after the cancel", d)
	}
}
