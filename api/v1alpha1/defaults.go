package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default fills a VectorPromotionConfig's optional fields with the values the
// engine would assume, so a stored or printed config says what it does:
// keepLastPromotions 10, ttlAfterFinished 24h, and approval.required by source
// kind (true for a Stage, false for a VectorTemplate). Kinds are left as
// written: guessing one would turn a typo into a different promotion.
func (in *VectorPromotionConfig) Default() {
	if in.Spec.KeepLastPromotions == nil {
		keep := int32(DefaultKeepLastPromotions)
		in.Spec.KeepLastPromotions = &keep
	}
	if in.Spec.TTLAfterFinished == nil {
		in.Spec.TTLAfterFinished = &metav1.Duration{Duration: defaultTTLAfterFinished}
	}
	required, known := approvalRequiredByDefault(in.Spec.Source.Kind)
	if !known {
		// An unknown source kind fails validation; defaulting approval for it
		// would only hide which default applies once the kind is fixed.
		return
	}
	if in.Spec.Approval == nil {
		in.Spec.Approval = &ApprovalPolicy{}
	}
	if in.Spec.Approval.Required == nil {
		in.Spec.Approval.Required = &required
	}
}

// RequireApproval tells whether promotions of this config wait for an
// approval: spec.approval.required when set, otherwise true for Stage sources
// (a human gates stage-to-stage moves) and false for VectorTemplate sources
// (new vectors flow to the first stage on their own). A source kind that fails
// validation requires approval, so a broken config never promotes unattended.
func (in *VectorPromotionConfig) RequireApproval() bool {
	if in.Spec.Approval != nil && in.Spec.Approval.Required != nil {
		return *in.Spec.Approval.Required
	}
	required, known := approvalRequiredByDefault(in.Spec.Source.Kind)
	return required || !known
}

// KeepLastPromotions is how many finished promotions the config keeps:
// spec.keepLastPromotions, default 10. Validate rejects negative counts; one
// that slipped through reads as 0 so callers can slice with it safely.
func (in *VectorPromotionConfig) KeepLastPromotions() int {
	if in.Spec.KeepLastPromotions == nil {
		return DefaultKeepLastPromotions
	}
	return max(int(*in.Spec.KeepLastPromotions), 0)
}

// TTLAfterFinished is how long a finished promotion is kept:
// spec.ttlAfterFinished, default 24h. A negative TTL (rejected by Validate)
// reads as 0: expire at once, never "expired before it finished".
func (in *VectorPromotionConfig) TTLAfterFinished() time.Duration {
	if in.Spec.TTLAfterFinished == nil {
		return defaultTTLAfterFinished
	}
	return max(in.Spec.TTLAfterFinished.Duration, 0)
}

// Default sets spec.base.kind to VectorTemplate when a base is named without
// a kind, the only kind a base can be.
func (in *VectorTemplate) Default() {
	if in.Spec.Base != nil && in.Spec.Base.Kind == "" {
		in.Spec.Base.Kind = VectorTemplateKind
	}
}

// Default leaves a Landscape as written: its empty fields mean "the config
// repository, its branch, its root", which only the engine can resolve.
func (in *Landscape) Default() {}

// Default leaves a Stage as written: landscape and path have no sensible default.
func (in *Stage) Default() {}

// Default leaves a StageVersionUsage as written: which StageVersion it holds
// and why are the writer's to say.
func (in *StageVersionUsage) Default() {}

const defaultTTLAfterFinished = DefaultTTLAfterFinished * time.Second

// approvalRequiredByDefault is the approval default for a source kind, and
// whether the kind is one a config may use.
func approvalRequiredByDefault(sourceKind string) (required, known bool) {
	switch sourceKind {
	case StageKind:
		return true, true
	case VectorTemplateKind:
		return false, true
	default:
		return false, false
	}
}
