package reconcilers

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
)

// TestChangesFromHandout: Changes on the files a sharing codec's Decode
// read passes over the objects still handed out as their files, and finds
// what a state commit writes as the whole comparison does (a test binary
// checks every such Changes against it, and panics on a difference). A
// file that no object holds any more, or holds elsewhere, is left to the
// whole comparison.
func TestChangesFromHandout(t *testing.T) {
	settled := settledState(3)
	p := &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: "to-s00000-1"},
		Spec: v1alpha1.VectorPromotionSpec{VectorPromotionConfigName: "to-s00000", Vector: "app:2026.1.1"}}
	p.Status.State = v1alpha1.PromotionSucceeded
	settled.Promotions[p.Name] = p
	base, err := EncodeState(settled)
	if err != nil {
		t.Fatal(err)
	}
	promotion := PromotionPath("to-s00000", "to-s00000-1")
	stage := "stages/apps/s00001.yaml"
	for _, tc := range []struct {
		name string
		// files are the branch's (base changed); decide changes the decoded
		// state as Decide would, on a CloneSharing copy.
		files  func(map[string][]byte)
		decide func(*State)
		want   []string // the paths written (or removed)
		// handed says Changes passed over what Decode handed out.
		handed bool
	}{
		{name: "nothing changed", handed: true},
		{name: "a promotion changed", handed: true, want: []string{promotion},
			decide: func(s *State) {
				c := s.Promotions["to-s00000-1"].DeepCopy()
				c.Status.State = v1alpha1.PromotionFailed
				s.Promotions[c.Name] = c
			}},
		{name: "a stage changed and a promotion added", handed: true,
			want: []string{PromotionPath("to-s00001", "to-s00001-1"), stage},
			decide: func(s *State) {
				st := s.Stages["apps/s00001"].DeepCopy()
				st.Status.Vector = "app:2026.1.5"
				s.Stages["apps/s00001"] = st
				s.Promotions["to-s00001-1"] = &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: "to-s00001-1"},
					Spec: v1alpha1.VectorPromotionSpec{VectorPromotionConfigName: "to-s00001", Vector: "app:2026.1.5"}}
			}},
		{name: "a promotion collected", want: []string{promotion},
			decide: func(s *State) { delete(s.Promotions, "to-s00000-1") }},
		{name: "a promotion at another config's path", want: []string{PromotionPath("elsewhere", "to-s00000-1"), promotion},
			files: func(f map[string][]byte) {
				f[PromotionPath("elsewhere", "to-s00000-1")] = f[promotion]
				delete(f, promotion)
			}},
		{name: "a stage written without its kind", handed: true, want: []string{stage},
			files: func(f map[string][]byte) {
				f[stage] = []byte("metadata: {name: s00001}\nspec: {landscape: apps, path: apps/overlays/s00001}\n")
			}},
		{name: "a file that does not decode", want: []string{"usages/broken.yaml"},
			files: func(f map[string][]byte) { f["usages/broken.yaml"] = []byte("spec: [\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := maps.Clone(base)
			if tc.files != nil {
				tc.files(files)
			}
			c := NewSharingCodec()
			c.pristine = map[string]pristineObject{} // checked under go test -bench too
			decoded, _ := c.Decode(files)
			next := decoded.CloneSharing()
			if tc.decide != nil {
				tc.decide(next)
			}
			before := c.handedChanges
			diff, err := c.Changes(next, files)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.handedChanges > before; got != tc.handed {
				t.Errorf("Changes passed over what Decode handed out: %v, want %v", got, tc.handed)
			}
			whole, err := NewCodec().Changes(next, files)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(whole, diff); d != "" {
				t.Errorf("Changes differs from a fresh codec's whole comparison (-whole +got):\n%s", d)
			}
			got := keys.Sorted(diff)
			if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("paths written (-want +got):\n%s", d)
			}
		})
	}
}
