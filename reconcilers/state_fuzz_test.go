package reconcilers

import (
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// FuzzDecodeStateFile: a state or approval file of any content, under any
// kind's directory, decodes to an object of that kind, or to an approval
// that carries its problem, or fails with an error; never a panic, and the alias bombs and wide mappings that
// exhausted kustomize cost no more than their text.
func FuzzDecodeStateFile(f *testing.F) {
	dirs := []string{VectorsDir, PromotionsDir, ConfigsDir, TemplatesDir, StagesDir, ApprovalsDir, "elsewhere"}
	seeds := [][]byte{
		[]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Approval\npromotion: latest-to-dev-1\nvector: app:1\napprovedBy: alice\napprovedAt: \"2026-01-01T00:00:00Z\"\n"),
		[]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotion\nmetadata: {name: latest-to-dev-1}\nspec: {sequence: 1}\n"),
		[]byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-1}\n"),
		[]byte("kind: Approval\npromotion: \"\"\n"),
	}
	for _, bomb := range testutil.HostileYAML() {
		seeds = append(seeds, bomb)
	}
	for i, seed := range seeds {
		f.Add(uint8(i), seed)
	}
	f.Fuzz(func(t *testing.T, dir uint8, data []byte) {
		name := dirs[int(dir)%len(dirs)] + "/x/y.yaml"
		obj, err := decodeFile(name, data)
		if err != nil {
			return
		}
		// A malformed approval is kept with its Problem, so it is refused on
		// its own; one without a Problem must name a promotion.
		if a, ok := obj.(approvalObject); ok && a.Problem == "" && (a.Kind != ApprovalKind || a.Promotion == "") {
			t.Fatalf("accepted an approval that names no promotion: %+v", a.Approval)
		}
	})
}
