package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVectorPromotionConfigDefault(t *testing.T) {
	templateSource := SourceReference{Kind: VectorTemplateKind, Name: "acme"}
	stageSource := SourceReference{Kind: StageKind, Name: "dev", Landscape: "dev"}
	target := StageReference{Kind: StageKind, Name: "test", Landscape: "test"}
	day := &metav1.Duration{Duration: 24 * time.Hour}

	tests := []struct {
		name string
		in   VectorPromotionConfigSpec
		want VectorPromotionConfigSpec
	}{{
		name: "template source: auto-promote, 10 kept, 24h",
		in:   VectorPromotionConfigSpec{Source: templateSource, Target: target},
		want: VectorPromotionConfigSpec{
			Source: templateSource, Target: target,
			KeepLastPromotions: ptr[int32](10), TTLAfterFinished: day,
			Approval: &ApprovalPolicy{Required: ptr(false)},
		},
	}, {
		name: "stage source: approval required",
		in:   VectorPromotionConfigSpec{Source: stageSource, Target: target},
		want: VectorPromotionConfigSpec{
			Source: stageSource, Target: target,
			KeepLastPromotions: ptr[int32](10), TTLAfterFinished: day,
			Approval: &ApprovalPolicy{Required: ptr(true)},
		},
	}, {
		name: "explicit values are kept, zero included",
		in: VectorPromotionConfigSpec{
			Source: stageSource, Target: target,
			KeepLastPromotions: ptr[int32](0), TTLAfterFinished: &metav1.Duration{},
			Approval:    &ApprovalPolicy{Required: ptr(false), Approvers: []Approver{{Name: "alice", PublicKey: "k"}}},
			UpdateDelay: &metav1.Duration{Duration: time.Hour},
		},
		want: VectorPromotionConfigSpec{
			Source: stageSource, Target: target,
			KeepLastPromotions: ptr[int32](0), TTLAfterFinished: &metav1.Duration{},
			Approval:    &ApprovalPolicy{Required: ptr(false), Approvers: []Approver{{Name: "alice", PublicKey: "k"}}},
			UpdateDelay: &metav1.Duration{Duration: time.Hour},
		},
	}, {
		name: "approvers without required: required filled in, approvers kept",
		in: VectorPromotionConfigSpec{
			Source: templateSource, Target: target,
			Approval: &ApprovalPolicy{Approvers: []Approver{{Name: "alice", PublicKey: "k"}}},
		},
		want: VectorPromotionConfigSpec{
			Source: templateSource, Target: target,
			KeepLastPromotions: ptr[int32](10), TTLAfterFinished: day,
			Approval: &ApprovalPolicy{Required: ptr(false), Approvers: []Approver{{Name: "alice", PublicKey: "k"}}},
		},
	}, {
		name: "kinds are not guessed; unknown source kind gets no approval default",
		in: VectorPromotionConfigSpec{
			Source: SourceReference{Kind: "stage", Name: "dev", Landscape: "dev"},
			Target: StageReference{Name: "test", Landscape: "test"},
		},
		want: VectorPromotionConfigSpec{
			Source:             SourceReference{Kind: "stage", Name: "dev", Landscape: "dev"},
			Target:             StageReference{Name: "test", Landscape: "test"},
			KeepLastPromotions: ptr[int32](10), TTLAfterFinished: day,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &VectorPromotionConfig{Spec: tt.in}
			c.Default()
			if diff := cmp.Diff(tt.want, c.Spec); diff != "" {
				t.Errorf("Default() spec (-want +got):\n%s", diff)
			}
			again := c.DeepCopy()
			again.Default()
			if diff := cmp.Diff(c, again); diff != "" {
				t.Errorf("Default() is not idempotent (-first +second):\n%s", diff)
			}
		})
	}
}

func TestVectorPromotionConfigAccessors(t *testing.T) {
	type accessors struct {
		RequireApproval    bool
		KeepLastPromotions int
		TTLAfterFinished   time.Duration
	}
	tests := []struct {
		name string
		spec VectorPromotionConfigSpec
		want accessors
	}{{
		name: "template source, nothing set",
		spec: VectorPromotionConfigSpec{Source: SourceReference{Kind: VectorTemplateKind}},
		want: accessors{RequireApproval: false, KeepLastPromotions: 10, TTLAfterFinished: 24 * time.Hour},
	}, {
		name: "stage source, nothing set",
		spec: VectorPromotionConfigSpec{Source: SourceReference{Kind: StageKind}},
		want: accessors{RequireApproval: true, KeepLastPromotions: 10, TTLAfterFinished: 24 * time.Hour},
	}, {
		name: "approval section without required falls back to the kind",
		spec: VectorPromotionConfigSpec{Source: SourceReference{Kind: StageKind}, Approval: &ApprovalPolicy{}},
		want: accessors{RequireApproval: true, KeepLastPromotions: 10, TTLAfterFinished: 24 * time.Hour},
	}, {
		name: "unknown source kind requires approval",
		spec: VectorPromotionConfigSpec{Source: SourceReference{Kind: "Vector"}},
		want: accessors{RequireApproval: true, KeepLastPromotions: 10, TTLAfterFinished: 24 * time.Hour},
	}, {
		name: "explicit values win",
		spec: VectorPromotionConfigSpec{
			Source:             SourceReference{Kind: VectorTemplateKind},
			Approval:           &ApprovalPolicy{Required: ptr(true)},
			KeepLastPromotions: ptr[int32](20),
			TTLAfterFinished:   &metav1.Duration{Duration: time.Hour},
		},
		want: accessors{RequireApproval: true, KeepLastPromotions: 20, TTLAfterFinished: time.Hour},
	}, {
		name: "stage source with approval turned off",
		spec: VectorPromotionConfigSpec{Source: SourceReference{Kind: StageKind}, Approval: &ApprovalPolicy{Required: ptr(false)}},
		want: accessors{RequireApproval: false, KeepLastPromotions: 10, TTLAfterFinished: 24 * time.Hour},
	}, {
		name: "zero is kept, not defaulted",
		spec: VectorPromotionConfigSpec{
			Source:             SourceReference{Kind: VectorTemplateKind},
			KeepLastPromotions: ptr[int32](0),
			TTLAfterFinished:   &metav1.Duration{},
		},
		want: accessors{RequireApproval: false, KeepLastPromotions: 0, TTLAfterFinished: 0},
	}, {
		name: "negatives that skipped validation read as zero",
		spec: VectorPromotionConfigSpec{
			Source:             SourceReference{Kind: VectorTemplateKind},
			KeepLastPromotions: ptr[int32](-3),
			TTLAfterFinished:   &metav1.Duration{Duration: -time.Minute},
		},
		want: accessors{RequireApproval: false, KeepLastPromotions: 0, TTLAfterFinished: 0},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &VectorPromotionConfig{Spec: tt.spec}
			got := accessors{c.RequireApproval(), c.KeepLastPromotions(), c.TTLAfterFinished()}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("accessors (-want +got):\n%s", diff)
			}
			// Defaulting must not change what the accessors answer.
			c.Default()
			got = accessors{c.RequireApproval(), c.KeepLastPromotions(), c.TTLAfterFinished()}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("accessors after Default() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVectorTemplateDefault(t *testing.T) {
	tests := []struct {
		name string
		in   *TemplateReference
		want *TemplateReference
	}{
		{name: "no base", in: nil, want: nil},
		{name: "base without kind", in: &TemplateReference{Name: "base"}, want: &TemplateReference{Kind: VectorTemplateKind, Name: "base"}},
		{name: "kind as written", in: &TemplateReference{Kind: "Stage", Name: "base"}, want: &TemplateReference{Kind: "Stage", Name: "base"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vt := &VectorTemplate{Spec: VectorTemplateSpec{Base: tt.in}}
			vt.Default()
			if diff := cmp.Diff(tt.want, vt.Spec.Base); diff != "" {
				t.Errorf("Default() base (-want +got):\n%s", diff)
			}
		})
	}
}

// The other kinds have nothing to default: Default must leave them untouched.
func TestDefaultLeavesOtherKindsAlone(t *testing.T) {
	landscape := &Landscape{Spec: LandscapeSpec{Repository: &RepositoryRef{URL: "https://example.com/r.git"}}}
	stage := &Stage{Spec: StageSpec{Landscape: "dev"}}
	usage := &StageVersionUsage{Spec: StageVersionUsageSpec{Reason: TargetUsageReason}}
	objects := []interface {
		Default()
	}{landscape.DeepCopy(), stage.DeepCopy(), usage.DeepCopy()}
	for _, o := range objects {
		o.Default()
	}
	want := []any{landscape, stage, usage}
	got := []any{objects[0], objects[1], objects[2]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Default() changed an object (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }
