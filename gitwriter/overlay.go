package gitwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
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
	names := make(map[string]bool, len(components))
	images := make(map[string]string, len(components))
	for i, c := range components {
		image := c.ImageName()
		switch {
		case c.Name == "":
			return fmt.Errorf("component %d has no name: every component needs a name, and the image its containers use when that differs", i)
		case strings.Contains(image, ","):
			return fmt.Errorf("component %q: image %q may not contain a comma (the %s annotation is comma-separated)", c.Name, image, v1alpha1.ComponentsAnnotation)
		case names[c.Name]:
			return fmt.Errorf("component %q appears twice in the vector: a vector names each component once", c.Name)
		case !validImageRepository(image):
			return fmt.Errorf("component %q: image %q is not a valid image repository: set the component's image to the repository its containers use, without tag or digest", c.Name, image)
		case images[image] != "":
			return fmt.Errorf("components %q and %q both use image %q: one images entry sets one version, so give each its own image", images[image], c.Name, image)
		}
		names[c.Name], images[image] = true, c.Name
	}
	return nil
}

// validImageRepository is go-containerregistry's check, as Flux parses
// image references: an entry named otherwise matches no container.
func validImageRepository(image string) bool {
	_, err := name.NewRepository(image)
	return err == nil
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

// Bounds on the kustomization.yaml an edit reads. kustomize and the checks
// here decode it into Go values, and that decoding compares every key of a
// mapping with every other: 16,000 keys took 1.6 s in one edit, 40,000
// keys 8.7 s. Aliases are expanded by those readers too. A
// kustomization.yaml is a few dozen lines, so these bounds are far above
// any real one and keep a hostile file from stalling a promotion.
const (
	maxOverlayBytes       = 1 << 20
	maxOverlayNodes       = 100_000
	maxOverlayMappingKeys = 2_000
)

// parseOverlay decodes exactly one YAML document whose root is a mapping,
// within the bounds above and with no key twice in any mapping.
func parseOverlay(src []byte) (*yaml.Node, error) {
	if len(src) > maxOverlayBytes {
		return nil, fmt.Errorf("is %d bytes, more than the %d a kustomization.yaml may have: move resources, patches and generators into files it names", len(src), maxOverlayBytes)
	}
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
	nodes := 0
	if err := checkOverlayNode(doc.Content[0], "", &nodes); err != nil {
		return nil, err
	}
	// Aliases are not walked above; what reads the file into Go values
	// (kustomize among them) expands them, so that is bounded too.
	if n := expandedOverlayNodes(doc.Content[0], map[*yaml.Node]int{}); n > maxOverlayNodes {
		return nil, fmt.Errorf("expands to more than %d YAML nodes through its aliases (*name): write the values out instead of repeating anchors", maxOverlayNodes)
	}
	return &doc, nil
}

// expandedOverlayNodes is the number of nodes n stands for with every
// alias replaced by what it names, saturating above maxOverlayNodes.
// memo makes it linear in the file, whatever the expansion.
func expandedOverlayNodes(n *yaml.Node, memo map[*yaml.Node]int) int {
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = maxOverlayNodes + 1 // an alias cycle counts as too many
	total := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		total = expandedOverlayNodes(n.Alias, memo)
	}
	for _, c := range n.Content {
		total += expandedOverlayNodes(c, memo)
		if total > maxOverlayNodes {
			total = maxOverlayNodes + 1
			break
		}
	}
	memo[n] = total
	return total
}

// checkOverlayNode walks a node (not through aliases, which point back
// into what is walked) counting nodes, and refuses a mapping with a key
// twice: which one counts differs between YAML readers, and the edit
// would set only one.
func checkOverlayNode(n *yaml.Node, path string, nodes *int) error {
	*nodes += 1 + len(n.Content)
	if *nodes > maxOverlayNodes {
		return fmt.Errorf("has more than %d YAML nodes: a kustomization.yaml is small; move resources, patches and generators into files it names", maxOverlayNodes)
	}
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content)/2 > maxOverlayMappingKeys {
			return fmt.Errorf("%s (line %d) has %d keys, more than the %d a kustomization.yaml mapping may have", overlayPathName(path), n.Line, len(n.Content)/2, maxOverlayMappingKeys)
		}
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode {
				if seen[k.Value] {
					return fmt.Errorf("has the field %q twice (line %d): keep one", strings.TrimPrefix(path+"."+k.Value, "."), k.Line)
				}
				seen[k.Value] = true
			} else if err := checkOverlayNode(k, path, nodes); err != nil {
				return err
			}
			if err := checkOverlayNode(n.Content[i+1], strings.TrimPrefix(path+"."+k.Value, "."), nodes); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkOverlayNode(c, fmt.Sprintf("%s[%d]", path, i), nodes); err != nil {
				return err
			}
		}
	}
	return nil
}

func overlayPathName(path string) string {
	if path == "" {
		return "the document"
	}
	return path
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
	images := make([]string, 0, len(components))
	for _, c := range components {
		images = append(images, c.ImageName())
	}
	sort.Strings(images)
	return e.planAnnotations(rn, vector, strings.Join(images, ","))
}

// ownedComponents are the names of the images entries vectorflow wrote or
// took over before. A malformed metadata is reported by planAnnotations.
func ownedComponents(rn *yaml.RNode) []string {
	ann, err := rn.Pipe(yaml.Lookup("metadata", "annotations", v1alpha1.ComponentsAnnotation))
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
	entries := make([]overlayImageEntry, 0, len(seq.Content))
	byName := make(map[string]*yaml.Node, len(seq.Content))
	count := make(map[string]int, len(seq.Content))
	for i, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			return fmt.Errorf("images[%d] (line %d) is not a mapping: each entry needs a name", i, item.Line)
		}
		rn := yaml.NewRNode(item)
		name := rn.Field("name")
		if name == nil || name.Value.YNode().Kind != yaml.ScalarNode || name.Value.YNode().Value == "" {
			return fmt.Errorf("images[%d] (line %d) has no name: give the entry the image name it replaces", i, item.Line)
		}
		entry := overlayImageEntry{item: item, name: name.Value.YNode().Value}
		if nn := rn.Field("newName"); nn != nil && nn.Value.YNode().Kind == yaml.ScalarNode {
			entry.newName = nn.Value.YNode().Value
		}
		entries = append(entries, entry)
		count[entry.name]++
		byName[entry.name] = item
	}
	// Duplicates are the human's business unless vectorflow must touch one.
	duplicate := func(n string) error {
		if count[n] > 1 {
			return fmt.Errorf("images has more than one entry named %q (last on line %d): keep one", n, byName[n].Line)
		}
		return nil
	}

	// A component's entry is the one that makes its containers run its
	// image: the entry named after that image (kustomize's own key), or the
	// entry whose newName is that image (a base with a placeholder image,
	// each overlay saying where it comes from). One a human wrote is taken
	// over for its version only: its name and newName say which containers
	// it rewrites and where they pull from, and vectorflow changes neither.
	taken := map[*yaml.Node]string{}
	for _, c := range components {
		image := c.ImageName()
		if err := duplicate(image); err != nil {
			return err
		}
		var matched []overlayImageEntry
		for _, entry := range entries {
			if entry.name == image || entry.newName == image {
				matched = append(matched, entry)
			}
		}
		if len(matched) > 1 {
			return fmt.Errorf("images entries %s and %s both set the image of component %q: kustomize would apply both; keep the one the stage's containers use and delete the other",
				matched[0], matched[1], c.Name)
		}
		if len(matched) == 0 {
			item := newOverlayImage(c)
			seq.Content = append(seq.Content, item)
			e.ops = append(e.ops, overlayOp{kind: opAppendItem, top: "images", parent: seq, node: item})
			continue
		}
		item := matched[0].item
		if other, ok := taken[item]; ok {
			return fmt.Errorf("images entry %s is the entry of both components %q and %q: one entry sets one version, so give them images no entry shares", matched[0], other, c.Name)
		}
		taken[item] = c.Name
		if yaml.NewRNode(item).Field("<<") != nil {
			return fmt.Errorf("images entry %s uses a merge key (<<): write its fields out so vectorflow can set them", matched[0])
		}
		for _, f := range overlayImageFields(c) {
			e.setField(item, "images", f[0], f[1], overlayImageKeys)
		}
	}
	// An entry vectorflow wrote for a component no longer in the vector
	// goes, unless a component took it over or it has a newName: removing
	// that would move the stage to another registry.
	removed := false
	for _, n := range owned {
		if slices.ContainsFunc(components, func(c v1alpha1.VectorComponent) bool { return c.ImageName() == n }) {
			continue
		}
		if err := duplicate(n); err != nil {
			return err
		}
		i := slices.IndexFunc(entries, func(entry overlayImageEntry) bool { return entry.name == n })
		if i < 0 {
			continue
		}
		item := entries[i].item
		if _, ok := taken[item]; ok || yaml.NewRNode(item).Field("newName") != nil {
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

// overlayImageEntry is one entry of an overlay's images list.
type overlayImageEntry struct {
	item          *yaml.Node
	name, newName string
}

func (e overlayImageEntry) String() string {
	if e.newName != "" {
		return fmt.Sprintf("%q (line %d, newName %s)", e.name, e.item.Line, e.newName)
	}
	return fmt.Sprintf("%q (line %d)", e.name, e.item.Line)
}

// overlayImageFields are the fields vectorflow sets on a component's entry:
// its version, never where the image comes from.
func overlayImageFields(c v1alpha1.VectorComponent) [][2]string {
	return [][2]string{{"newTag", c.Tag}, {"digest", c.Digest}}
}

func newOverlayImage(c v1alpha1.VectorComponent) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, overlayString("name", nil), overlayString(c.ImageName(), nil))
	for _, f := range overlayImageFields(c) {
		if f[1] != "" {
			m.Content = append(m.Content, overlayString(f[0], nil), overlayString(f[1], nil))
		}
	}
	return m
}

func (e *overlayEdit) planAnnotations(rn *yaml.RNode, vector, components string) error {
	wanted := [][2]string{{v1alpha1.VectorAnnotation, vector}, {v1alpha1.ComponentsAnnotation, components}}
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
