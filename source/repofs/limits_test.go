package repofs_test

import (
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/bench"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// TestCheckYAMLCountsEveryKind of key: a mapping one key over the limit is
// refused however its keys are written (block, flow without values,
// explicit keys), and one at the limit passes.
func TestCheckYAMLCountsEveryKind(t *testing.T) {
	limits := repofs.Limits{MaxMappingKeys: 3}
	for _, tc := range []struct {
		yaml   string
		refuse bool
	}{
		{"a: 1\nb: 2\nc: 3\n", false},
		{"a: 1\nb: 2\nc: 3\nd: 4\n", true},
		{"{a, b, c}\n", false},
		{"{a, b, c, d}\n", true},
		{"? a\n? b\n? c\n? d\n", true},
		{"x: {a, b, c}\ny: [1, 2, 3, 4, 5]\n", false},
		{"x: {a, b, c, d}\n", true},
		{"- &k {a, b}\n- *k\n- *k\n", false},
	} {
		err := repofs.CheckYAML("f.yaml", []byte(tc.yaml), limits)
		if got := err != nil; got != tc.refuse {
			t.Errorf("CheckYAML(%q) = %v; want refused %v", tc.yaml, err, tc.refuse)
		}
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
	if err := repofs.CheckYAML("f.yaml", []byte(bomb), repofs.Limits{MaxAliasNodes: 100}); err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Errorf("CheckYAML of an alias bomb = %v; want refused for its aliases", err)
	}
}

// BenchmarkCheckYAML checks one application's config file of make bench's
// apps shape (its template, ten stages and nine configs, each with an
// armored approver key), as every config file's decode does first.
func BenchmarkCheckYAML(b *testing.B) {
	repo, err := bench.Generate(bench.Apps, 10, testutil.NewOpenPGPKey(b, "alice", "alice@example.com", nil).PublicArmored, 0)
	if err != nil {
		b.Fatal(err)
	}
	data := repo.Files[repo.Template]
	if len(data) < 4096 {
		b.Fatalf("%s holds %d bytes; expected an application's whole config", repo.Template, len(data))
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := repofs.CheckYAML(repo.Template, data, repofs.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
