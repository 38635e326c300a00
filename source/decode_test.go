package source

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

func TestDecode(t *testing.T) {
	const header = "apiVersion: vectorflow.dev/v1alpha1\n"
	const statusReason = "is written by vectorflow on its state branch, never in the config repository: remove it"
	tests := []struct {
		name         string
		data         string
		wantObjects  []string // kind/name
		wantProblems []Problem
	}{
		{
			name: "several documents, comments and empty ones",
			data: "# leading comment\n---\n" + header + "kind: Landscape\nmetadata:\n  name: dev\n---\n# only a comment\n---\n" +
				header + "kind: Stage\nmetadata:\n  name: dev\nspec:\n  landscape: dev\n  path: apps/dev\n",
			wantObjects: []string{"Landscape/dev", "Stage/dev"},
		},
		{
			name: "unknown field is reported with its path, the next document still decodes",
			data: header + "kind: Stage\nmetadata:\n  name: dev\nspec:\n  landscape: dev\n  path: a\n  overlay: b\n---\n" +
				header + "kind: Landscape\nmetadata:\n  name: dev\n",
			wantObjects:  []string{"Landscape/dev"},
			wantProblems: []Problem{{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "spec.overlay", Reason: "unknown field"}},
		},
		{
			name: "a StageVersionUsage holding a vector in prod",
			data: header + "kind: StageVersionUsage\nmetadata:\n  name: migration\nspec:\n  reason: executing vector migrations\n" +
				"  stageVersionSelector:\n    matchLabels:\n      vectorflow.dev/stage-name: prod\n      vectorflow.dev/vector: acme:2026.11.3-090000000Z\n",
			wantObjects: []string{"StageVersionUsage/migration"},
		},
		{
			name: "a usage with both references and another label names the fields",
			data: header + "kind: StageVersionUsage\nmetadata:\n  name: migration\nspec:\n  reason: r\n  stageVersionRef: {name: prod-1}\n" +
				"  stageVersionSelector:\n    matchLabels: {app: web}\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "StageVersionUsage", Name: "migration", Field: "spec.stageVersionSelector",
					Reason: "Forbidden: set exactly one of spec.stageVersionRef and spec.stageVersionSelector, not both"},
				{File: "f.yaml", Kind: "StageVersionUsage", Name: "migration", Field: "spec.stageVersionSelector.matchLabels[app]",
					Reason: `Unsupported value: "app": supported values: "vectorflow.dev/stage-name", "vectorflow.dev/vector"`},
			},
		},
		{
			name: "a stage's deployment and maxRevisions name their fields",
			data: header + "kind: Stage\nmetadata:\n  name: dev\nspec:\n  landscape: dev\n  path: a\n  maxRevisions: 0\n" +
				"  deployment: {kind: HelmRelease}\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "spec.deployment.kind",
					Reason: `Unsupported value: "HelmRelease": supported values: "Kustomization", "Application"`},
				{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "spec.deployment.name",
					Reason: "Required value: the name of the Flux Kustomization or Argo CD Application that deploys the overlay"},
				{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "spec.maxRevisions",
					Reason: "Invalid value: 0: must be at least 1: a stage always keeps the version it runs; leave it out for the default, 10"},
			},
		},
		{
			name: "a status is vectorflow's to write, whatever the kind; the object's other problems are still named",
			data: header + "kind: VectorPromotionConfig\nmetadata:\n  name: c\nspec:\n  keepLastPromotions: ten\n" +
				"status:\n  sequence: 7\n  promotionHistory: [{vector: acme:forged, promotion: c-7, sequence: 7, state: Succeeded}]\n---\n" +
				header + "kind: Stage\nmetadata:\n  name: dev\nspec:\n  landscape: dev\n  path: a\nstatus: {}\n---\n" +
				header + "kind: VectorTemplate\nmetadata:\n  name: acme\nstatus:\n  latestVector: acme:forged\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "status", Reason: statusReason},
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.keepLastPromotions", Reason: "wrong type: got string, want int32"},
				{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "status", Reason: statusReason},
				{File: "f.yaml", Kind: "VectorTemplate", Name: "acme", Field: "status", Reason: statusReason},
			},
		},
		{
			name:         "field names are case-sensitive",
			data:         header + "kind: Stage\nmetadata:\n  name: dev\nspec:\n  Landscape: dev\n  path: a\n",
			wantProblems: []Problem{{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "spec.Landscape", Reason: "unknown field"}},
		},
		{
			name: "wrong type names the field",
			data: header + "kind: VectorPromotionConfig\nmetadata:\n  name: c\nspec:\n  keepLastPromotions: ten\n",
			wantProblems: []Problem{{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.keepLastPromotions",
				Reason: "wrong type: got string, want int32"}},
		},
		{
			name: "invalid durations name their fields",
			data: header + "kind: VectorPromotionConfig\nmetadata:\n  name: c\nspec:\n  ttlAfterFinished: 1 day\n  updateDelay: 5\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.ttlAfterFinished",
					Reason: `invalid duration "1 day": use a Go duration such as 30m, 24h or 1h30m`},
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.updateDelay",
					Reason: `invalid duration 5: use a quoted Go duration such as "24h"`},
			},
		},
		{
			name:         "wrong apiVersion",
			data:         "apiVersion: vectorflow.dev/v1\nkind: Stage\nmetadata:\n  name: dev\n",
			wantProblems: []Problem{{File: "f.yaml", Kind: "Stage", Name: "dev", Field: "apiVersion", Reason: `must be vectorflow.dev/v1alpha1, not "vectorflow.dev/v1"`}},
		},
		{
			name: "unknown kind",
			data: header + "kind: Pipeline\nmetadata:\n  name: p\n",
			wantProblems: []Problem{{File: "f.yaml", Kind: "Pipeline", Name: "p", Field: "kind",
				Reason: `unknown kind "Pipeline": use one of Landscape, Stage, VectorTemplate, VectorPromotionConfig, StageVersionUsage`}},
		},
		{
			name:         "missing name",
			data:         header + "kind: Landscape\n",
			wantProblems: []Problem{{File: "f.yaml", Kind: "Landscape", Field: "metadata.name", Reason: "is required"}},
		},
		{
			name:         "duplicate key",
			data:         header + "kind: Landscape\nmetadata:\n  name: a\n  name: b\n",
			wantProblems: []Problem{{File: "f.yaml", Reason: `malformed YAML in document 1: yaml: unmarshal errors: line 5: key "name" already set in map`}},
		},
		{
			name:         "not a mapping",
			data:         "- a\n- b\n",
			wantProblems: []Problem{{File: "f.yaml", Reason: "malformed YAML in document 1: a config object must be a YAML mapping with apiVersion, kind and metadata"}},
		},
		{
			name: "validation runs after defaulting",
			data: header + "kind: Stage\nmetadata:\n  name: Dev\nspec:\n  landscape: dev\n  path: /abs\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "Stage", Name: "Dev", Field: "metadata.name", Reason: `Invalid value: "Dev": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
				{File: "f.yaml", Kind: "Stage", Name: "Dev", Field: "spec.path", Reason: `Invalid value: "/abs": must be relative to the landscape root, without a leading /`},
			},
		},
		{
			name: "every fault of one object is reported, not only the first",
			data: header + "kind: VectorPromotionConfig\nmetadata:\n  name: c\nspec:\n  ttlAfterFinished: 1 day\n  keepLastPromotions: ten\n" +
				"  source: {kind: 7, name: app}\n  target: {kind: Stage, name: dev, landscape: dev}\n  surprise: 1\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.ttlAfterFinished",
					Reason: `invalid duration "1 day": use a Go duration such as 30m, 24h or 1h30m`},
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.keepLastPromotions",
					Reason: "wrong type: got string, want int32"},
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.source.kind",
					Reason: "wrong type: got number, want string"},
				{File: "f.yaml", Kind: "VectorPromotionConfig", Name: "c", Field: "spec.surprise", Reason: "unknown field"},
			},
		},
		{
			name: "wrong apiVersion and missing name together",
			data: "apiVersion: vectorflow.dev/v1\nkind: Stage\nmetadata: {}\n",
			wantProblems: []Problem{
				{File: "f.yaml", Kind: "Stage", Field: "apiVersion", Reason: `must be vectorflow.dev/v1alpha1, not "vectorflow.dev/v1"`},
				{File: "f.yaml", Kind: "Stage", Field: "metadata.name", Reason: "is required"},
			},
		},
		{
			name:         "an alias bomb is refused before it is expanded",
			data:         header + "kind: Landscape\nmetadata:\n  name: dev\n  labels:\n" + aliasBomb,
			wantProblems: []Problem{{File: "f.yaml", Reason: "document 1: YAML aliases expand to more than 10000 extra nodes (limit 10000); write the content out instead of using anchors"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, problems := Decode("f.yaml", []byte(tt.data))
			var got []string
			for _, o := range objects {
				got = append(got, o.Kind+"/"+o.Name)
				if o.File != "f.yaml" || o.Value.GetName() != o.Name {
					t.Errorf("object %s: file %q, value name %q", o.Name, o.File, o.Value.GetName())
				}
			}
			if diff := cmp.Diff(tt.wantObjects, got); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantProblems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// aliasBomb is a "billion laughs" YAML fragment (under a mapping key at
// indentation 4): nine levels of nine aliases, 387 million nodes expanded.
var aliasBomb = func() string {
	var b strings.Builder
	b.WriteString("    l0: &l0 [lol]\n")
	for i := 1; i <= 9; i++ {
		refs := make([]string, 9)
		for j := range refs {
			refs[j] = fmt.Sprintf("*l%d", i-1)
		}
		fmt.Fprintf(&b, "    l%d: &l%d [%s]\n", i, i, strings.Join(refs, ", "))
	}
	return b.String()
}()

func TestProblemError(t *testing.T) {
	p := Problem{File: "vectorflow/stages.yaml", Kind: "Stage", Name: "dev", Field: "spec.path", Reason: "must stay inside the landscape root"}
	if got, want := p.Error(), "vectorflow/stages.yaml: Stage/dev: spec.path: must stay inside the landscape root"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (Problem{File: "a.yaml", Reason: "malformed"}).Error(), "a.yaml: malformed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// FuzzDecode checks Decode never panics and that every object it returns
// has a kind, a name and a typed value.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"testdata/good/vectorflow", "testdata/broken/vectorflow"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata: {name: c}\nspec: {ttlAfterFinished: [1]}\n"))
	f.Add([]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata: null\n"))
	f.Add([]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: a\n  annotations: {config.kubernetes.io/origin: \"path: ../../etc/passwd\\n\"}\n"))
	f.Add([]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: a\n  annotations: {config.kubernetes.io/origin: \"path: landscapes.yaml\\n\"}\n"))
	for _, bomb := range testutil.HostileYAML() {
		f.Add(bomb)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objects, _ := Decode("fuzz.yaml", data)
		for _, o := range objects {
			if o.Kind == "" || o.Name == "" || o.Value == nil {
				t.Fatalf("incomplete object %+v", o)
			}
		}
		// The same bytes as a kustomize build's output: an origin
		// annotation never attributes an object outside the repository.
		objects, problems := decodeRendered("vectorflow", "vectorflow/kustomization.yaml", data, nil)
		for _, o := range objects {
			if o.Kind == "" || o.Name == "" || o.Value == nil || !fs.ValidPath(o.File) {
				t.Fatalf("bad object %+v", o)
			}
			if _, ok := o.Value.GetAnnotations()[repofs.OriginAnnotation]; ok {
				t.Fatalf("object %s kept the origin annotation", o.Name)
			}
		}
		for _, p := range problems {
			if p.File != "" && !fs.ValidPath(p.File) {
				t.Fatalf("problem at a path outside the repository: %+v", p)
			}
		}
	})
}

// TestDecodeKeepsTheDocumentsOrder: the documents of a large file decode on
// every core, yet objects and problems come in the file's order, a
// malformed document is named by its number among all of them, empty ones
// included, and a document that cannot be split off ends the file.
func TestDecodeKeepsTheDocumentsOrder(t *testing.T) {
	const n = 500
	var b strings.Builder
	var wantObjects []string
	var wantProblems []Problem
	for i := range n {
		b.WriteString("---\n# only a comment\n---\n") // every other document is empty
		name := fmt.Sprintf("s%03d", i)
		fmt.Fprintf(&b, "apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n  landscape: dev\n  path: p\n", name)
		switch i % 7 {
		case 3:
			b.WriteString("  overlay: b\n")
			wantProblems = append(wantProblems, Problem{File: "f.yaml", Kind: "Stage", Name: name, Field: "spec.overlay", Reason: "unknown field"})
		case 5:
			b.WriteString("  path: [unclosed\n")
			wantProblems = append(wantProblems, Problem{File: "f.yaml", Reason: fmt.Sprintf("document %d", 2*i+2)})
		default:
			wantObjects = append(wantObjects, "Stage/"+name)
		}
	}
	objects, problems := Decode("f.yaml", []byte(b.String()))
	var gotObjects []string
	for _, o := range objects {
		gotObjects = append(gotObjects, o.Kind+"/"+o.Name)
	}
	if diff := cmp.Diff(wantObjects, gotObjects); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(problems) != len(wantProblems) {
		t.Fatalf("%d problems, want %d: %v", len(problems), len(wantProblems), problems)
	}
	for i, p := range problems {
		w := wantProblems[i]
		if w.Kind == "" {
			if p.File != w.File || !strings.Contains(p.Reason, "malformed YAML in "+w.Reason+":") {
				t.Errorf("problem %d: %v, want malformed YAML in %s", i, p, w.Reason)
			}
			continue
		}
		if !strings.Contains(p.Reason, w.Reason) || p.Kind != w.Kind || p.Name != w.Name || p.Field != w.Field {
			t.Errorf("problem %d: %v, want %v", i, p, w)
		}
	}
}
