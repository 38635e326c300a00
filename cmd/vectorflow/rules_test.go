package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

const exampleApprover = `  approval:
    approvers:
      - name: alice
        publicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBIKmQETi40xtnnFdhUcbxbea0XwaqKrvfMa/IPBVZrx alice@example.com
`

// quickstartFiles is the quickstart as plain YAML files (without the
// config directory's kustomization), so problems name the file of each
// object.
func quickstartFiles(t *testing.T) string {
	t.Helper()
	dir := testutil.CopyDir(t, filepath.Join("..", "..", "examples", "quickstart"))
	if err := os.Remove(filepath.Join(dir, "vectorflow", "kustomization.yaml")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestValidateRefusesConfigsThatCannotWork: a cycle of configs, two configs
// on one target stage and a config whose promotions nobody can approve pass
// each object's own checks; validate refuses them, naming every config
// involved with its file and field.
func TestValidateRefusesConfigsThatCannotWork(t *testing.T) {
	isolateCredentials(t)
	config := func(name, source, target string) string {
		return "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: " + name +
			"\nspec:\n  source: " + source + "\n  target: " + target + "\n"
	}
	tests := []struct {
		name string
		edit func(t *testing.T, dir string)
		want []source.Problem // Reason: substrings separated by "|"
	}{{
		name: "a cycle of three",
		edit: func(t *testing.T, dir string) {
			promotions := filepath.Join(dir, "vectorflow", "promotions.yaml")
			data := readFile(t, promotions)
			// Without latest-to-dev, dev's only config is the cycle's.
			_, rest, _ := strings.Cut(data, "---\n")
			writeFile(t, filepath.Dir(promotions), "promotions.yaml", []byte(rest))
			writeFile(t, filepath.Dir(promotions), "loops.yaml", []byte(config("prod-to-dev",
				"{kind: Stage, name: prod, landscape: prod}", "{kind: Stage, name: dev, landscape: dev}")+exampleApprover))
		},
		want: []source.Problem{
			{File: "vectorflow/loops.yaml", Kind: "VectorPromotionConfig", Name: "prod-to-dev", Field: "spec.target",
				Reason: "cycle: VectorPromotionConfig prod-to-dev (vectorflow/loops.yaml) (prod/prod → dev/dev) → VectorPromotionConfig dev-to-test (vectorflow/promotions.yaml) (dev/dev → test/test) → VectorPromotionConfig test-to-prod (vectorflow/promotions.yaml) (test/test → prod/prod), and back"},
			{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig", Name: "dev-to-test", Field: "spec.target",
				Reason: "cycle: VectorPromotionConfig dev-to-test (vectorflow/promotions.yaml) (dev/dev → test/test) → VectorPromotionConfig test-to-prod (vectorflow/promotions.yaml) (test/test → prod/prod) → VectorPromotionConfig prod-to-dev (vectorflow/loops.yaml) (prod/prod → dev/dev), and back"},
			{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig", Name: "test-to-prod", Field: "spec.target",
				Reason: "cycle: VectorPromotionConfig test-to-prod|→ VectorPromotionConfig prod-to-dev|→ VectorPromotionConfig dev-to-test"},
		},
	}, {
		name: "two configs, one target",
		edit: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "vectorflow"), "hotfix.yaml", []byte(config("hotfix-to-test",
				"{kind: VectorTemplate, name: acme}", "{kind: Stage, name: test, landscape: test}")))
		},
		want: []source.Problem{
			{File: "vectorflow/hotfix.yaml", Kind: "VectorPromotionConfig", Name: "hotfix-to-test", Field: "spec.target",
				Reason: "Stage test in Landscape test is also the target of VectorPromotionConfig dev-to-test (vectorflow/promotions.yaml)"},
			{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig", Name: "dev-to-test", Field: "spec.target",
				Reason: "Stage test in Landscape test is also the target of VectorPromotionConfig hotfix-to-test (vectorflow/hotfix.yaml)"},
		},
	}, {
		// A second name for test's overlay: its config and dev-to-test would
		// write one kustomization.yaml, each Succeeded while only the last
		// write renders, and each drifting back the other's vector.
		name: "two stages, one overlay",
		edit: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "vectorflow"), "hotfix.yaml", []byte("---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: hotfix\nspec:\n  path: apps\n"+
				"---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: hotfix\nspec:\n  landscape: hotfix\n  path: overlays/test\n"+
				config("hotfix-to-test", "{kind: VectorTemplate, name: acme}", "{kind: Stage, name: hotfix, landscape: hotfix}")))
		},
		want: []source.Problem{
			{File: "vectorflow/hotfix.yaml", Kind: "VectorPromotionConfig", Name: "hotfix-to-test", Field: "spec.target",
				Reason: "Stage hotfix in Landscape hotfix|overlay apps/overlays/test|also the target of VectorPromotionConfig dev-to-test (vectorflow/promotions.yaml)|Stage test"},
			{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig", Name: "dev-to-test", Field: "spec.target",
				Reason: "Stage test in Landscape test|overlay apps/overlays/test|also the target of VectorPromotionConfig hotfix-to-test (vectorflow/hotfix.yaml)|Stage hotfix"},
		},
	}, {
		name: "approval required and nobody to give it",
		edit: func(t *testing.T, dir string) {
			promotions := filepath.Join(dir, "vectorflow", "promotions.yaml")
			data := readFile(t, promotions)
			i := strings.Index(data, "  name: test-to-prod")
			j := strings.Index(data[i:], "    approvers:")
			if i < 0 || j < 0 {
				t.Fatal("the quickstart's test-to-prod changed; update this test")
			}
			writeFile(t, filepath.Dir(promotions), "promotions.yaml", []byte(data[:i+j]))
		},
		want: []source.Problem{
			{File: "vectorflow/promotions.yaml", Kind: "VectorPromotionConfig", Name: "test-to-prod", Field: "spec.approval.approvers",
				Reason: "wait for an approval (spec.approval.required is true|that nobody can give"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := quickstartFiles(t)
			if out, err := runValidate(t, "--repo", dir); err != nil {
				t.Fatalf("the quickstart does not validate before the edit: %v\n%s", err, out)
			}
			tt.edit(t, dir)
			out, err := runValidate(t, "--repo", dir, "-o", "json")
			if err == nil {
				t.Fatalf("validate accepted it:\n%s", out)
			}
			var report validationReport
			if err := json.Unmarshal([]byte(out), &report); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if len(report.Problems) != len(tt.want) {
				t.Errorf("%d problems, want %d: %+v", len(report.Problems), len(tt.want), report.Problems)
			}
			for i, want := range tt.want {
				if i >= len(report.Problems) {
					break
				}
				got := report.Problems[i]
				if got.File != want.File || got.Kind != want.Kind || got.Name != want.Name || got.Field != want.Field {
					t.Errorf("problem %d is at %s %s/%s %s, want %s %s/%s %s", i, got.File, got.Kind, got.Name, got.Field,
						want.File, want.Kind, want.Name, want.Field)
				}
				for _, s := range strings.Split(want.Reason, "|") {
					if !strings.Contains(got.Reason, s) {
						t.Errorf("problem %d %q does not say %q", i, got.Reason, s)
					}
				}
			}
		})
	}
}
