package v1alpha1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VectorTemplateSpec says how a vector is assembled: a base template's
// components, overridden by this template's own.
type VectorTemplateSpec struct {
	// Base is another VectorTemplate whose components this one starts from.
	// +optional
	Base *TemplateReference `json:"base,omitempty"`

	// Components are the component versions of the vector. A component of the
	// same name in the base is replaced.
	// +optional
	Components []ComponentSpec `json:"components,omitempty"`

	// UploadTarget is an OCI repository (oci://host/path) that each assembled
	// vector is pushed to as a small artifact tagged with its version.
	// +optional
	UploadTarget string `json:"uploadTarget,omitempty"`
}

// TemplateReference names a VectorTemplate in the same repository.
type TemplateReference struct {
	// Kind is VectorTemplate; empty means VectorTemplate.
	// +optional
	Kind string `json:"kind,omitempty"`

	// Name of the VectorTemplate.
	Name string `json:"name"`
}

// ComponentSpec is one component of a vector template.
type ComponentSpec struct {
	// Name of the component; it is also the image name the overlay's
	// `images:` entry matches, unless Image says otherwise.
	Name string `json:"name"`

	// Image repository the component's versions come from (e.g.
	// ghcr.io/acme/service-a). Empty means Name.
	// +optional
	Image string `json:"image,omitempty"`

	// Version is an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x)
	// resolved against the registry, or a digest (sha256:...). With an
	// alphabetical or numerical Policy it may be empty.
	// +optional
	Version string `json:"version,omitempty"`

	// Policy picks the newest of the registry's tags, as Flux's ImagePolicy
	// does: semver (the default for a range), alphabetical or numerical.
	// +optional
	Policy string `json:"policy,omitempty"`

	// FilterTags narrows the tags a Policy considers.
	// +optional
	FilterTags *TagFilter `json:"filterTags,omitempty"`

	// Order is asc (the default: the last tag in ascending order, the
	// newest, wins) or desc.
	// +optional
	Order string `json:"order,omitempty"`

	// SteppingStones are releases of the component (exact semver versions)
	// that every stage must run before it moves past them, upwards or
	// downwards: a release that adds what a later one requires.
	// +optional
	SteppingStones []string `json:"steppingStones,omitempty"`
}

// TagFilter is Flux ImagePolicy's filterTags: a regular expression tags must
// match, and optionally the part of the tag ($1, $name) to order by.
type TagFilter struct {
	Pattern string `json:"pattern"`
	// +optional
	Extract string `json:"extract,omitempty"`
}

// Policies of a component version.
const (
	PolicySemver       = "semver"
	PolicyAlphabetical = "alphabetical"
	PolicyNumerical    = "numerical"
)

// VectorTemplateStatus is the template's assembly result.
type VectorTemplateStatus struct {
	// LatestVector is the newest vector assembled from this template,
	// `<template>:<version>`.
	// +optional
	LatestVector string `json:"latestVector,omitempty"`

	// LatestVectorSince is when LatestVector was assembled.
	// +optional
	LatestVectorSince *metav1.Time `json:"latestVectorSince,omitempty"`

	// ObservedGeneration is the generation of the spec the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vt,categories=vectorflow
// +kubebuilder:printcolumn:name="Latest Vector",type=string,JSONPath=`.status.latestVector`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// VectorTemplate assembles vectors: immutable sets of component versions.
type VectorTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VectorTemplateSpec   `json:"spec,omitempty"`
	Status VectorTemplateStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *VectorTemplate) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *VectorTemplate) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// VectorTemplateList is a list of VectorTemplates.
type VectorTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VectorTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VectorTemplate{}, &VectorTemplateList{})
}

// IsVersionRange tells a semver range (">=1.2.0 <2.0.0", "1.4.x", "^1.2")
// in a component's version from an exact tag ("1.20", "v1.2.3", "latest") or
// a digest: a range has an operator, a space, or an x or * part. A bare "1.4"
// is the tag 1.4.
func IsVersionRange(version string) bool {
	if strings.HasPrefix(version, "sha256:") {
		return false
	}
	if strings.ContainsAny(version, "<>=~^*|, ") {
		return true
	}
	for part := range strings.SplitSeq(version, ".") {
		if part == "x" || part == "X" {
			return true
		}
	}
	return false
}
