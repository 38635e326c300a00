package v1alpha1

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// cfg is a config from source ("landscape/stage", or a template name) to
// target ("landscape/stage").
func cfg(name, source, target string) *VectorPromotionConfig {
	c := &VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if l, s, ok := strings.Cut(source, "/"); ok {
		c.Spec.Source = SourceReference{Kind: StageKind, Landscape: l, Name: s}
	} else {
		c.Spec.Source = SourceReference{Kind: VectorTemplateKind, Name: source}
	}
	l, s, _ := strings.Cut(target, "/")
	c.Spec.Target = StageReference{Kind: StageKind, Landscape: l, Name: s}
	return c
}

func TestValidateConfigs(t *testing.T) {
	target := field.NewPath("spec", "target")
	cycleMsg := func(steps ...string) string {
		return "the configs form a cycle: " + strings.Join(steps, " → ") + ", and back; each would promote the vector it " +
			"received to where it came from, rolling a stage back: remove one of them or point its spec.target out of the cycle"
	}
	shared := func(stage, landscape string, others ...string) string {
		return "Stage " + stage + " in Landscape " + landscape + " is also the target of " + strings.Join(others, ", ") +
			"; a stage takes its promotions from one config, or they overwrite each other's vector: " +
			"remove one or point its spec.target at another stage"
	}
	tests := []struct {
		name    string
		configs []*VectorPromotionConfig
		want    map[string]field.ErrorList
	}{
		{name: "a chain", configs: []*VectorPromotionConfig{
			cfg("latest-to-dev", "acme", "dev/dev"), cfg("dev-to-test", "dev/dev", "test/test"), cfg("test-to-prod", "test/test", "prod/prod"),
		}, want: map[string]field.ErrorList{}},
		{name: "a fan-out from one stage", configs: []*VectorPromotionConfig{
			cfg("dev-to-eu", "dev/dev", "prod/eu"), cfg("dev-to-us", "dev/dev", "prod/us"),
		}, want: map[string]field.ErrorList{}},
		{name: "same stage name in two landscapes is two stages", configs: []*VectorPromotionConfig{
			cfg("a", "dev/web", "eu/web"), cfg("b", "eu/web", "us/web"),
		}, want: map[string]field.ErrorList{}},
		{name: "dev → test → dev", configs: []*VectorPromotionConfig{
			cfg("test-to-dev", "test/test", "dev/dev"), cfg("dev-to-test", "dev/dev", "test/test"),
		}, want: map[string]field.ErrorList{
			"dev-to-test": {field.Invalid(target, "test/test", cycleMsg(
				"VectorPromotionConfig dev-to-test [f] (dev/dev → test/test)", "VectorPromotionConfig test-to-dev [f] (test/test → dev/dev)"))},
			"test-to-dev": {field.Invalid(target, "dev/dev", cycleMsg(
				"VectorPromotionConfig test-to-dev [f] (test/test → dev/dev)", "VectorPromotionConfig dev-to-test [f] (dev/dev → test/test)"))},
		}},
		{name: "a cycle of three, with a config leading into it", configs: []*VectorPromotionConfig{
			cfg("latest-to-a", "acme", "x/a"),
			cfg("a-to-b", "x/a", "x/b"), cfg("b-to-c", "x/b", "x/c"), cfg("c-to-a", "x/c", "x/a"),
			cfg("c-to-d", "x/c", "x/d"),
		}, want: map[string]field.ErrorList{
			"latest-to-a": {field.Invalid(target, "x/a", shared("a", "x", "VectorPromotionConfig c-to-a [f]"))},
			"c-to-a": {
				field.Invalid(target, "x/a", shared("a", "x", "VectorPromotionConfig latest-to-a [f]")),
				field.Invalid(target, "x/a", cycleMsg("VectorPromotionConfig c-to-a [f] (x/c → x/a)",
					"VectorPromotionConfig a-to-b [f] (x/a → x/b)", "VectorPromotionConfig b-to-c [f] (x/b → x/c)")),
			},
			"a-to-b": {field.Invalid(target, "x/b", cycleMsg("VectorPromotionConfig a-to-b [f] (x/a → x/b)",
				"VectorPromotionConfig b-to-c [f] (x/b → x/c)", "VectorPromotionConfig c-to-a [f] (x/c → x/a)"))},
			"b-to-c": {field.Invalid(target, "x/c", cycleMsg("VectorPromotionConfig b-to-c [f] (x/b → x/c)",
				"VectorPromotionConfig c-to-a [f] (x/c → x/a)", "VectorPromotionConfig a-to-b [f] (x/a → x/b)"))},
		}},
		{name: "three configs, one target", configs: []*VectorPromotionConfig{
			cfg("dev-to-test", "dev/dev", "test/test"), cfg("hotfix-to-test", "hotfix", "test/test"), cfg("qa-to-test", "qa/qa", "test/test"),
		}, want: map[string]field.ErrorList{
			"dev-to-test":    {field.Invalid(target, "test/test", shared("test", "test", "VectorPromotionConfig hotfix-to-test [f]", "VectorPromotionConfig qa-to-test [f]"))},
			"hotfix-to-test": {field.Invalid(target, "test/test", shared("test", "test", "VectorPromotionConfig dev-to-test [f]", "VectorPromotionConfig qa-to-test [f]"))},
			"qa-to-test":     {field.Invalid(target, "test/test", shared("test", "test", "VectorPromotionConfig dev-to-test [f]", "VectorPromotionConfig hotfix-to-test [f]"))},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateConfigs(tt.configs, func(n string) string { return n + " [f]" })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateConfigsAtComparesOverlays: two stages on one overlay are one
// target, and a cycle through a second name of a stage is a cycle.
func TestValidateConfigsAtComparesOverlays(t *testing.T) {
	overlay := func(landscape, name string) string {
		switch landscape + "/" + name {
		case "test/test", "hotfix/hotfix":
			return "apps/overlays/test of repo@main"
		case "dev/dev", "dev/alias":
			return "apps/overlays/dev of repo@main"
		}
		return ""
	}
	got := ValidateConfigsAt([]*VectorPromotionConfig{
		cfg("dev-to-test", "dev/dev", "test/test"), cfg("hotfix-to-test", "acme", "hotfix/hotfix"),
	}, nil, overlay)
	if len(got["dev-to-test"]) != 1 || len(got["hotfix-to-test"]) != 1 ||
		!strings.Contains(got["hotfix-to-test"][0].Detail, "Stage hotfix in Landscape hotfix (overlay apps/overlays/test of repo@main) is also the target of VectorPromotionConfig dev-to-test (through Stage test in Landscape test)") {
		t.Errorf("two stages on one overlay: %v", got)
	}
	got = ValidateConfigsAt([]*VectorPromotionConfig{
		cfg("dev-to-test", "dev/dev", "test/test"), cfg("test-to-dev", "test/test", "dev/alias"),
	}, nil, overlay)
	if len(got["dev-to-test"]) != 1 || !strings.Contains(got["dev-to-test"][0].Detail, "the configs form a cycle") {
		t.Errorf("a cycle through a second name of dev: %v", got)
	}
	if got := ValidateConfigs([]*VectorPromotionConfig{
		cfg("dev-to-test", "dev/dev", "test/test"), cfg("hotfix-to-test", "acme", "hotfix/hotfix"),
	}, nil); len(got) != 0 {
		t.Errorf("without overlays, two stage names are two stages: %v", got)
	}
}

// TestValidateConfigsAtLinearChain: a deep chain with a short cycle at its
// end reports only the configs of the cycle and of the shared stage, and
// asks where each stage's overlay is once (it was asked once per stage per
// config reaching it: 2,009,005 times here).
func TestValidateConfigsAtLinearChain(t *testing.T) {
	const n = 2000
	configs := []*VectorPromotionConfig{cfg("to-s0", "acme", "l/s0")}
	for i := 1; i < n; i++ {
		configs = append(configs, cfg(fmt.Sprintf("c%d", i), fmt.Sprintf("l/s%d", i-1), fmt.Sprintf("l/s%d", i)))
	}
	configs = append(configs, cfg("back", fmt.Sprintf("l/s%d", n-1), fmt.Sprintf("l/s%d", n-2)))
	asked := 0
	got := ValidateConfigsAt(configs, nil, func(landscape, name string) string {
		asked++
		return "apps/" + name
	})
	if diff := cmp.Diff([]string{"back", fmt.Sprintf("c%d", n-2), fmt.Sprintf("c%d", n-1)}, slices.Sorted(maps.Keys(got))); diff != "" {
		t.Errorf("configs with problems (-want +got):\n%s", diff)
	}
	if asked > n {
		t.Errorf("the overlay of %d stages was looked up %d times, want each once", n, asked)
	}
}
