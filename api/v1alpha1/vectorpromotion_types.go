package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a VectorPromotion. There are exactly two; the state is
// derived from them.
const (
	ApprovedCondition  = "Approved"
	SucceededCondition = "Succeeded"
)

// Reasons on a VectorPromotion's conditions.
const (
	WaitingForApprovalReason        = "WaitingForApproval"
	ApprovalNotRequiredReason       = "ApprovalNotRequired"
	ApprovedReason                  = "Approved"
	PromotionRunningReason          = "PromotionRunning"
	PromotionTargetUnresolvedReason = "PromotionTargetUnresolved"
	PromotionSupersededReason       = "PromotionSuperseded"
	PromotionTimedOutReason         = "PromotionTimedOut"
	PromotionFailedReason           = "PromotionFailed"
	// PromotionNoEffectReason: the edited overlay builds but does not run
	// every component of the vector at its version; nothing was pushed.
	PromotionNoEffectReason = "PromotionNoEffect"
	// OverlayBuildFailedReason: kustomize cannot build the edited overlay;
	// nothing was pushed.
	OverlayBuildFailedReason = "OverlayBuildFailed"
	PromotionSucceededReason = "PromotionSucceeded"
	// PromotionSupersededInTargetReason: the target branch's history
	// already holds a newer sequence of the promotion's config, so running
	// it would roll the stage back. The promotion is Superseded.
	PromotionSupersededInTargetReason = "SupersededInTarget"
	// PromotionIdentityReusedReason: the target branch's history holds a
	// commit of a promotion with the same name and another vector. The
	// promotion is Failed; nothing was written.
	PromotionIdentityReusedReason = "PromotionIdentityReused"
)

// PromotionState is the display state of a promotion, derived from its
// Approved and Succeeded conditions on every write.
type PromotionState string

const (
	PromotionWaiting    PromotionState = "Waiting"
	PromotionReady      PromotionState = "Ready"
	PromotionInProgress PromotionState = "InProgress"
	PromotionBlocked    PromotionState = "Blocked"
	PromotionSucceeded  PromotionState = "Succeeded"
	PromotionFailed     PromotionState = "Failed"
	PromotionSuperseded PromotionState = "Superseded"
)

// VectorPromotionSpec is the immutable snapshot taken from the config when the
// promotion was created. Execution reads only this, never the config, so an
// approval approves exactly this vector for exactly this target.
type VectorPromotionSpec struct {
	// VectorPromotionConfigName is the config that created the promotion.
	VectorPromotionConfigName string `json:"vectorPromotionConfigName"`

	// Source is the config's source at creation time.
	Source SourceReference `json:"source"`

	// Target is the config's target at creation time.
	Target StageReference `json:"target"`

	// Vector is the source's vector at creation time, `<template>:<version>`.
	Vector string `json:"vector"`

	// TTLAfterFinished is copied from the config.
	TTLAfterFinished metav1.Duration `json:"ttlAfterFinished"`

	// RequireApproval is copied from the config (defaulted by source kind).
	RequireApproval bool `json:"requireApproval"`

	// Sequence is the monotonic ordinal allocated by the config.
	Sequence int64 `json:"sequence"`

	// Forced lets the promotion take a component down across a stepping
	// stone (vectorflow promote --force); the commit says so
	// (Vectorflow-Forced: true).
	// +optional
	Forced bool `json:"forced,omitempty"`

	// Rollback marks a promotion made by vectorflow rollback: it runs
	// while its stage is held, and the commit says so
	// (Vectorflow-Rollback: true).
	// +optional
	Rollback bool `json:"rollback,omitempty"`

	// Requested marks a promotion a signed request made (vectorflow
	// promote, rollback) rather than drift: a person asked for it, so a
	// hold on the stage does not stop it.
	// +optional
	Requested bool `json:"requested,omitempty"`
}

// VectorPromotionStatus holds the two conditions and what follows from them.
type VectorPromotionStatus struct {
	// State is derived from the conditions, for display.
	// +optional
	State PromotionState `json:"state,omitempty"`

	// Conditions are Approved and Succeeded, the source of truth.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Approval is the approval that completed the count: with one approval
	// required, the only one.
	// +optional
	Approval *ApprovalRecord `json:"approval,omitempty"`

	// Approvals are the distinct approvers whose signed approvals of the
	// promotion's vector count, oldest first: while Waiting, those given so
	// far; once Approved, those the promotion commit's Approved-by trailers
	// name.
	// +optional
	Approvals []ApprovalRecord `json:"approvals,omitempty"`

	// PromotedStageRef is the Stage a successful promotion wrote to.
	// +optional
	PromotedStageRef *StageReference `json:"promotedStageRef,omitempty"`

	// Commit is the promotion commit on the target branch.
	// +optional
	Commit string `json:"commit,omitempty"`

	// PullRequest is the forge pull request the promotion was opened as,
	// when its config approves through pull requests.
	// +optional
	PullRequest *PullRequestStatus `json:"pullRequest,omitempty"`

	// RemovesProtected are the objects of protected kinds (the config's
	// spec.protectedKinds) that promoting the vector removes from the
	// stage: such a promotion waits for an approval even when its config
	// is automatic, and its commit lists them.
	// +optional
	RemovesProtected []InventoryEntry `json:"removesProtected,omitempty"`
}

// PullRequestStatus is a promotion's pull request as last observed.
type PullRequestStatus struct {
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"`
	// Branch is the vectorflow/promote/ branch the pull request is opened from.
	Branch string `json:"branch,omitempty"`
	// HeadSHA is the promotion commit vectorflow pushed to Branch; a review
	// counts only when given on it.
	HeadSHA string `json:"headSHA,omitempty"`
	// State is open, closed or merged.
	// +optional
	State string `json:"state,omitempty"`
}

// PullRequestStatus.State values (the forge package's words).
const (
	PullRequestOpen   = "open"
	PullRequestClosed = "closed"
	PullRequestMerged = "merged"
)

// ApprovalRecord is who approved a promotion and when.
type ApprovalRecord struct {
	ApprovedBy string      `json:"approvedBy"`
	ApprovedAt metav1.Time `json:"approvedAt"`
	// Commit is the state-branch commit, signed by the approver, that added
	// the approval; empty for a pull-request approval.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vp,categories=vectorflow
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.spec.vectorPromotionConfigName`
// +kubebuilder:printcolumn:name="Seq",type=integer,JSONPath=`.spec.sequence`
// +kubebuilder:printcolumn:name="Vector",type=string,JSONPath=`.spec.vector`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Approved By",type=string,JSONPath=`.status.approval.approvedBy`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// VectorPromotion is one snapshotted promotion of a vector to a stage.
type VectorPromotion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VectorPromotionSpec   `json:"spec,omitempty"`
	Status VectorPromotionStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *VectorPromotion) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *VectorPromotion) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// VectorPromotionList is a list of VectorPromotions.
type VectorPromotionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VectorPromotion `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VectorPromotion{}, &VectorPromotionList{})
}
