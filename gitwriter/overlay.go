package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Annotations vectorflow keeps on an overlay's kustomization.yaml: the
// vector the overlay runs, and the images entries vectorflow wrote (so it
// removes only its own entries, never one a human added).
const (
	overlayVectorAnnotation     = "vectorflow.dev/vector"
	overlayComponentsAnnotation = "vectorflow.dev/components"
)

// EditOverlay writes a vector into an overlay's kustomization.yaml, in place.
// path is only used in error messages. It is pure: bytes in, bytes out.
//
// The edit is decided on kyaml nodes; the bytes are written by splicing only
// the changed values and lines into the original text, so comments, key
// order, blank lines and indentation survive. Where a splice is impossible
// (flow-style or empty collections) only that top-level field is re-written
// in block style; if even that fails, the result is kyaml's serialization of
// the edited document. Every spliced result is checked to decode to exactly
// the kyaml-edited document before it is returned.
func EditOverlay(path string, kustomization []byte, vector string, components []v1alpha1.VectorComponent) ([]byte, error) {
	out, _, err := editOverlay(path, kustomization, vector, components)
	return out, err
}

// editOverlay also tells whether the result was spliced into the original
// text (true) or is kyaml's writing of the whole document (false).
func editOverlay(path string, kustomization []byte, vector string, components []v1alpha1.VectorComponent) ([]byte, bool, error) {
	if err := checkOverlayInputs(vector, components); err != nil {
		return nil, false, fmt.Errorf("overlay %s: %w", path, err)
	}
	src, crlf := overlayToLF(kustomization)
	doc, err := parseOverlay(src)
	if err != nil {
		return nil, false, fmt.Errorf("overlay %s: %w", path, err)
	}
	e := newOverlayEdit(src, doc)
	if err := e.plan(vector, components); err != nil {
		return nil, false, fmt.Errorf("overlay %s: %w", path, err)
	}
	if len(e.ops) == 0 {
		return kustomization, true, nil
	}
	want, err := e.serialize()
	if err != nil {
		return nil, false, fmt.Errorf("overlay %s: writing the edited kustomization: %w", path, err)
	}
	out, spliced := want, false
	if text, err := e.splice(); err == nil && sameOverlayData(text, want) {
		out, spliced = text, true
	}
	if crlf {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	return out, spliced, nil
}

func checkOverlayInputs(vector string, components []v1alpha1.VectorComponent) error {
	if vector == "" {
		return errors.New("the vector reference is empty: pass <template>:<version>")
	}
	seen := make(map[string]bool, len(components))
	for i, c := range components {
		switch {
		case c.Name == "":
			return fmt.Errorf("component %d has no name: every component needs the image name the overlay's images entry matches", i)
		case strings.Contains(c.Name, ","):
			return fmt.Errorf("component %q: a name may not contain a comma (the %s annotation is comma-separated)", c.Name, overlayComponentsAnnotation)
		case seen[c.Name]:
			return fmt.Errorf("component %q appears twice in the vector: a vector names each component once", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// overlayToLF converts a file whose every line ends in CRLF to LF, so that
// the splice works on one line ending; the caller converts back.
func overlayToLF(b []byte) ([]byte, bool) {
	lf := bytes.Count(b, []byte("\n"))
	if lf == 0 || bytes.Count(b, []byte("\r\n")) != lf {
		return b, false
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), true
}

// parseOverlay decodes exactly one YAML document whose root is a mapping.
func parseOverlay(src []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, errors.New("is empty: a kustomization.yaml is one YAML mapping")
	} else if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("holds more than one YAML document: a kustomization.yaml is one mapping")
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("is not a YAML mapping: a kustomization.yaml must be one")
	}
	root := doc.Content[0]
	seen := make(map[string]bool, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i].Value
		if seen[k] {
			return nil, fmt.Errorf("has the field %q twice (line %d): keep one", k, root.Content[i].Line)
		}
		seen[k] = true
	}
	return &doc, nil
}

// overlayOpKind is one textual change; every op mirrors a change already made
// to the kyaml nodes.
type overlayOpKind int

const (
	opSetScalar  overlayOpKind = iota // replace the scalar old with node
	opAddPair                         // add key: node to mapping parent after key anchor
	opDeletePair                      // delete the pair with key old (next is the key after it)
	opAppendItem                      // append node to sequence parent
	opRemoveItem                      // remove item old from sequence parent
	opRewrite                         // no splice: re-write the whole top-level field
)

type overlayOp struct {
	kind   overlayOpKind
	top    string // top-level field the op is inside; "" for a new top-level field
	parent *yaml.Node
	old    *yaml.Node
	anchor *yaml.Node
	next   *yaml.Node
	key    string
	node   *yaml.Node
}

// errOverlaySplice means the text splice cannot express an op; the caller
// re-writes a bigger part instead.
var errOverlaySplice = errors.New("cannot splice")

type overlayEdit struct {
	src    []byte
	starts []int // byte offset of each line start
	doc    *yaml.Node
	root   *yaml.Node
	// The file's own style, used for text we add.
	mapIndent int
	seqOffset int
	dashGap   int // spaces between "-" and an item's content
	// Where each top-level field was in the original text (1-based lines),
	// recorded before the nodes change.
	topLines map[string][2]int
	ops      []overlayOp
	// replaced maps a new scalar to the original one it replaced, whose
	// text position the splice still needs.
	replaced map[*yaml.Node]*yaml.Node
}

func newOverlayEdit(src []byte, doc *yaml.Node) *overlayEdit {
	e := &overlayEdit{src: src, doc: doc, root: doc.Content[0], mapIndent: 2, dashGap: 1, replaced: map[*yaml.Node]*yaml.Node{}}
	e.starts = append(e.starts, 0)
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			e.starts = append(e.starts, i+1)
		}
	}
	e.detectStyle(e.root, true, true)
	e.topLines = make(map[string][2]int)
	for i := 0; i+1 < len(e.root.Content); i += 2 {
		first := e.root.Content[i].Line
		last := len(e.starts)
		if i+2 < len(e.root.Content) {
			last = e.root.Content[i+2].Line - 1
		}
		// Comments and blank lines before the next field belong to it.
		for last > first && e.isBlankOrComment(last) {
			last--
		}
		e.topLines[e.root.Content[i].Value] = [2]int{first, last}
	}
	return e
}

// detectStyle learns the mapping indentation and the sequence indentation
// (compact "- " under the key, or wide) from the first examples in the file.
func (e *overlayEdit) detectStyle(m *yaml.Node, wantMap, wantSeq bool) (bool, bool) {
	if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 {
		return wantMap, wantSeq
	}
	for i := 0; i+1 < len(m.Content) && (wantMap || wantSeq); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 || v.Line <= k.Line {
			continue
		}
		switch v.Kind {
		case yaml.MappingNode:
			if wantMap && v.Content[0].Column > k.Column {
				e.mapIndent, wantMap = v.Content[0].Column-k.Column, false
			}
			wantMap, wantSeq = e.detectStyle(v, wantMap, wantSeq)
		case yaml.SequenceNode:
			if wantSeq {
				if dash, ok := e.dashColumn(v.Content[0]); ok && dash >= k.Column && v.Content[0].Column > dash {
					e.seqOffset, e.dashGap, wantSeq = dash-k.Column, v.Content[0].Column-dash-1, false
				}
			}
			for _, item := range v.Content {
				wantMap, wantSeq = e.detectStyle(item, wantMap, wantSeq)
			}
		}
	}
	return wantMap, wantSeq
}

// plan edits the kyaml nodes and records the matching text ops.
func (e *overlayEdit) plan(vector string, components []v1alpha1.VectorComponent) error {
	rn := yaml.NewRNode(e.root)
	if err := e.planImages(rn, components, ownedComponents(rn)); err != nil {
		return err
	}
	names := make([]string, 0, len(components))
	for _, c := range components {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return e.planAnnotations(rn, vector, strings.Join(names, ","))
}

// ownedComponents are the images entries vectorflow wrote before. A
// malformed metadata is reported by planAnnotations.
func ownedComponents(rn *yaml.RNode) []string {
	ann, err := rn.Pipe(yaml.Lookup("metadata", "annotations", overlayComponentsAnnotation))
	if err != nil || ann == nil || ann.YNode().Kind != yaml.ScalarNode {
		return nil
	}
	var owned []string
	for _, n := range strings.Split(ann.YNode().Value, ",") {
		if n = strings.TrimSpace(n); n != "" {
			owned = append(owned, n)
		}
	}
	return owned
}

func (e *overlayEdit) planImages(rn *yaml.RNode, components []v1alpha1.VectorComponent, owned []string) error {
	field := rn.Field("images")
	if field == nil {
		if len(components) == 0 {
			return nil
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, c := range components {
			seq.Content = append(seq.Content, newOverlayImage(c))
		}
		e.addPair(e.root, nil, "", "images", seq)
		return nil
	}
	seq := field.Value.YNode()
	if seq.Tag == "!!null" {
		if len(components) == 0 {
			return nil
		}
		// Replaced in place: the pointer is the one in the tree.
		*seq = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		e.ops = append(e.ops, overlayOp{kind: opRewrite, top: "images"})
	}
	if seq.Kind != yaml.SequenceNode {
		return fmt.Errorf("images is not a list (line %d): write images as a list of {name, newName, newTag, digest}", seq.Line)
	}
	byName := make(map[string]*yaml.Node, len(seq.Content))
	count := make(map[string]int, len(seq.Content))
	for i, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			return fmt.Errorf("images[%d] (line %d) is not a mapping: each entry needs a name", i, item.Line)
		}
		name := yaml.NewRNode(item).Field("name")
		if name == nil || name.Value.YNode().Kind != yaml.ScalarNode || name.Value.YNode().Value == "" {
			return fmt.Errorf("images[%d] (line %d) has no name: give the entry the image name it replaces", i, item.Line)
		}
		n := name.Value.YNode().Value
		count[n]++
		byName[n] = item
	}
	// Duplicates are the human's business unless vectorflow must touch one.
	duplicate := func(n string) error {
		if count[n] > 1 {
			return fmt.Errorf("images has more than one entry named %q (last on line %d): keep one", n, byName[n].Line)
		}
		return nil
	}

	for _, c := range components {
		if err := duplicate(c.Name); err != nil {
			return err
		}
		item := byName[c.Name]
		if item == nil {
			item = newOverlayImage(c)
			seq.Content = append(seq.Content, item)
			e.ops = append(e.ops, overlayOp{kind: opAppendItem, top: "images", parent: seq, node: item})
			continue
		}
		if yaml.NewRNode(item).Field("<<") != nil {
			return fmt.Errorf("images entry %q (line %d) uses a merge key (<<): write its fields out so vectorflow can set them", c.Name, item.Line)
		}
		for _, f := range overlayImageFields(c) {
			e.setField(item, "images", f[0], f[1], overlayImageKeys)
		}
	}
	removed := false
	for _, n := range owned {
		if slices.ContainsFunc(components, func(c v1alpha1.VectorComponent) bool { return c.Name == n }) {
			continue
		}
		if err := duplicate(n); err != nil {
			return err
		}
		item := byName[n]
		if item == nil {
			continue
		}
		seq.Content = slices.DeleteFunc(seq.Content, func(x *yaml.Node) bool { return x == item })
		e.ops = append(e.ops, overlayOp{kind: opRemoveItem, top: "images", parent: seq, old: item})
		removed = true
	}
	if removed && len(seq.Content) == 0 {
		// Kustomize reads `images: []` like no images; keep the field.
		seq.Style = yaml.FlowStyle
		e.ops = append(e.ops, overlayOp{kind: opRewrite, top: "images"})
	}
	return nil
}

// overlayImageKeys is the order kustomize writes an images entry in.
var overlayImageKeys = []string{"name", "newName", "newTag", "digest"}

func overlayImageFields(c v1alpha1.VectorComponent) [][2]string {
	newName := c.Image
	if newName == c.Name {
		newName = ""
	}
	return [][2]string{{"newName", newName}, {"newTag", c.Tag}, {"digest", c.Digest}}
}

func newOverlayImage(c v1alpha1.VectorComponent) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, overlayString("name", nil), overlayString(c.Name, nil))
	for _, f := range overlayImageFields(c) {
		if f[1] != "" {
			m.Content = append(m.Content, overlayString(f[0], nil), overlayString(f[1], nil))
		}
	}
	return m
}

func (e *overlayEdit) planAnnotations(rn *yaml.RNode, vector, components string) error {
	wanted := [][2]string{{overlayVectorAnnotation, vector}, {overlayComponentsAnnotation, components}}
	newAnnotations := func() *yaml.Node {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, w := range wanted {
			if w[1] != "" {
				m.Content = append(m.Content, overlayString(w[0], nil), overlayString(w[1], nil))
			}
		}
		return m
	}
	meta := rn.Field("metadata")
	if meta == nil {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, overlayString("annotations", nil), newAnnotations())
		var after *yaml.Node
		for _, k := range []string{"apiVersion", "kind"} {
			if f := rn.Field(k); f != nil && f.Key.YNode().Line > 0 {
				after = f.Key.YNode()
			}
		}
		e.addPair(e.root, after, "", "metadata", m)
		return nil
	}
	mn := meta.Value.YNode()
	if mn.Tag == "!!null" {
		*mn = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		e.ops = append(e.ops, overlayOp{kind: opRewrite, top: "metadata"})
	}
	if mn.Kind != yaml.MappingNode {
		return fmt.Errorf("metadata is not a mapping (line %d): write metadata as a mapping", mn.Line)
	}
	ann := yaml.NewRNode(mn).Field("annotations")
	if ann == nil {
		e.addPair(mn, nil, "metadata", "annotations", newAnnotations())
		return nil
	}
	an := ann.Value.YNode()
	if an.Tag == "!!null" {
		*an = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		e.ops = append(e.ops, overlayOp{kind: opRewrite, top: "metadata"})
	}
	if an.Kind != yaml.MappingNode {
		return fmt.Errorf("metadata.annotations is not a mapping (line %d): write annotations as a mapping", an.Line)
	}
	for _, w := range wanted {
		e.setField(an, "metadata", w[0], w[1], nil)
	}
	return nil
}

// setField makes m[key] the string value, or removes key when value is
// empty. order, when given, is the key order new keys are placed in.
func (e *overlayEdit) setField(m *yaml.Node, top, key, value string, order []string) {
	i := -1
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			i = j
			break
		}
	}
	switch {
	case i < 0 && value == "":
	case i < 0:
		// Place the key after the keys that come before it in order; the
		// text anchor is the last of those that exists in the original.
		pos := len(m.Content)
		if k := slices.Index(order, key); k >= 0 {
			pos = 0
			for j := 0; j+1 < len(m.Content); j += 2 {
				if slices.Index(order[:k], m.Content[j].Value) >= 0 {
					pos = j + 2
				}
			}
		}
		var anchor *yaml.Node
		for j := pos - 2; j >= 0; j -= 2 {
			if m.Content[j].Line > 0 {
				anchor = m.Content[j]
				break
			}
		}
		if anchor == nil {
			pos = len(m.Content) // nothing original before it: append, like the text
		}
		e.addPairAt(m, pos, anchor, top, key, overlayString(value, nil))
	case value == "":
		var next *yaml.Node
		if i+2 < len(m.Content) {
			next = m.Content[i+2]
		}
		e.ops = append(e.ops, overlayOp{kind: opDeletePair, top: top, parent: m, old: m.Content[i], node: m.Content[i+1], next: next})
		m.Content = slices.Delete(m.Content, i, i+2)
	default:
		old := m.Content[i+1]
		if old.Kind == yaml.ScalarNode && old.Value == value && old.ShortTag() == "!!str" {
			return
		}
		n := overlayString(value, old)
		m.Content[i+1] = n
		e.replaced[n] = old
		e.ops = append(e.ops, overlayOp{kind: opSetScalar, top: top, parent: m, old: old, node: n})
	}
}

func (e *overlayEdit) addPair(m *yaml.Node, anchor *yaml.Node, top, key string, value *yaml.Node) {
	pos := len(m.Content)
	if anchor != nil {
		pos = slices.Index(m.Content, anchor) + 2
	}
	e.addPairAt(m, pos, anchor, top, key, value)
}

func (e *overlayEdit) addPairAt(m *yaml.Node, pos int, anchor *yaml.Node, top, key string, value *yaml.Node) {
	m.Content = slices.Insert(m.Content, pos, overlayString(key, nil), value)
	e.ops = append(e.ops, overlayOp{kind: opAddPair, top: top, parent: m, anchor: anchor, key: key, node: value})
}

// overlayString is a string scalar that stays a string: it keeps the quoting
// of the scalar it replaces, is plain when YAML reads it back as the same
// string (in YAML 1.1 and 1.2), and double-quoted otherwise.
func overlayString(value string, old *yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	switch {
	case old != nil && old.Style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(value, "\n\r") && utf8.ValidString(value):
		n.Style = yaml.SingleQuotedStyle
	case old != nil && old.Style&yaml.DoubleQuotedStyle != 0:
		n.Style = yaml.DoubleQuotedStyle
	case !overlayPlainSafe(value):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// overlayPlainSafe reports whether value written unquoted reads back as the
// same string both in YAML 1.2 (kyaml) and YAML 1.1 (sigs.k8s.io/yaml, which
// kustomize uses): `1.20`, `0777`, `1e3`, `yes`, `null` are not.
func overlayPlainSafe(value string) bool {
	if value == "" || value != strings.TrimSpace(value) || !utf8.ValidString(value) {
		return false
	}
	for _, r := range value {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return false
		}
	}
	if strings.IndexByte("0123456789+-.", value[0]) >= 0 && strings.Contains(value, ":") {
		return false // YAML 1.1 sexagesimal (1:20 is 80) for readers other than ours
	}
	return overlayPlainWord(value) || overlayPlainParsed(value)
}

// overlayPlainParsed writes value unquoted after a key and reads it back.
func overlayPlainParsed(value string) bool {
	doc := []byte("k: " + value + " # c\n")
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil || len(n.Content) != 1 || len(n.Content[0].Content) != 2 {
		return false
	}
	if v := n.Content[0].Content[1]; v.Value != value || v.ShortTag() != "!!str" {
		return false
	}
	var m map[string]any
	if err := sigsyaml.Unmarshal(doc, &m); err != nil {
		return false
	}
	s, ok := m["k"].(string)
	return ok && s == value
}

// overlayPlainWord is the common case decided without parsing: a word that
// starts with a letter and is made of name, tag and digest characters is a
// string in both YAML versions, unless it is one of YAML 1.1's booleans or
// null.
func overlayPlainWord(value string) bool {
	if value == "" {
		return false
	}
	c := value[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') || strings.HasSuffix(value, ":") {
		return false
	}
	for i := 0; i < len(value); i++ {
		c := value[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._/-:", c) >= 0) {
			return false
		}
	}
	switch strings.ToLower(value) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// serialize is kyaml's writing of the edited document: the fallback and the
// reference every splice is checked against.
func (e *overlayEdit) serialize() ([]byte, error) {
	style := yaml.CompactSequenceStyle
	if e.seqOffset > 0 {
		style = yaml.WideSequenceStyle
	}
	var b bytes.Buffer
	enc := yaml.NewEncoderWithOptions(&b, &yaml.EncoderOptions{SeqIndent: style})
	if err := enc.Encode(e.doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sameOverlayData reports whether got decodes to the same data as want, in
// the YAML 1.2 reading of kyaml and the YAML 1.1 reading of kustomize.
func sameOverlayData(got, want []byte) bool {
	var g, w any
	if _, err := parseOverlay(got); err != nil {
		return false
	}
	if yaml.Unmarshal(got, &g) != nil || yaml.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
		return false
	}
	g, w = nil, nil
	if sigsyaml.Unmarshal(got, &g) != nil || sigsyaml.Unmarshal(want, &w) != nil {
		return false
	}
	return reflect.DeepEqual(g, w)
}

// overlayTextEdit replaces src[start:end] with text. depth orders
// insertions at one point: the deeper one continues the block above it, so
// it goes first.
type overlayTextEdit struct {
	start, end int
	text       string
	depth      int
}

// splice applies the ops to the original text. Ops inside a top-level field
// that cannot be spliced make that whole field re-written.
func (e *overlayEdit) splice() ([]byte, error) {
	var edits []overlayTextEdit
	var tops []string
	byTop := map[string][]overlayOp{}
	for _, op := range e.ops {
		if _, ok := byTop[op.top]; !ok {
			tops = append(tops, op.top)
		}
		byTop[op.top] = append(byTop[op.top], op)
	}
	for _, top := range tops {
		var own []overlayTextEdit
		var err error
		for _, op := range byTop[top] {
			var ed []overlayTextEdit
			if ed, err = e.spliceOp(op); err != nil {
				break
			}
			own = append(own, ed...)
		}
		if err != nil && top != "" {
			own, err = e.rewriteTop(top)
		}
		if err != nil {
			return nil, err
		}
		edits = append(edits, own...)
	}
	// An insertion at the start of a deleted range goes first.
	sort.SliceStable(edits, func(i, j int) bool {
		a, b := edits[i], edits[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.depth > b.depth
	})
	var b bytes.Buffer
	at := 0
	for _, ed := range edits {
		if ed.start < at {
			return nil, errOverlaySplice // overlapping edits
		}
		b.Write(e.src[at:ed.start])
		b.WriteString(ed.text)
		at = ed.end
	}
	b.Write(e.src[at:])
	return b.Bytes(), nil
}

func (e *overlayEdit) spliceOp(op overlayOp) ([]overlayTextEdit, error) {
	switch op.kind {
	case opSetScalar:
		start, end, err := e.scalarSpan(op.old)
		if err != nil {
			return nil, err
		}
		text, err := overlayScalarText(op.node)
		return []overlayTextEdit{{start: start, end: end, text: text}}, err

	case opAddPair:
		m := op.parent
		if m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 || m.Content[0].Line == 0 && m.Line == 0 {
			return nil, errOverlaySplice
		}
		first := firstOriginal(m)
		if first == nil {
			return nil, errOverlaySplice
		}
		last := op.anchor
		var lastLine int
		var err error
		if last != nil {
			lastLine, err = e.endLine(e.original(m.Content[slices.Index(m.Content, last)+1]))
		} else {
			lastLine, err = e.lastOriginalLine(m)
		}
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if err := e.emitPair(&b, first.Column-1, overlayString(op.key, nil), op.node); err != nil {
			return nil, err
		}
		return e.insertAfterLine(lastLine, first.Column-1, b.String()), nil

	case opDeletePair:
		return e.deletePair(op)

	case opAppendItem:
		seq := op.parent
		first := firstOriginal(seq)
		if seq.Style&yaml.FlowStyle != 0 || first == nil {
			return nil, errOverlaySplice
		}
		dash, ok := e.dashPrefix(first)
		if !ok {
			return nil, errOverlaySplice
		}
		lastLine, err := e.lastOriginalLine(seq)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if err := e.emitItem(&b, dash, op.node); err != nil {
			return nil, err
		}
		return e.insertAfterLine(lastLine, len(dash), b.String()), nil

	case opRemoveItem:
		if _, ok := e.dashPrefix(op.old); !ok || op.parent.Style&yaml.FlowStyle != 0 {
			return nil, errOverlaySplice
		}
		last, err := e.endLine(op.old)
		if err != nil {
			return nil, err
		}
		// The comment right above an entry vectorflow wrote goes with it.
		first := op.old.Line
		if hc := overlayCommentLines(op.old.HeadComment); len(hc) > 0 && first > len(hc) {
			above := first - len(hc)
			for i, c := range hc {
				if strings.TrimSpace(e.lineText(above+i)) != strings.TrimSpace(c) {
					above = first
					break
				}
			}
			first = above
		}
		return []overlayTextEdit{{start: e.starts[first-1], end: e.lineEnd(last)}}, nil
	}
	return nil, errOverlaySplice
}

func (e *overlayEdit) deletePair(op overlayOp) ([]overlayTextEdit, error) {
	key := op.old
	if op.parent.Style&yaml.FlowStyle != 0 || key.Line == 0 {
		return nil, errOverlaySplice
	}
	start, ok := e.offset(key.Line, key.Column)
	if !ok {
		return nil, errOverlaySplice
	}
	last, err := e.endLine(op.node)
	if err != nil {
		return nil, err
	}
	if op.node.Kind == yaml.ScalarNode {
		// Only a comment may follow the value on its line.
		_, end, _ := e.scalarSpan(op.node)
		rest := strings.TrimSpace(string(e.src[end:e.lineContentEnd(last)]))
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return nil, errOverlaySplice
		}
	}
	if strings.Trim(string(e.src[e.starts[key.Line-1]:start]), " ") == "" {
		// The pair is on lines of its own: drop them.
		return []overlayTextEdit{{start: e.starts[key.Line-1], end: e.lineEnd(last)}}, nil
	}
	// `- key: value` starts a sequence item: pull the next key up onto the
	// dash line.
	if _, ok := e.dashPrefix(key); !ok || op.next == nil || op.next.Line != last+1 || op.next.Column != key.Column {
		return nil, errOverlaySplice
	}
	end, ok := e.offset(op.next.Line, op.next.Column)
	if !ok {
		return nil, errOverlaySplice
	}
	return []overlayTextEdit{{start: start, end: end}}, nil
}

func firstOriginal(n *yaml.Node) *yaml.Node {
	for _, c := range n.Content {
		if c.Line > 0 {
			return c
		}
	}
	return nil
}

// lastOriginalLine is the last line of the original content of a mapping
// or sequence (new nodes have no line).
func (e *overlayEdit) lastOriginalLine(n *yaml.Node) (int, error) {
	for i := len(n.Content) - 1; i >= 0; i-- {
		if c := e.original(n.Content[i]); c.Line > 0 {
			return e.endLine(c)
		}
	}
	return 0, errOverlaySplice
}

// original is the node whose text is in the source: n, or the scalar n
// replaced.
func (e *overlayEdit) original(n *yaml.Node) *yaml.Node {
	if old, ok := e.replaced[n]; ok {
		return old
	}
	return n
}

// endLine is the last line a node's text is on.
func (e *overlayEdit) endLine(n *yaml.Node) (int, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && n.Anchor == "" && n.Style&yaml.TaggedStyle == 0 {
			return e.blockScalarEndLine(n)
		}
		_, end, err := e.scalarSpan(n)
		if err != nil {
			return 0, err
		}
		return sort.SearchInts(e.starts, end), nil
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
			return 0, errOverlaySplice
		}
		return e.lastOriginalLine(n)
	case yaml.AliasNode:
		return n.Line, nil
	}
	return 0, errOverlaySplice
}

// blockScalarEndLine is the last line of a literal or folded scalar: the
// lines after its indicator that are blank or indented deeper than the line
// the indicator is on.
func (e *overlayEdit) blockScalarEndLine(n *yaml.Node) (int, error) {
	head := e.lineText(n.Line)
	keyIndent := len(head) - len(strings.TrimLeft(head, " "))
	last := n.Line
	for l := n.Line + 1; l <= len(e.starts); l++ {
		text := e.lineText(l)
		if strings.TrimSpace(text) == "" {
			continue
		}
		if len(text)-len(strings.TrimLeft(text, " ")) <= keyIndent {
			break
		}
		last = l
	}
	if last == n.Line || strings.Contains(head[n.Column-1:], "+") {
		return 0, errOverlaySplice // empty, or keeps trailing blank lines
	}
	return last, nil
}

// scalarSpan is the byte range of a scalar's text. Only plain single-line
// and quoted scalars are supported; block scalars, tags and anchors are not.
func (e *overlayEdit) scalarSpan(n *yaml.Node) (int, int, error) {
	if n.Kind == yaml.AliasNode {
		start, ok := e.offset(n.Line, n.Column)
		if !ok || !bytes.HasPrefix(e.src[start:], []byte("*"+n.Value)) {
			return 0, 0, errOverlaySplice
		}
		return start, start + 1 + len(n.Value), nil
	}
	if n.Kind != yaml.ScalarNode || n.Line == 0 || n.Anchor != "" || n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) != 0 {
		return 0, 0, errOverlaySplice
	}
	start, ok := e.offset(n.Line, n.Column)
	if !ok || start >= len(e.src) {
		return 0, 0, errOverlaySplice
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if e.src[start] != '"' {
			return 0, 0, errOverlaySplice
		}
		for i := start + 1; i < len(e.src); i++ {
			switch e.src[i] {
			case '\\':
				i++
			case '"':
				return start, i + 1, nil
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		if e.src[start] != '\'' {
			return 0, 0, errOverlaySplice
		}
		for i := start + 1; i < len(e.src); i++ {
			if e.src[i] == '\'' {
				if i+1 < len(e.src) && e.src[i+1] == '\'' {
					i++
					continue
				}
				return start, i + 1, nil
			}
		}
	default:
		line := e.src[start:e.lineContentEnd(n.Line)]
		if c := bytes.Index(line, []byte(" #")); c >= 0 {
			line = line[:c]
		}
		line = bytes.TrimRight(line, " \t\r")
		// A plain scalar's text is its value unless it goes on over lines.
		if string(line) != n.Value {
			return 0, 0, errOverlaySplice
		}
		return start, start + len(line), nil
	}
	return 0, 0, errOverlaySplice
}

// offset converts a yaml line and (rune) column to a byte offset.
func (e *overlayEdit) offset(line, col int) (int, bool) {
	if line < 1 || line > len(e.starts) || col < 1 {
		return 0, false
	}
	i := e.starts[line-1]
	for c := 1; c < col; c++ {
		if i >= len(e.src) || e.src[i] == '\n' {
			return 0, false
		}
		_, w := utf8.DecodeRune(e.src[i:])
		i += w
	}
	return i, true
}

// lineEnd is the offset just past a line's newline.
func (e *overlayEdit) lineEnd(line int) int {
	if line < len(e.starts) {
		return e.starts[line]
	}
	return len(e.src)
}

// lineContentEnd is the offset of a line's newline (or the end of the text).
func (e *overlayEdit) lineContentEnd(line int) int {
	end := e.lineEnd(line)
	if end > 0 && end <= len(e.src) && end > e.starts[line-1] && e.src[end-1] == '\n' {
		end--
	}
	return end
}

func (e *overlayEdit) lineText(line int) string {
	return string(e.src[e.starts[line-1]:e.lineContentEnd(line)])
}

func (e *overlayEdit) isBlankOrComment(line int) bool {
	t := strings.TrimSpace(e.lineText(line))
	return t == "" || strings.HasPrefix(t, "#")
}

// dashColumn is the 1-based column of the "- " that starts a block
// sequence item.
func (e *overlayEdit) dashColumn(item *yaml.Node) (int, bool) {
	p, ok := e.dashPrefix(item)
	if !ok {
		return 0, false
	}
	return strings.IndexByte(p, '-') + 1, true
}

// dashPrefix is the text before an item's content on its line, which for a
// block sequence item is spaces, a dash and spaces.
func (e *overlayEdit) dashPrefix(item *yaml.Node) (string, bool) {
	if item.Line == 0 {
		return "", false
	}
	start, ok := e.offset(item.Line, item.Column)
	if !ok {
		return "", false
	}
	p := string(e.src[e.starts[item.Line-1]:start])
	rest := strings.TrimLeft(p, " ")
	if !strings.HasPrefix(rest, "-") || strings.Trim(rest[1:], " ") != "" || len(rest) < 2 {
		return "", false
	}
	return p, true
}

// insertAfterLine inserts whole lines, indented by depth, after line.
func (e *overlayEdit) insertAfterLine(line, depth int, text string) []overlayTextEdit {
	at := e.lineEnd(line)
	if at == len(e.src) && at > 0 && e.src[at-1] != '\n' {
		text = "\n" + text
	}
	return []overlayTextEdit{{start: at, end: at, text: text, depth: depth}}
}

// rewriteTop re-writes one whole top-level field from the edited nodes, in
// block style with the file's indentation.
func (e *overlayEdit) rewriteTop(top string) ([]overlayTextEdit, error) {
	lines, ok := e.topLines[top]
	if !ok {
		return nil, errOverlaySplice
	}
	f := yaml.NewRNode(e.root).Field(top)
	if f == nil {
		return nil, errOverlaySplice
	}
	k := *f.Key.YNode()
	k.HeadComment = "" // above the rewritten lines, kept as it is
	var b strings.Builder
	if err := e.emitPair(&b, k.Column-1, &k, f.Value.YNode()); err != nil {
		return nil, err
	}
	return []overlayTextEdit{{start: e.starts[lines[0]-1], end: e.lineEnd(lines[1]), text: b.String()}}, nil
}

// emitPair writes `key: value` as block YAML at indent.
func (e *overlayEdit) emitPair(b *strings.Builder, indent int, key, value *yaml.Node) error {
	if value.Anchor != "" {
		return errOverlaySplice
	}
	for _, c := range overlayCommentLines(key.HeadComment) {
		fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", indent), c)
	}
	kt, err := overlayScalarText(key)
	if err != nil {
		return err
	}
	b.WriteString(strings.Repeat(" ", indent) + kt + ":")
	switch {
	case value.Kind == yaml.ScalarNode:
		vt, err := overlayScalarText(value)
		if err != nil {
			return err
		}
		b.WriteString(" " + vt + overlayLineComment(value, key) + "\n")
	case value.Kind == yaml.MappingNode && len(value.Content) == 0:
		b.WriteString(" {}" + overlayLineComment(value, key) + "\n")
	case value.Kind == yaml.SequenceNode && len(value.Content) == 0:
		b.WriteString(" []" + overlayLineComment(value, key) + "\n")
	case value.Kind == yaml.MappingNode:
		b.WriteString(overlayLineComment(value, key) + "\n")
		for i := 0; i+1 < len(value.Content); i += 2 {
			if err := e.emitPair(b, indent+e.mapIndent, value.Content[i], value.Content[i+1]); err != nil {
				return err
			}
		}
	case value.Kind == yaml.SequenceNode:
		b.WriteString(overlayLineComment(value, key) + "\n")
		dash := strings.Repeat(" ", indent+e.seqOffset) + "-" + strings.Repeat(" ", e.dashGap)
		for _, item := range value.Content {
			if err := e.emitItem(b, dash, item); err != nil {
				return err
			}
		}
	default:
		return errOverlaySplice
	}
	return nil
}

// emitItem writes one block sequence item whose line starts with dash.
func (e *overlayEdit) emitItem(b *strings.Builder, dash string, item *yaml.Node) error {
	if item.Anchor != "" {
		return errOverlaySplice
	}
	for _, c := range overlayCommentLines(item.HeadComment) {
		fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", strings.IndexByte(dash, '-')), c)
	}
	switch {
	case item.Kind == yaml.ScalarNode:
		t, err := overlayScalarText(item)
		if err != nil {
			return err
		}
		b.WriteString(dash + t + overlayLineComment(item, nil) + "\n")
	case item.Kind == yaml.MappingNode && len(item.Content) > 0:
		var inner strings.Builder
		for i := 0; i+1 < len(item.Content); i += 2 {
			if err := e.emitPair(&inner, len(dash), item.Content[i], item.Content[i+1]); err != nil {
				return err
			}
		}
		s := inner.String()
		if !strings.HasPrefix(s, strings.Repeat(" ", len(dash))) {
			return errOverlaySplice // a head comment on the first key
		}
		b.WriteString(dash + s[len(dash):])
	default:
		return errOverlaySplice
	}
	return nil
}

func overlayCommentLines(c string) []string {
	if c == "" {
		return nil
	}
	return strings.Split(c, "\n")
}

func overlayLineComment(value, key *yaml.Node) string {
	c := value.LineComment
	if c == "" && key != nil {
		c = key.LineComment
	}
	if c == "" {
		return ""
	}
	return " " + c
}

// overlayScalarText writes a scalar in its style. Non-string scalars from
// the original keep their plain text; anything else is not supported.
func overlayScalarText(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Anchor != "" || n.Style&yaml.TaggedStyle != 0 {
		return "", errOverlaySplice
	}
	str := n.ShortTag() == "!!str"
	switch {
	case n.Style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(n.Value, "\n\r"):
		return "'" + strings.ReplaceAll(n.Value, "'", "''") + "'", nil
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 && str:
		return strconv.Quote(n.Value), nil
	case !str && n.Style == 0 && n.Value != "":
		return n.Value, nil
	case !str && n.ShortTag() == "!!null":
		return "null", nil
	case str && overlayPlainSafe(n.Value):
		return n.Value, nil
	case str:
		return strconv.Quote(n.Value), nil
	}
	return "", errOverlaySplice
}
