package gitwriter

// The text side of an overlay edit: the planned operations are spliced into
// the original bytes, so everything the edit does not touch stays as it was.

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

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
