package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// TestSourceTemplates pins which template a config's vectors come from,
// through chains, diamonds and cycles, and that a deep chain is answered
// for every config (the search is remembered, not repeated per config).
func TestSourceTemplates(t *testing.T) {
	cfg := func(name, sourceKind, source, target string) *v1alpha1.VectorPromotionConfig {
		c := &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Spec.Source = v1alpha1.SourceReference{Kind: sourceKind, Name: source, Landscape: "l"}
		c.Spec.Target = v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: target, Landscape: "l"}
		return c
	}
	tmpl := v1alpha1.VectorTemplateKind
	stage := v1alpha1.StageKind
	for _, tc := range []struct {
		name    string
		configs []*v1alpha1.VectorPromotionConfig
		want    map[string]string
	}{
		{"chain", []*v1alpha1.VectorPromotionConfig{
			cfg("a", tmpl, "t1", "dev"), cfg("b", stage, "dev", "test"), cfg("c", stage, "test", "prod"),
		}, map[string]string{"a": "t1", "b": "t1", "c": "t1"}},
		{"two sources into one stage: the first name wins", []*v1alpha1.VectorPromotionConfig{
			cfg("z", tmpl, "t2", "dev"), cfg("y", tmpl, "t1", "dev"), cfg("b", stage, "dev", "test"),
		}, map[string]string{"z": "t2", "y": "t1", "b": "t1"}},
		{"a missing template is skipped", []*v1alpha1.VectorPromotionConfig{
			cfg("a", tmpl, "gone", "dev"), cfg("c", tmpl, "t2", "dev"), cfg("b", stage, "dev", "test"),
		}, map[string]string{"a": "", "c": "t2", "b": "t2"}},
		{"diamond", []*v1alpha1.VectorPromotionConfig{
			cfg("a", tmpl, "t1", "dev"), cfg("b1", stage, "dev", "left"), cfg("b2", stage, "dev", "right"),
			cfg("c1", stage, "left", "prod"), cfg("c2", stage, "right", "prod"), cfg("d", stage, "prod", "dr"),
		}, map[string]string{"a": "t1", "b1": "t1", "b2": "t1", "c1": "t1", "c2": "t1", "d": "t1"}},
		{"a cycle with no template", []*v1alpha1.VectorPromotionConfig{
			cfg("a", stage, "x", "y"), cfg("b", stage, "y", "x"),
		}, map[string]string{"a": "", "b": ""}},
		{"a cycle fed by a template", []*v1alpha1.VectorPromotionConfig{
			cfg("a", stage, "x", "y"), cfg("b", stage, "y", "x"), cfg("c", tmpl, "t1", "x"),
		}, map[string]string{"a": "t1", "b": "t1", "c": "t1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{Templates: map[string]*v1alpha1.VectorTemplate{"t1": {}, "t2": {}}, Configs: map[string]*v1alpha1.VectorPromotionConfig{}}
			for _, c := range tc.configs {
				s.Configs[c.Name] = c
			}
			st := newSourceTemplates(s)
			got := map[string]string{}
			for _, c := range tc.configs {
				got[c.Name] = st.of(c)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("source templates (-want +got):\n%s", diff)
			}
		})
	}
}
