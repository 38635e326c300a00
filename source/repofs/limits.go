package repofs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Defaults of Limits. Kustomize and kyaml have no bounds of their own: a
// YAML alias bomb of a few hundred bytes expands to gigabytes, and kyaml's
// mapping decode is quadratic in the keys (10,000 keys take a second, 40,000
// over half a minute). Real repositories stay far below these.
const (
	DefaultMaxFileSize       = 4 << 20
	DefaultMaxRepositorySize = 256 << 20
	// DefaultMaxMappingKeys keeps the worst mapping decode near half a second.
	DefaultMaxMappingKeys = 5000
	// DefaultMaxAliasNodes is how many nodes aliases may add to a document
	// when expanded: plenty for anchors shared between a few resources.
	DefaultMaxAliasNodes = 10000
	// DefaultMaxMappingWork bounds one build's kyaml mapping decode, which
	// costs the square of each mapping's keys: 16 mappings of 5000 keys, or
	// 40,000 of 100, a few seconds in all.
	DefaultMaxMappingWork = 16 * DefaultMaxMappingKeys * DefaultMaxMappingKeys
)

// Limits bound what is read from a repository before kustomize or kyaml see
// it, so a hostile or careless file costs bounded time and memory. Zero
// fields take the defaults.
type Limits struct {
	MaxFileSize       int64 // bytes of one file
	MaxRepositorySize int64 // bytes read from one repository tree (per load, and per build)
	MaxMappingKeys    int   // keys of one YAML mapping
	MaxAliasNodes     int   // nodes YAML aliases add to one document when expanded
	// MaxMappingWork bounds the sum, over every mapping one build reads, of
	// its keys squared.
	MaxMappingWork int64
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxRepositorySize <= 0 {
		l.MaxRepositorySize = DefaultMaxRepositorySize
	}
	if l.MaxMappingKeys <= 0 {
		l.MaxMappingKeys = DefaultMaxMappingKeys
	}
	if l.MaxAliasNodes <= 0 {
		l.MaxAliasNodes = DefaultMaxAliasNodes
	}
	if l.MaxMappingWork <= 0 {
		l.MaxMappingWork = DefaultMaxMappingWork
	}
	return l
}

// ErrLimit is what every *LimitError wraps; test with errors.Is.
var ErrLimit = errors.New("input limit exceeded")

// LimitError is a file refused because it exceeds a bound of Limits.
type LimitError struct {
	File   string // relative to the repository root
	Reason string // what exceeds which limit, and how to raise it if one can
}

func (e *LimitError) Error() string { return e.File + ": " + e.Reason }

func (e *LimitError) Unwrap() error { return ErrLimit }

func fileTooLarge(name string, size, max int64) *LimitError {
	return &LimitError{File: name, Reason: fmt.Sprintf(
		"file is %d bytes, more than the limit of %d bytes (raise it with --max-file-size)", size, max)}
}

// ReadBudget counts the bytes read from one tree against MaxRepositorySize.
type ReadBudget struct {
	mu   sync.Mutex
	max  int64
	used int64
}

// NewReadBudget is a budget of max bytes, shared by the reads of one build
// or one load.
func NewReadBudget(max int64) *ReadBudget { return &ReadBudget{max: max} }

func (b *ReadBudget) take(name string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return &LimitError{File: name, Reason: fmt.Sprintf(
			"reading it takes the repository past the limit of %d bytes read (raise it with --max-repository-size)", b.max)}
	}
	b.used += n
	return nil
}

// CheckedRead reads name from tree if its size (known before reading, for
// both trees) stays within the file limit and the budget.
func CheckedRead(tree Tree, name string, l Limits, budget *ReadBudget) ([]byte, error) {
	info, err := tree.Stat(name)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() && info.Size() > l.MaxFileSize {
		return nil, fileTooLarge(name, info.Size(), l.MaxFileSize)
	}
	data, err := tree.ReadFile(name)
	if err != nil {
		return nil, err
	}
	// The size may have changed on disk since the Stat.
	if int64(len(data)) > l.MaxFileSize {
		return nil, fileTooLarge(name, int64(len(data)), l.MaxFileSize)
	}
	if budget != nil {
		if err := budget.take(name, int64(len(data))); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// LimitTree is tree with every ReadFile bounded by l.MaxFileSize and all of
// them together by l.MaxRepositorySize. A loader wraps each tree it reads
// once per load, so one load of a repository reads a bounded amount.
func LimitTree(tree Tree, l Limits) Tree {
	l = l.WithDefaults()
	return &limitTree{Tree: tree, limits: l, budget: &ReadBudget{max: l.MaxRepositorySize}}
}

type limitTree struct {
	Tree
	limits Limits
	budget *ReadBudget
}

func (t *limitTree) ReadFile(name string) ([]byte, error) {
	return CheckedRead(t.Tree, name, t.limits, t.budget)
}

func (t *limitTree) Open(name string) (fs.File, error) { return openFromTree(t, name) }

// CheckYAML refuses YAML that kyaml would take unbounded time or memory to
// decode: aliases that expand to more than l.MaxAliasNodes extra nodes in a
// document (a "billion laughs" bomb), or a mapping with more than
// l.MaxMappingKeys keys. It parses into yaml.v3 nodes, which keeps aliases
// unexpanded and is linear in the input. Content that is not YAML passes:
// kustomize reads some files (generator sources) as plain text, and its own
// parser reports YAML errors with better context.
func CheckYAML(file string, data []byte, l Limits) error {
	l = l.WithDefaults()
	if withinAtAGlance(data, l) {
		return nil
	}
	_, err := CheckYAMLWork(file, data, l)
	return err
}

// withinAtAGlance says whether data is within l without parsing it, as most
// files are (parsing was a third of a config file's decode). Without an
// anchor ('&' nowhere) there is no alias to expand, and every key of a
// mapping but one needs a byte of its own: the ':' before its value, the
// ',' between flow entries or the '?' of an explicit key. With fewer such
// bytes in all than the key limit, no mapping can pass it.
func withinAtAGlance(data []byte, l Limits) bool {
	if bytes.IndexByte(data, '&') >= 0 {
		return false
	}
	separators := 0
	for _, c := range data {
		if c == ':' || c == ',' || c == '?' {
			separators++
		}
	}
	return separators < l.MaxMappingKeys
}

// CheckYAMLWork is CheckYAML that also returns the file's mapping work: its
// mappings' keys squared, summed (aliases counted once).
func CheckYAMLWork(file string, data []byte, l Limits) (int64, error) {
	var work int64
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for doc := 1; ; doc++ {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			// At the end, or not YAML, or malformed: the real parser says why.
			return work, nil
		}
		s := yamlScan{limits: l, sizes: map[*yaml.Node]int{}, active: map[*yaml.Node]bool{}}
		expanded, err := s.size(&node)
		if err != nil {
			return work, &LimitError{File: file, Reason: fmt.Sprintf("document %d: %v", doc, err)}
		}
		if extra := expanded - s.parsed; extra > l.MaxAliasNodes {
			return work, &LimitError{File: file, Reason: fmt.Sprintf(
				"document %d: YAML aliases expand to more than %d extra nodes (limit %d); write the content out instead of using anchors",
				doc, l.MaxAliasNodes, l.MaxAliasNodes)}
		}
		work += s.work
	}
}

// yamlScan computes a document's size with every alias expanded, stopping
// as soon as the expansion exceeds the limit, so a bomb costs no more than
// its text.
type yamlScan struct {
	limits Limits
	parsed int                // nodes in the text
	work   int64              // keys squared of the mappings in the text
	sizes  map[*yaml.Node]int // expanded size per node, memoized
	active map[*yaml.Node]bool
}

var errTooManyAliases = errors.New("alias expansion over the limit")

func (s *yamlScan) size(n *yaml.Node) (int, error) {
	if n == nil {
		return 0, nil
	}
	if v, ok := s.sizes[n]; ok {
		return v, nil
	}
	if s.active[n] {
		return 0, errors.New("a YAML alias refers to its own anchor")
	}
	s.active[n] = true
	defer delete(s.active, n)
	if n.Kind == yaml.AliasNode {
		v, err := s.size(n.Alias)
		if err != nil {
			return 0, err
		}
		s.sizes[n] = v
		return v, nil
	}
	s.parsed++
	if n.Kind == yaml.MappingNode {
		keys := len(n.Content) / 2
		if keys > s.limits.MaxMappingKeys {
			return 0, fmt.Errorf("a mapping at line %d has %d keys, more than the limit of at most %d keys; split it",
				n.Line, keys, s.limits.MaxMappingKeys)
		}
		s.work += int64(keys) * int64(keys)
	}
	total := 1
	for _, c := range n.Content {
		v, err := s.size(c)
		if err != nil {
			return 0, err
		}
		total += v
		// A subtree holds at most s.parsed distinct nodes, so a larger
		// total is alias duplication: stop before counting all of a bomb
		// (whose full count overflows int).
		if total-s.parsed > s.limits.MaxAliasNodes {
			return 0, fmt.Errorf("YAML aliases expand to more than %d extra nodes (limit %d); write the content out instead of using anchors",
				s.limits.MaxAliasNodes, s.limits.MaxAliasNodes)
		}
	}
	s.sizes[n] = total
	return total, nil
}
