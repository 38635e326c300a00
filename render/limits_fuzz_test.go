package render

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// FuzzCheckYAML: CheckYAML never panics, and whatever it accepts expands,
// aliases included, to at most its own nodes plus the alias bound, with no
// mapping over the key bound: the promise that makes kyaml's work bounded.
// The check counts independently, giving up past the bound.
func FuzzCheckYAML(f *testing.F) {
	for _, bomb := range testutil.HostileYAML() {
		f.Add(bomb)
	}
	f.Add([]byte("a: &a {x: 1}\nb: *a\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("{<<: &a {x: 1}, y: *a}\n"))
	limits := repofs.Limits{MaxMappingKeys: 50, MaxAliasNodes: 200}.WithDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		err := repofs.CheckYAML("f.yaml", data, limits)
		if err != nil {
			var le *repofs.LimitError
			if !errors.As(err, &le) || le.File != "f.yaml" {
				t.Fatalf("error %v is not a *repofs.LimitError naming the file", err)
			}
			return
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				if errors.Is(err, io.EOF) {
					return
				}
				return // not YAML: kustomize's parser refuses it
			}
			parsed := countNodes(&n, false, map[*yaml.Node]bool{}, -1)
			budget := parsed + limits.MaxAliasNodes
			if got := countNodes(&n, true, map[*yaml.Node]bool{}, budget+1); got > budget {
				t.Fatalf("accepted a document that expands to more than %d nodes (%d in its text)", budget, parsed)
			}
			if k := widestMapping(&n, map[*yaml.Node]bool{}); k > limits.MaxMappingKeys {
				t.Fatalf("accepted a mapping of %d keys", k)
			}
		}
	})
}

// countNodes counts n's nodes, following aliases when expand is set, and
// stops once it passes stop (when positive).
func countNodes(n *yaml.Node, expand bool, active map[*yaml.Node]bool, stop int) int {
	if n == nil || active[n] {
		return 0
	}
	if n.Kind == yaml.AliasNode {
		if !expand {
			return 0
		}
		active[n] = true
		defer delete(active, n)
		return countNodes(n.Alias, expand, active, stop)
	}
	total := 1
	for _, c := range n.Content {
		total += countNodes(c, expand, active, stop)
		if stop > 0 && total > stop {
			return total
		}
	}
	return total
}

func widestMapping(n *yaml.Node, seen map[*yaml.Node]bool) int {
	if n == nil || seen[n] {
		return 0
	}
	seen[n] = true
	widest := 0
	if n.Kind == yaml.MappingNode {
		widest = len(n.Content) / 2
	}
	for _, c := range n.Content {
		widest = max(widest, widestMapping(c, seen))
	}
	return max(widest, widestMapping(n.Alias, seen))
}

// FuzzBuild: a kustomization and a resource of any content build or fail
// with an error, never a panic, within the Limits; a refused file is named.
func FuzzBuild(f *testing.F) {
	for _, bomb := range testutil.HostileYAML() {
		f.Add([]byte("resources: [r.yaml]\n"), bomb)
		f.Add(bomb, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"))
	}
	f.Add([]byte("resources: [r.yaml]\nbuildMetadata: [originAnnotations]\n"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"))
	f.Add([]byte("resources: [../x, /etc/passwd, https://example.com/x]\n"), []byte(""))
	f.Add([]byte("configMapGenerator: [{name: g, files: [r.yaml]}]\n"), []byte("a: b\n"))
	r := NewRenderer(Options{Limits: repofs.Limits{MaxFileSize: 1 << 20}})
	f.Fuzz(func(t *testing.T, kustomization, resource []byte) {
		tree := repofs.DirTree(writeFiles(t, map[string]file{"k/kustomization.yaml": {content: string(kustomization)}, "k/r.yaml": {content: string(resource)}}))
		out, err := r.BuildWithOrigins(t.Context(), tree, "k")
		// Asked again, the cache answers as the build did, a failure too.
		again, againErr := r.BuildWithOrigins(t.Context(), tree, "k")
		if (err == nil) != (againErr == nil) || err != nil && err.Error() != againErr.Error() || !bytes.Equal(out, again) {
			t.Fatalf("built again: %q, %v; first: %q, %v", again, againErr, out, err)
		}
		var le *repofs.LimitError
		if errors.As(err, &le) && le.File != "k/kustomization.yaml" && le.File != "k/r.yaml" {
			t.Fatalf("limit error names %q, not a file of the tree: %v", le.File, err)
		}
		if err != nil && strings.Contains(err.Error(), mountRoot) {
			t.Fatalf("error shows the internal mount: %v", err)
		}
	})
}
