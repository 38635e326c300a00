package source

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/parallel"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// Object is one decoded, defaulted config object and where it came from.
type Object struct {
	File string `json:"file"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Value is the typed object: *v1alpha1.Landscape, *v1alpha1.Stage,
	// *v1alpha1.VectorTemplate, *v1alpha1.VectorPromotionConfig or
	// *v1alpha1.StageVersionUsage.
	Value client.Object `json:"-"`
}

// Problem is one fault in the declarative repository. Everything else still
// loads; a Problem says where (file, object, field) and what is wrong.
type Problem struct {
	File   string `json:"file,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Name   string `json:"name,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

// Error reads like "vectorflow/stages.yaml: Stage/dev: spec.path: must stay
// inside the landscape root", leaving out the parts that are unknown.
func (p Problem) Error() string {
	var parts []string
	if p.File != "" {
		parts = append(parts, p.File)
	}
	if p.Kind != "" || p.Name != "" {
		parts = append(parts, p.Kind+"/"+p.Name)
	}
	if p.Field != "" {
		parts = append(parts, p.Field)
	}
	parts = append(parts, p.Reason)
	return strings.Join(parts, ": ")
}

// ConfigKinds are the kinds a config directory may hold, in the order they
// are listed.
var ConfigKinds = []string{
	v1alpha1.LandscapeKind,
	v1alpha1.StageKind,
	v1alpha1.VectorTemplateKind,
	v1alpha1.VectorPromotionConfigKind,
	v1alpha1.StageVersionUsageKind,
}

// durationFields are the metav1.Duration fields per kind: the JSON decoder
// reports a bad duration without its path, so they are checked first.
var durationFields = map[string][][]string{
	v1alpha1.VectorPromotionConfigKind: {{"spec", "ttlAfterFinished"}, {"spec", "updateDelay"}},
}

// Decode reads the config objects of one file (one or more YAML documents):
// strict (unknown and duplicate fields are problems), then defaulted and
// validated. A document with a fault is left out; the others still decode.
// Every fault of a document is reported, not only the first.
func Decode(file string, data []byte) ([]Object, []Problem) {
	return decode(file, data, "", nil)
}

// decodeRendered decodes the output of a kustomize build of dir made with
// origin annotations: each object is attributed to the file that holds it
// (kustFile when kustomize generated it), and the annotation is removed.
func decodeRendered(dir, kustFile string, data []byte, keys *v1alpha1.KeyVerdicts) ([]Object, []Problem) {
	return decode(kustFile, data, dir, keys)
}

// decode is Decode with objects attributed to their origin file when
// originDir is set, and the verdicts on public keys taken from keys (nil
// parses every key).
func decode(file string, data []byte, originDir string, keys *v1alpha1.KeyVerdicts) ([]Object, []Problem) {
	if err := repofs.CheckYAML(file, data, repofs.Limits{}); err != nil {
		var le *repofs.LimitError
		if errors.As(err, &le) {
			return nil, []Problem{{File: le.File, Reason: le.Reason}}
		}
		return nil, []Problem{{File: file, Reason: err.Error()}}
	}
	// The documents decode on every core: a large repository keeps
	// thousands of objects in one file. They are reported in their order.
	docs, malformed := splitDocuments(file, data)
	type result struct {
		obj      *Object
		problems []Problem
	}
	results := make([]result, len(docs))
	parallel.Each(len(docs), func(i int) {
		results[i].obj, results[i].problems = decodeDocument(file, docs[i].number, docs[i].raw, originDir, keys)
	})
	var objects []Object
	var problems []Problem
	for _, r := range results {
		problems = append(problems, r.problems...)
		if r.obj != nil {
			objects = append(objects, *r.obj)
		}
	}
	if malformed != nil {
		problems = append(problems, *malformed)
	}
	return objects, problems
}

// splitDocuments cuts data into its non-empty documents, up to the first
// that cannot be read, which is the problem.
func splitDocuments(file string, data []byte) ([]document, *Problem) {
	var docs []document
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for number := 1; ; number++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, &Problem{File: file, Reason: fmt.Sprintf("malformed YAML in document %d: %v", number, err)}
		}
		if !isEmptyDocument(raw) {
			docs = append(docs, document{number: number, raw: raw})
		}
	}
}

// document is one non-empty YAML document of a file, numbered from 1 among
// all of the file's documents.
type document struct {
	number int
	raw    []byte
}

// maxTypeErrors bounds the re-decodes that find every wrongly typed field
// (the JSON decoder reports one per pass).
const maxTypeErrors = 50

func decodeDocument(file string, doc int, raw []byte, originDir string, keys *v1alpha1.KeyVerdicts) (*Object, []Problem) {
	malformed := func(err error) []Problem {
		// YAML errors span lines; a Problem is one line.
		reason := strings.Join(strings.Fields(err.Error()), " ")
		return []Problem{{File: file, Reason: fmt.Sprintf("malformed YAML in document %d: %s", doc, reason)}}
	}
	data, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, malformed(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil || generic == nil {
		return nil, malformed(errors.New("a config object must be a YAML mapping with apiVersion, kind and metadata"))
	}
	if originDir != "" {
		if origin, ok := takeOrigin(generic, originDir); ok {
			file = origin
		}
		if data, err = json.Marshal(generic); err != nil {
			return nil, malformed(err)
		}
	}
	kind, _ := generic["kind"].(string)
	name, _ := lookup(generic, "metadata", "name").(string)
	var problems []Problem
	problem := func(fieldPath, reason string) {
		problems = append(problems, Problem{File: file, Kind: kind, Name: name, Field: fieldPath, Reason: reason})
	}
	if apiVersion, _ := generic["apiVersion"].(string); apiVersion != v1alpha1.GroupVersion.String() {
		problem("apiVersion", fmt.Sprintf("must be %s, not %q", v1alpha1.GroupVersion, apiVersion))
	}
	value := newObject(kind)
	if value == nil {
		problem("kind", fmt.Sprintf("unknown kind %q: use one of %s", kind, strings.Join(ConfigKinds, ", ")))
	}
	if name == "" {
		problem("metadata.name", "is required")
	}
	if value == nil {
		return nil, problems
	}
	// Statuses are vectorflow's to write, on the state branch: one read
	// from the config repository would let whoever writes it seed a
	// config's sequence and promotion history.
	if _, ok := generic["status"]; ok {
		problem("status", "is written by vectorflow on its state branch, never in the config repository: remove it")
		delete(generic, "status")
	}
	// The JSON decoder reports a bad duration without its path: check them
	// first, then leave them out of the typed decode.
	for _, path := range durationFields[kind] {
		if reason := checkDuration(lookup(generic, path...)); reason != "" {
			problem(strings.Join(path, "."), reason)
			deletePath(generic, path)
		}
	}
	// One wrongly typed field per pass: drop it and decode again, so every
	// one is reported.
	var strict []error
	for i := 0; ; i++ {
		if data, err = json.Marshal(generic); err != nil {
			return nil, malformed(err)
		}
		value = newObject(kind)
		strict, err = sigsjson.UnmarshalStrict(data, value)
		if err == nil {
			break
		}
		fieldPath, reason := describeDecodeError(err)
		problem(fieldPath, reason)
		if fieldPath == "" || i == maxTypeErrors || !deletePath(generic, strings.Split(fieldPath, ".")) {
			return nil, problems
		}
	}
	for _, e := range strict {
		reason, fieldPath := e.Error(), ""
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			fieldPath = fe.FieldPath()
			reason = strings.TrimSuffix(reason, " "+strconv.Quote(fieldPath))
		}
		problem(fieldPath, reason)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	value.Default()
	for _, e := range validate(value, keys) {
		problem(e.Field, e.ErrorBody())
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &Object{File: file, Kind: kind, Name: name, Value: value}, nil
}

// takeOrigin removes kustomize's origin annotation from a rendered object
// and returns the file it names.
func takeOrigin(generic map[string]any, dir string) (string, bool) {
	annotations, _ := lookup(generic, "metadata", "annotations").(map[string]any)
	value, _ := annotations[repofs.OriginAnnotation].(string)
	if value == "" {
		return "", false
	}
	delete(annotations, repofs.OriginAnnotation)
	if len(annotations) == 0 {
		delete(generic["metadata"].(map[string]any), "annotations")
	}
	return repofs.OriginFile(dir, value)
}

// deletePath removes a field, in every element of the lists along the path
// (the decoder's paths carry no index); it reports whether it removed any.
func deletePath(v any, path []string) bool {
	switch v := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			_, ok := v[path[0]]
			delete(v, path[0])
			return ok
		}
		return deletePath(v[path[0]], path[1:])
	case []any:
		removed := false
		for _, e := range v {
			removed = deletePath(e, path) || removed
		}
		return removed
	}
	return false
}

// configObject is what every config kind offers: defaults and validation
// come with the API types, so the CLI and the controller agree on them.
type configObject interface {
	client.Object
	Default()
	Validate() field.ErrorList
}

// validate validates an object, with the verdicts on its public keys taken
// from keys where it has any.
func validate(o configObject, keys *v1alpha1.KeyVerdicts) field.ErrorList {
	if withKeys, ok := o.(interface {
		ValidateWithKeys(*v1alpha1.KeyVerdicts) field.ErrorList
	}); ok {
		return withKeys.ValidateWithKeys(keys)
	}
	return o.Validate()
}

func newObject(kind string) configObject {
	switch kind {
	case v1alpha1.LandscapeKind:
		return &v1alpha1.Landscape{}
	case v1alpha1.StageKind:
		return &v1alpha1.Stage{}
	case v1alpha1.VectorTemplateKind:
		return &v1alpha1.VectorTemplate{}
	case v1alpha1.VectorPromotionConfigKind:
		return &v1alpha1.VectorPromotionConfig{}
	case v1alpha1.StageVersionUsageKind:
		return &v1alpha1.StageVersionUsage{}
	}
	return nil
}

func lookup(m map[string]any, path ...string) any {
	var cur any = m
	for _, key := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[key]
	}
	return cur
}

func checkDuration(v any) string {
	switch d := v.(type) {
	case nil:
		return ""
	case string:
		if _, err := time.ParseDuration(d); err != nil {
			return fmt.Sprintf("invalid duration %q: use a Go duration such as 30m, 24h or 1h30m", d)
		}
		return ""
	}
	return fmt.Sprintf("invalid duration %v: use a quoted Go duration such as \"24h\"", v)
}

var structFieldPattern = regexp.MustCompile(`Go struct field [^ .]+\.(\S+) of type (\S+)`)

// describeDecodeError turns a JSON type error into a field path and a
// reason; the decoder only offers the path inside its message.
func describeDecodeError(err error) (string, string) {
	msg := err.Error()
	if m := structFieldPattern.FindStringSubmatch(msg); m != nil {
		value := strings.TrimPrefix(msg, "json: cannot unmarshal ")
		value, _, _ = strings.Cut(value, " into ")
		return m[1], fmt.Sprintf("wrong type: got %s, want %s", value, m[2])
	}
	return "", "cannot decode: " + strings.TrimPrefix(msg, "json: ")
}

func isEmptyDocument(raw []byte) bool {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) && !bytes.Equal(line, []byte("...")) {
			return false
		}
	}
	return true
}
