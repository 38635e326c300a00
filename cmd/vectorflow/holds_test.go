package main

import (
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

func TestRollbackVector(t *testing.T) {
	ok := func(vector, promotion string) v1alpha1.PromotionRecord {
		return v1alpha1.PromotionRecord{Vector: vector, Promotion: promotion, State: v1alpha1.PromotionSucceeded}
	}
	failed := v1alpha1.PromotionRecord{Vector: "acme:2", Promotion: "c-4", State: v1alpha1.PromotionFailed}
	history := []v1alpha1.PromotionRecord{ok("acme:3", "c-5"), failed, ok("acme:2", "c-3"), ok("acme:1", "c-1")} // newest first
	cases := []struct {
		name, current, to string
		previous          bool
		want, err         string
	}{
		{name: "previous skips the current vector", current: "acme:3", previous: true, want: "acme:2"},
		{name: "previous after a rollback is the one before the stage's vector", current: "acme:2", previous: true, want: "acme:3"},
		{name: "to a vector the config wrote", current: "acme:3", to: "acme:1", want: "acme:1"},
		{name: "to a vector only a failed promotion tried", current: "acme:3", to: "acme:9", err: "no promotion of it wrote acme:9"},
		{name: "to the vector the stage runs", current: "acme:3", to: "acme:3", err: "runs acme:3 already"},
		{name: "previous with no history", current: "acme:3", previous: true, err: "no promotion of it wrote a vector before acme:3"},
		{name: "previous with no history but a kept StageVersion", current: "acme:3", previous: true, want: "acme:0"},
		{name: "to a vector only a StageVersion keeps", current: "acme:3", to: "acme:0", want: "acme:0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, kept := history, []string(nil)
			switch tc.name {
			case "previous with no history":
				h = []v1alpha1.PromotionRecord{ok("acme:3", "c-5")}
			case "previous with no history but a kept StageVersion":
				h, kept = []v1alpha1.PromotionRecord{ok("acme:3", "c-5")}, []string{"acme:3", "acme:0"}
			case "to a vector only a StageVersion keeps":
				kept = []string{"acme:3", "acme:0"}
			}
			got, err := rollbackVector(h, kept, tc.current, tc.to, tc.previous)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("rollbackVector = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestRollbackHoldAndRelease: test runs dev's first vector and then its
// second (each approved by alice); alice rolls test back to the previous
// one. Her signed request is the rollback's approval, its commit says
// Vectorflow-Rollback: true, and test is held (get stages: HELD) until she
// releases it. mallory, no approver, can neither hold nor roll back.
func TestRollbackHoldAndRelease(t *testing.T) {
	f := newFlowFixture(t)
	alice := []string{"--signing-key", f.alice, "--identity", "Alice <alice@example.com>"}
	approveNewest := func() string {
		t.Helper()
		var newest v1alpha1.VectorPromotion
		for _, p := range f.promotions(t) {
			if p.Spec.VectorPromotionConfigName == "dev-to-test" && p.Status.State == v1alpha1.PromotionWaiting && p.Spec.Sequence > newest.Spec.Sequence {
				newest = p
			}
		}
		if newest.Name == "" {
			t.Fatal("no dev-to-test promotion waits")
		}
		f.cli(t, append([]string{"approve", newest.Name}, alice...)...)
		f.run(t)
		return newest.Spec.Vector
	}
	f.run(t)
	first := approveNewest()
	f.pushTemplateChange(t, "registry.example.com/acme/service-a", "1.0.2", "1.0.3")
	f.run(t)
	second := approveNewest()
	if first == second {
		t.Fatalf("both promotions carry %s", first)
	}

	if out, err := f.cliE("hold", "--stage", "test/test", "--signing-key", f.mallory, "--identity", "Mallory <m@example.com>"); err == nil ||
		!strings.Contains(out+err.Error(), "not one of the approvers") {
		t.Fatalf("mallory's hold: %v\n%s", err, out)
	}
	if out, err := f.cliE("rollback", "--stage", "test/test", "--previous", "--signing-key", f.mallory); err == nil {
		t.Fatalf("mallory's rollback succeeded:\n%s", out)
	}

	out := f.cli(t, append([]string{"rollback", "--stage", "test/test", "--previous", "--reason", "1.0.3 breaks checkout"}, alice...)...)
	if !strings.Contains(out, "rollback of test/test to "+first) {
		t.Fatalf("rollback printed %q", out)
	}
	f.run(t)
	f.run(t)
	var rollback v1alpha1.VectorPromotion
	for _, p := range f.promotions(t) {
		if p.Spec.Rollback {
			rollback = p
		}
	}
	if rollback.Spec.Vector != first || rollback.Status.State != v1alpha1.PromotionSucceeded ||
		rollback.Status.Approval == nil || rollback.Status.Approval.ApprovedBy != "alice" {
		t.Fatalf("the rollback = %+v, want %s Succeeded, approved by alice", rollback, first)
	}
	dir := f.clone(t)
	if body := testutil.Git(t, dir, nil, "log", "-1", "--format=%B", rollback.Status.Commit); !strings.Contains(body, "Vectorflow-Rollback: true") ||
		!strings.Contains(body, "Approved-by: alice") {
		t.Fatalf("the rollback commit says:\n%s", body)
	}
	stages := f.cli(t, "get", "stages", "--trust", f.controllerPublic)
	if !strings.Contains(stages, "HELD (StageHeld)") {
		t.Fatalf("get stages does not show test held:\n%s", stages)
	}

	f.cli(t, append([]string{"release", "--stage", "test/test", "--reason", "fixed"}, alice...)...)
	f.run(t)
	stages = f.cli(t, "get", "stages", "--trust", f.controllerPublic)
	if strings.Contains(stages, "HELD (") {
		t.Fatalf("get stages still shows a hold after the release:\n%s", stages)
	}
}
