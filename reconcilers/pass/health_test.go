package pass

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

func TestPassProblem(t *testing.T) {
	many := make([]string, 7)
	for i := range many {
		many[i] = fmt.Sprintf("vectorflow/p.yaml: VectorPromotionConfig/c%d: spec.target: Stage nowhere does not exist", i)
	}
	for _, tc := range []struct {
		name string
		res  []string
		err  error
		want string
	}{
		{name: "a pass that did its work", res: nil},
		{name: "promotions waiting for approval are work done", res: nil},
		{name: "nothing to do", res: nil},
		{name: "the repository cannot be read", err: errors.New("read config repository: fetch branch main of http://h/missing.git: repository not found"),
			want: "pass failed: read config repository: fetch branch main of http://h/missing.git: repository not found"},
		{name: "an error's URL loses its credentials", err: errors.New(`Get "http://alice:***@h/a.git/info/refs": EOF`),
			want: `pass failed: Get "http://xxxxx@h/a.git/info/refs": EOF`},
		{name: "configuration problems", res: []string{"vectorflow/p.yaml: VectorPromotionConfig/x: spec.target: Stage nowhere does not exist"},
			want: "1 configuration problem(s): vectorflow/p.yaml: VectorPromotionConfig/x: spec.target: Stage nowhere does not exist"},
		{name: "many configuration problems are counted, the first few named", res: many,
			want: "7 configuration problem(s): " + many[0] + "; " + many[1] + "; " + many[2] + "; and 4 more"},
		{name: "a failed pass says so before any problem", res: many[:1], err: errors.New("write state branch vectorflow/state: conflict"),
			want: "pass failed: write state branch vectorflow/state: conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PassProblem(tc.res, tc.err)); diff != "" {
				t.Errorf("PassProblem (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	for _, tc := range []struct {
		name   string
		health []RepositoryHealth
		want   string // the error, "" when ready
	}{
		{name: "no repository passed yet", health: []RepositoryHealth{{Repository: "http://h/a.git"}},
			want: "repository http://h/a.git: first pass not done yet"},
		{name: "every repository passed", health: []RepositoryHealth{{Repository: "http://h/a.git", Passed: true}, {Repository: "http://h/b.git", Passed: true}}},
		{name: "one repository's last pass failed", health: []RepositoryHealth{
			{Repository: "http://h/a.git", Passed: true},
			{Repository: "http://h/b.git", Passed: true, Problem: "pass failed: repository not found"}},
			want: "repository http://h/b.git: pass failed: repository not found"},
		{name: "every reason is named", health: []RepositoryHealth{
			{Repository: "http://h/a.git", Passed: true, Problem: "1 configuration problem(s): x"},
			{Repository: "http://h/b.git"}},
			want: "repository http://h/a.git: 1 configuration problem(s): x\nrepository http://h/b.git: first pass not done yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := Readiness(tc.health); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigurationProblems(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: status, Reason: reason, Message: msg}}
	}
	snap := func(problems ...source.Problem) *source.Snapshot {
		return &source.Snapshot{Problems: problems,
			Configs:   map[string]*v1alpha1.VectorPromotionConfig{"dev-to-test": {}, "latest-to-dev": {}},
			Templates: map[string]*v1alpha1.VectorTemplate{"acme": {}}}
	}
	state := func(configReady, templateReady []metav1.Condition) *reconcilers.State {
		s := reconcilers.NewState()
		s.Configs["dev-to-test"] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{Conditions: configReady}}
		s.Configs["latest-to-dev"] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{
			Conditions: ready(metav1.ConditionTrue, "Resolved", "")}}
		s.Templates["acme"] = &v1alpha1.VectorTemplate{Status: v1alpha1.VectorTemplateStatus{Conditions: templateReady}}
		// Objects the snapshot no longer has are not this pass's problem.
		s.Configs["gone"] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{
			Conditions: ready(metav1.ConditionFalse, "SourceNotFound", "Stage dev does not exist")}}
		return s
	}
	missingStage := source.Problem{File: "vectorflow/promotions.yaml", Kind: v1alpha1.VectorPromotionConfigKind, Name: "dev-to-test",
		Field: "spec.target.name", Reason: `Stage "nowhere" not found in landscape "prod"`}
	for _, tc := range []struct {
		name  string
		snap  *source.Snapshot
		state *reconcilers.State
		want  []string
	}{
		{name: "everything ready", snap: snap(), state: state(ready(metav1.ConditionTrue, "Resolved", ""), ready(metav1.ConditionTrue, v1alpha1.VectorAssembledReason, ""))},
		{name: "no conditions yet", snap: snap(), state: state(nil, nil)},
		{name: "a snapshot problem, once, though the config it names is not ready either", snap: snap(missingStage),
			state: state(ready(metav1.ConditionFalse, "TargetNotFound", "target Stage nowhere does not exist"), nil),
			want:  []string{missingStage.Error()}},
		{name: "a template that cannot assemble a vector", snap: snap(),
			state: state(nil, ready(metav1.ConditionFalse, v1alpha1.AssemblyFailedReason, "component api: no tag matches >=2.0.0")),
			want:  []string{"VectorTemplate/acme: AssemblyFailed: component api: no tag matches >=2.0.0"}},
		{name: "a registry outage with the last version kept is not one", snap: snap(),
			state: state(nil, ready(metav1.ConditionFalse, v1alpha1.RegistryUnavailableReason, "registry.example.com: 503; kept 1.2.0"))},
		{name: "a config not ready without a snapshot problem", snap: snap(),
			state: state(ready(metav1.ConditionFalse, "InvalidSpec", "spec.keepLastPromotions: must be at least 1"), nil),
			want:  []string{"VectorPromotionConfig/dev-to-test: InvalidSpec: spec.keepLastPromotions: must be at least 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ConfigurationProblems(tc.snap, tc.state)); diff != "" {
				t.Errorf("ConfigurationProblems (-want +got):\n%s", diff)
			}
		})
	}
}
