package testutil

import (
	"fmt"
	"strings"
)

// HostileYAML are the inputs that exhausted memory or time on main, for
// the seed corpus of every fuzz target that decodes repository content: a
// decoder must refuse each at the cost of its text. Each is a ConfigMap, so
// it passes for a Kubernetes object until its content is read.
func HostileYAML() map[string][]byte {
	laughs := func(width, depth int) string {
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
	wide := func(keys int) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wide\ndata:\n")
		for i := 0; i < keys; i++ {
			fmt.Fprintf(&b, "  k%d: v\n", i)
		}
		return b.String()
	}
	return map[string][]byte{
		"billion laughs": []byte(laughs(9, 9)),
		// Merge keys expand aliases too.
		"merge-key bomb": []byte("a: &a {x: 1, y: 2}\nb: &b {<<: [*a, *a], c: *a, d: *a}\nc: &c {<<: [*b], e: *b, f: *b}\nd: &d {g: *c, h: *c, i: *c}\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n"),
		"40,000 keys":    []byte(wide(40000)),
		"deep nesting":   []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n"),
		"many documents": []byte(strings.Repeat("---\nx: 1\n", 20000)),
	}
}

// HostileJSON are JSON bodies of the same spirit, for parsers of webhook
// payloads: a wide object, deep nesting and a long string.
func HostileJSON() map[string][]byte {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 40000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:1", fmt.Sprintf("k%d", i))
	}
	b.WriteString("}")
	return map[string][]byte{
		"40,000 keys":  []byte(b.String()),
		"deep nesting": []byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000)),
		"long string":  []byte(`{"ref":"` + strings.Repeat("a", 1<<20) + `"}`),
	}
}
