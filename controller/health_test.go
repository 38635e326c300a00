package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPassProblem(t *testing.T) {
	many := make([]string, 7)
	for i := range many {
		many[i] = fmt.Sprintf("vectorflow/p.yaml: VectorPromotionConfig/c%d: spec.target: Stage nowhere does not exist", i)
	}
	for _, tc := range []struct {
		name string
		res  PassResult
		err  error
		want string
	}{
		{name: "a pass that did its work", res: PassResult{Transitions: []string{"a-1: (new) -> Ready"}}},
		{name: "promotions waiting for approval are work done", res: PassResult{Transitions: []string{"dev-to-test-1: (new) -> Waiting"}}},
		{name: "nothing to do", res: PassResult{}},
		{name: "the repository cannot be read", err: errors.New("read config repository: fetch branch main of http://h/missing.git: repository not found"),
			want: "pass failed: read config repository: fetch branch main of http://h/missing.git: repository not found"},
		{name: "an error's URL loses its credentials", err: errors.New(`Get "http://alice:***@h/a.git/info/refs": EOF`),
			want: `pass failed: Get "http://xxxxx@h/a.git/info/refs": EOF`},
		{name: "configuration problems", res: PassResult{Problems: []string{"vectorflow/p.yaml: VectorPromotionConfig/x: spec.target: Stage nowhere does not exist"}},
			want: "1 configuration problem(s), listed by vectorflow validate: vectorflow/p.yaml: VectorPromotionConfig/x: spec.target: Stage nowhere does not exist"},
		{name: "many configuration problems are counted, the first few named", res: PassResult{Problems: many},
			want: "7 configuration problem(s), listed by vectorflow validate: " + many[0] + "; " + many[1] + "; " + many[2] + "; and 4 more"},
		{name: "a failed pass says so before any problem", res: PassResult{Problems: many[:1]}, err: errors.New("write state branch vectorflow/state: conflict"),
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
		health []repositoryHealth
		want   string // the error, "" when ready
	}{
		{name: "no repository passed yet", health: []repositoryHealth{{Repository: "http://h/a.git"}},
			want: "repository http://h/a.git: first pass not done yet"},
		{name: "every repository passed", health: []repositoryHealth{{Repository: "http://h/a.git", Passed: true}, {Repository: "http://h/b.git", Passed: true}}},
		{name: "one repository's last pass failed", health: []repositoryHealth{
			{Repository: "http://h/a.git", Passed: true},
			{Repository: "http://h/b.git", Passed: true, Problem: "pass failed: repository not found"}},
			want: "repository http://h/b.git: pass failed: repository not found"},
		{name: "every reason is named", health: []repositoryHealth{
			{Repository: "http://h/a.git", Passed: true, Problem: "1 configuration problem(s), listed by vectorflow validate: x"},
			{Repository: "http://h/b.git"}},
			want: "repository http://h/a.git: 1 configuration problem(s), listed by vectorflow validate: x\nrepository http://h/b.git: first pass not done yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := readiness(tc.health); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
		})
	}
}
