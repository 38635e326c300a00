package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StageSpec places a stage: a Kustomize overlay inside a Landscape. The
// stage's current vector is read from that overlay, never from a side file.
type StageSpec struct {
	// Landscape is the name of the Landscape the stage lives in.
	Landscape string `json:"landscape"`

	// Path of the Kustomize overlay, relative to the landscape root.
	Path string `json:"path"`

	// Deployment names what deploys the overlay (a Flux Kustomization or an
	// Argo CD Application). Its reports decide the stage's active vector;
	// without it, what the overlay names counts as active.
	// +optional
	Deployment *DeploymentReference `json:"deployment,omitempty"`

	// MaxRevisions is how many StageVersions of the stage are kept for
	// rollback; unused ones go oldest first. Default 10.
	// +optional
	MaxRevisions *int32 `json:"maxRevisions,omitempty"`
}

// Kinds of deployers a Stage can name in spec.deployment.
const (
	DeploymentKindKustomization = "Kustomization" // Flux kustomize.toolkit.fluxcd.io
	DeploymentKindApplication   = "Application"   // Argo CD argoproj.io
)

// DeploymentReference names the object that deploys a stage's overlay.
type DeploymentReference struct {
	// Kind is Kustomization (Flux) or Application (Argo CD).
	Kind string `json:"kind"`

	// Name of the Kustomization or Application.
	Name string `json:"name"`

	// Namespace of the Kustomization or Application.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// CommitStatus reads the deployer's reports from the commit statuses it
	// posts on the landscape repository's forge, for deployers that cannot
	// reach vectorflow's webhooks.
	// +optional
	CommitStatus *CommitStatusSource `json:"commitStatus,omitempty"`
}

// StageStatus is what vectorflow observed in the stage's overlay.
type StageStatus struct {
	// Vector is the vector the overlay names, `<template>:<version>`.
	// +optional
	Vector string `json:"vector,omitempty"`

	// VectorSince is when the overlay started to name Vector, as far as
	// vectorflow observed it. It drives spec.updateDelay of configs whose
	// source is this stage.
	// +optional
	VectorSince *metav1.Time `json:"vectorSince,omitempty"`

	// Commit is the commit of the landscape repository the status was read at.
	// +optional
	Commit string `json:"commit,omitempty"`

	// ActiveVector is the vector deployed and healthy: the one the overlay
	// named at ActiveRevision, the newest revision the deployer reported
	// applied and healthy (or, without spec.deployment, Vector).
	// +optional
	ActiveVector string `json:"activeVector,omitempty"`

	// ActiveRevision is the commit the deployer reported applied and healthy.
	// +optional
	ActiveRevision string `json:"activeRevision,omitempty"`

	// ActiveSince is when ActiveVector became active without interruption.
	// It drives spec.updateDelay of configs whose source is this stage.
	// +optional
	ActiveSince *metav1.Time `json:"activeSince,omitempty"`

	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=st,categories=vectorflow
// +kubebuilder:printcolumn:name="Landscape",type=string,JSONPath=`.spec.landscape`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`
// +kubebuilder:printcolumn:name="Vector",type=string,JSONPath=`.status.vector`
// +kubebuilder:printcolumn:name="Since",type=date,JSONPath=`.status.vectorSince`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.activeVector`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Stage is a deployment target: one Kustomize overlay that Flux or Argo CD deploys.
type Stage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StageSpec   `json:"spec,omitempty"`
	Status StageStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Stage) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Stage) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// StageList is a list of Stages.
type StageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Stage `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Stage{}, &StageList{})
}
