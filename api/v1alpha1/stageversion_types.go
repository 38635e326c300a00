package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels that select StageVersions.
const (
	StageNameLabel = "vectorflow.dev/stage-name"
	VectorLabel    = "vectorflow.dev/vector"
)

// StageVersionSpec is one rendered version of a stage: the stage with a vector.
type StageVersionSpec struct {
	// Stage is the name of the Stage.
	Stage string `json:"stage"`

	// Landscape of the Stage.
	Landscape string `json:"landscape"`

	// Vector the stage ran in this version, `<template>:<version>`.
	Vector string `json:"vector"`

	// Commit of the overlay's repository this version was rendered at.
	// +optional
	Commit string `json:"commit,omitempty"`

	// RenderDigest is the sha256 of the overlay's rendered manifests.
	// +optional
	RenderDigest string `json:"renderDigest,omitempty"`

	// Inventory is the objects the render holds.
	// +optional
	Inventory []InventoryEntry `json:"inventory,omitempty"`
}

// InventoryEntry is one object of a rendered stage.
type InventoryEntry struct {
	// Group of the object's apiVersion; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// StageVersionStatus tells whether the version can serve.
type StageVersionStatus struct {
	// Revision is the newest commit of the stage's repository a deployer
	// reported on with this version's vector; it decides Ready, so an older
	// revision's report arriving late never overrides a newer one.
	// +optional
	Revision string `json:"revision,omitempty"`

	// ReportedAt is when the deployer made the report that last changed
	// Ready at Revision (the report's own time): a report of Revision made
	// before it, arriving late or sent again, changes nothing.
	// +optional
	ReportedAt *metav1.Time `json:"reportedAt,omitempty"`

	// Conditions: Ready is True once the version was reported applied and
	// healthy (or, for a stage without spec.deployment, once its overlay
	// names it), False with the deployer's reason when its newest report
	// failed, Unknown while no deployer has reported on it.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition reasons of a StageVersion's Ready condition and of a Stage's
// Active condition.
const (
	// ActiveCondition is a Stage's: True while the newest revision a
	// deployer reported on is applied and healthy.
	ActiveCondition = "Active"
	// DeployedHealthyReason: a deployer reported the revision applied and
	// healthy.
	DeployedHealthyReason = "DeployedHealthy"
	// NoDeploymentReason: the stage has no spec.deployment, so what its
	// overlay names counts as active.
	NoDeploymentReason = "NoDeployment"
	// AwaitingDeploymentReason: no deployer has reported on it yet.
	AwaitingDeploymentReason = "AwaitingDeployment"
	// DeploymentFailedReason stands in for a deployer that failed without
	// saying why; otherwise the deployer's own reason (HealthCheckFailed,
	// ReconciliationFailed, ...) is used.
	DeploymentFailedReason = "DeploymentFailed"
)

// Condition types and reasons of a StageVersionUsage (ADR-0013).
const (
	// StageVersionReadyCondition is True when every StageVersion the usage
	// references exists and is Ready.
	StageVersionReadyCondition = "StageVersionReady"
	// StageVersionNotFoundCondition has negative polarity: present, and
	// True, only while the usage references no existing StageVersion.
	StageVersionNotFoundCondition = "StageVersionNotFound"

	StageVersionReadyReason    = "StageVersionReady"
	StageVersionNotReadyReason = "StageVersionNotReady"
	StageVersionNotFoundReason = "StageVersionNotFound"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sv,categories=vectorflow
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.spec.stage`
// +kubebuilder:printcolumn:name="Landscape",type=string,JSONPath=`.spec.landscape`
// +kubebuilder:printcolumn:name="Vector",type=string,JSONPath=`.spec.vector`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.spec.commit`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// StageVersion is a stage rendered with one vector. It is deleted only when no
// StageVersionUsage references it.
type StageVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StageVersionSpec   `json:"spec,omitempty"`
	Status StageVersionStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *StageVersion) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *StageVersion) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// StageVersionList is a list of StageVersions.
type StageVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StageVersion `json:"items"`
}

// Usage reasons of the two usages the stage itself keeps (ADR-0013).
const (
	TargetUsageReason = "target"
	ActiveUsageReason = "active"
)

// StageVersionUsageSpec says that something uses a StageVersion. Exactly one
// of StageVersionRef and StageVersionSelector is set.
type StageVersionUsageSpec struct {
	// Reason is why the StageVersion is in use ("target", "active", or a
	// human-readable reason for other users).
	Reason string `json:"reason"`

	// StageVersionRef names the StageVersion directly.
	// +optional
	StageVersionRef *LocalObjectReference `json:"stageVersionRef,omitempty"`

	// StageVersionSelector selects StageVersions by label.
	// +optional
	StageVersionSelector *metav1.LabelSelector `json:"stageVersionSelector,omitempty"`
}

// LocalObjectReference names an object of the same repository.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// StageVersionUsageStatus tells whether the used StageVersion exists.
type StageVersionUsageStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=svu,categories=vectorflow
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Stage Version",type=string,JSONPath=`.spec.stageVersionRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// StageVersionUsage keeps a StageVersion from being deleted.
type StageVersionUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StageVersionUsageSpec   `json:"spec,omitempty"`
	Status StageVersionUsageStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *StageVersionUsage) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *StageVersionUsage) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// StageVersionUsageList is a list of StageVersionUsages.
type StageVersionUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StageVersionUsage `json:"items"`
}

func init() {
	SchemeBuilder.Register(&StageVersion{}, &StageVersionList{}, &StageVersionUsage{}, &StageVersionUsageList{})
}
