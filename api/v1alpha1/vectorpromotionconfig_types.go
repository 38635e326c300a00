package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of a VectorPromotionConfig.
const (
	DefaultKeepLastPromotions = 10
	DefaultTTLAfterFinished   = 24 * 60 * 60 // seconds
)

// VectorPromotionConfigSpec connects a source of vectors to a target stage.
type VectorPromotionConfigSpec struct {
	// Source is where vectors come from: a VectorTemplate's latest vector or
	// the vector a Stage currently runs.
	Source SourceReference `json:"source"`

	// Target is the Stage the vector is promoted to.
	Target StageReference `json:"target"`

	// TTLAfterFinished is how long a finished promotion is kept, unless it
	// is one of the newest KeepLastPromotions. Default 24h.
	// +optional
	TTLAfterFinished *metav1.Duration `json:"ttlAfterFinished,omitempty"`

	// KeepLastPromotions is how many of the newest finished promotions (by
	// sequence) are kept whatever their age, so an aggressive TTL cannot
	// erase the audit trail; older finished ones go once their TTL has
	// passed. Default 10.
	// +optional
	KeepLastPromotions *int32 `json:"keepLastPromotions,omitempty"`

	// Approval says whether promotions wait for an approval and whose.
	// +optional
	Approval *ApprovalPolicy `json:"approval,omitempty"`

	// Constraints bound the component versions the config promotes: a
	// source vector that breaks one makes no candidate.
	// +optional
	Constraints []VersionConstraint `json:"constraints,omitempty"`

	// ProtectedKinds are the kinds whose removal from the target needs an
	// approval even when the config is automatic. Default
	// CustomResourceDefinition, Namespace and PersistentVolumeClaim; an
	// empty list protects nothing.
	// +optional
	ProtectedKinds *[]string `json:"protectedKinds,omitempty"`

	// UpdateDelay is how long the source's vector must have been current,
	// without interruption, before a promotion of it is created.
	// +optional
	UpdateDelay *metav1.Duration `json:"updateDelay,omitempty"`
}

// SourceReference names a VectorTemplate, or a Stage within a Landscape.
type SourceReference struct {
	// Kind is VectorTemplate or Stage.
	Kind string `json:"kind"`

	// Name of the VectorTemplate or Stage.
	Name string `json:"name"`

	// Landscape of the Stage; required for Stage, forbidden for VectorTemplate.
	// +optional
	Landscape string `json:"landscape,omitempty"`

	// Readiness says when a Stage source offers its vector: Assigned (its
	// overlay names it) or Active (it is deployed and healthy there). The
	// default is Active when the source stage has spec.deployment, else
	// Assigned. Forbidden for VectorTemplate.
	// +optional
	Readiness string `json:"readiness,omitempty"`
}

// VersionConstraint bounds one component's version, e.g. {component:
// service-a, version: "<2.0.0"}: a semver constraint as in templates.
type VersionConstraint struct {
	// Component is the component's name in the vector.
	Component string `json:"component"`

	// Version is a semver constraint (<2.0.0, 1.x, >=1.4 <1.6).
	Version string `json:"version"`
}

// DefaultProtectedKinds are the kinds whose removal needs an approval when
// a config does not say otherwise: losing one loses data.
func DefaultProtectedKinds() []string {
	return []string{"CustomResourceDefinition", "Namespace", "PersistentVolumeClaim"}
}

// Readiness values of SourceReference.
const (
	ReadinessAssigned = "Assigned"
	ReadinessActive   = "Active"
)

// StageReference names a Stage within a Landscape.
type StageReference struct {
	// Kind is Stage.
	Kind string `json:"kind"`

	// Name of the Stage.
	Name string `json:"name"`

	// Landscape the Stage lives in.
	Landscape string `json:"landscape"`
}

// ApprovalPolicy says who may approve a config's promotions.
type ApprovalPolicy struct {
	// Required overrides the default (true for Stage sources, false for
	// VectorTemplate sources).
	// +optional
	Required *bool `json:"required,omitempty"`

	// Approvers are the people whose signed approvals count.
	// +optional
	Approvers []Approver `json:"approvers,omitempty"`

	// MinApprovals is how many distinct Approvers must each sign an
	// approval of a promotion's vector before it runs (the four-eyes rule
	// at 2). Default 1; at most the number of Approvers. It counts signed
	// approvals only: an approving pull request review (PullRequest) is one
	// approval on its own, as the forge's branch protection decides.
	// +optional
	MinApprovals *int32 `json:"minApprovals,omitempty"`

	// PullRequest makes a review on the target repository's forge the
	// approval: each promotion that requires approval is pushed to
	// vectorflow/promote/<config>-<sequence> and opened as a pull request.
	// Signed approvals from Approvers still count as well.
	// +optional
	PullRequest *PullRequestApproval `json:"pullRequest,omitempty"`
}

// RequiredApprovals is spec.approval.minApprovals with its default, 1; a
// value below 1 (which Validate rejects) reads as 1, so a broken config never
// runs a promotion on fewer than one approval.
func (a *ApprovalPolicy) RequiredApprovals() int {
	if a == nil || a.MinApprovals == nil || *a.MinApprovals < 1 {
		return 1
	}
	return int(*a.MinApprovals)
}

// Forges a PullRequestApproval can name.
const (
	ForgeGitea  = "gitea"
	ForgeGitHub = "github"
	ForgeGitLab = "gitlab"
)

// Who merges an approved promotion's pull request.
const (
	// PullRequestMergeForge: people merge under the forge's own branch
	// protection; the merge is the approval and the execution.
	PullRequestMergeForge = "forge"
	// PullRequestMergeVectorflow: an approving review that counts approves;
	// vectorflow writes the signed promotion commit to the target itself
	// and closes the pull request.
	PullRequestMergeVectorflow = "vectorflow"
)

// PullRequestApproval configures approval through forge pull requests.
type PullRequestApproval struct {
	// Forge is gitea, github or gitlab.
	Forge string `json:"forge"`

	// APIURL is the root of the forge's REST API (https://host/api/v1 for
	// Gitea); required for gitea, defaulted for github and gitlab.
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// TokenEnv names the environment variable holding the forge token, and
	// TokenFile a file holding it; exactly one of them or GitHubApp is set.
	// The token is read by the controller and never written to statuses or
	// logs.
	// +optional
	TokenEnv string `json:"tokenEnv,omitempty"`
	// +optional
	TokenFile string `json:"tokenFile,omitempty"`

	// GitHubApp authenticates as a GitHub App installation instead of a
	// token (forge github only); set it instead of tokenEnv and tokenFile.
	// +optional
	GitHubApp *GitHubAppAuth `json:"githubApp,omitempty"`

	// Labels are put on every promotion pull request.
	// +optional
	Labels []string `json:"labels,omitempty"`

	// Merge is forge (default) or vectorflow.
	// +optional
	Merge string `json:"merge,omitempty"`
}

// MergeMode is Merge with its default.
func (p *PullRequestApproval) MergeMode() string {
	if p.Merge == "" {
		return PullRequestMergeForge
	}
	return p.Merge
}

// Approver is a named public key: a person trusted to approve, or a signer
// trusted to commit into a landscape.
type Approver struct {
	// Name is who the approver is, as the audit trail shows it.
	Name string `json:"name"`

	// PublicKey is an armored OpenPGP public key block or an SSH public key line.
	PublicKey string `json:"publicKey"`
}

// VectorPromotionConfigStatus is the config's aggregate view.
type VectorPromotionConfigStatus struct {
	// Sequence is the last promotion ordinal allocated; promotions are named
	// `<config>-<sequence>`.
	// +optional
	Sequence int64 `json:"sequence,omitempty"`

	// SourceVector is the vector the source offered when last observed, and
	// SourceVectorSince when it started to offer it (for updateDelay).
	// +optional
	SourceVector string `json:"sourceVector,omitempty"`
	// +optional
	SourceVectorSince *metav1.Time `json:"sourceVectorSince,omitempty"`

	// TargetVector is the vector the target stage's overlay named when last
	// observed. Drift is SourceVector differing from it; the Drift condition
	// says what the config does about it.
	// +optional
	TargetVector string `json:"targetVector,omitempty"`

	// PromotionHistory are the source vectors this config has tried to
	// promote, one record per finished execution (Succeeded or Failed),
	// newest first, at most MaxPromotionHistory. It outlives the promotions,
	// which ttlAfterFinished deletes, so a vector that failed is not retried
	// on its own and one a person reverted is not silently re-promoted.
	// +optional
	PromotionHistory []PromotionRecord `json:"promotionHistory,omitempty"`

	// LastPromotionConditions mirrors the conditions of the newest promotion.
	// +optional
	LastPromotionConditions []metav1.Condition `json:"lastPromotionConditions,omitempty"`

	// LastSuccessfulPromotionConditions mirrors the conditions of the newest
	// succeeded promotion.
	// +optional
	LastSuccessfulPromotionConditions []metav1.Condition `json:"lastSuccessfulPromotionConditions,omitempty"`

	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MaxPromotionHistory bounds status.promotionHistory: the oldest records
// beyond it are dropped.
const MaxPromotionHistory = 50

// PromotionRecord is one finished execution of a config's promotion.
type PromotionRecord struct {
	// Vector is the source vector the promotion wrote (or tried to).
	Vector string `json:"vector"`
	// Promotion is the VectorPromotion's name, Sequence its sequence.
	Promotion string `json:"promotion"`
	Sequence  int64  `json:"sequence"`
	// State is Succeeded or Failed, Reason the Succeeded condition's reason
	// (PromotionSucceeded, PromotionFailed, PromotionTimedOut, ...).
	State  PromotionState `json:"state"`
	Reason string         `json:"reason,omitempty"`
	// FinishedAt is when the promotion finished.
	FinishedAt metav1.Time `json:"finishedAt"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vpc,categories=vectorflow
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.name`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Seq",type=integer,JSONPath=`.status.sequence`
// +kubebuilder:printcolumn:name="Source Vector",type=string,JSONPath=`.status.sourceVector`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1

// VectorPromotionConfig moves vectors from a source to a target stage.
type VectorPromotionConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VectorPromotionConfigSpec   `json:"spec,omitempty"`
	Status VectorPromotionConfigStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *VectorPromotionConfig) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *VectorPromotionConfig) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// VectorPromotionConfigList is a list of VectorPromotionConfigs.
type VectorPromotionConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VectorPromotionConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VectorPromotionConfig{}, &VectorPromotionConfigList{})
}
