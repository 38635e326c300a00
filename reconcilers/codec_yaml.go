package reconcilers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// marshalYAML is sigs.k8s.io/yaml.Marshal, byte for byte, at a fraction of
// its cost. That Marshal writes JSON, parses the JSON back with the YAML
// parser (to type its numbers as YAML would) and writes the result as
// YAML; the parse is most of the time of a state commit's encoding. Here
// the JSON is parsed by encoding/json and each number typed as that YAML
// parser types a plain scalar, so the tree handed to the YAML writer, and
// so its output, is the same.
func marshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	if !plainYAMLText(j) {
		return yaml.JSONToYAML(j)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	doc, ok := yamlTyped(doc)
	if !ok {
		// A shape the YAML parser reads its own way: let it.
		return yaml.JSONToYAML(j)
	}
	return yamlv2.Marshal(doc)
}

// plainYAMLText reports whether the YAML parser reads the JSON text j as
// JSON does: it refuses some characters JSON leaves unescaped (DEL, the C1
// controls, U+FFFE, U+FFFF) and takes others for line breaks (NEL, U+2028,
// U+2029) or a byte order mark (U+FEFF). Text with any of them goes the
// sigs.k8s.io/yaml way, error included.
func plainYAMLText(j []byte) bool {
	for i := 0; i < len(j); {
		if c := j[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(j[i:])
		switch {
		case r == utf8.RuneError && size == 1, r <= 0x9f, r == 0x2028, r == 0x2029, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
		i += size
	}
	return true
}

// maxPlainKey is the longest mapping key handled here: the YAML parser
// refuses a simple key of 1,024 characters or more, and a key anywhere
// near that length is not one the state's objects have.
const maxPlainKey = 512

// yamlTyped replaces each JSON number in doc by the value the YAML parser
// resolves the same plain scalar to; ok is false for a document the YAML
// parser would read differently than JSON (a very long key).
func yamlTyped(doc any) (any, bool) {
	switch v := doc.(type) {
	case map[string]any:
		for k, e := range v {
			if len(k) > maxPlainKey {
				return nil, false
			}
			t, ok := yamlTyped(e)
			if !ok {
				return nil, false
			}
			v[k] = t
		}
		return v, true
	case []any:
		for i, e := range v {
			t, ok := yamlTyped(e)
			if !ok {
				return nil, false
			}
			v[i] = t
		}
		return v, true
	case json.Number:
		return yamlNumber(string(v))
	}
	return doc, true
}

// yamlFloat is the YAML parser's pattern of a float (go.yaml.in/yaml/v2
// resolve.go).
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// yamlNumber types a JSON number as the YAML parser's resolve does: an int
// when it fits, else an int64, a uint64, a float64.
func yamlNumber(s string) (any, bool) {
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		if i == int64(int(i)) {
			return int(i), true
		}
		return i, true
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return u, true
	}
	if yamlFloat.MatchString(s) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, true
		}
	}
	return nil, false
}
