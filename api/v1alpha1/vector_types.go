package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VectorSpec is an assembled vector. It never changes once written.
type VectorSpec struct {
	// Template is the name of the VectorTemplate the vector was assembled from.
	Template string `json:"template"`

	// Version is the concrete version, YYYY.M.D-HHMMSSmmmZ (UTC).
	Version string `json:"version"`

	// Components are the resolved component versions, sorted by name.
	Components []VectorComponent `json:"components"`

	// Digest is the content digest (sha256:...) over the sorted components;
	// the same components always yield the same digest.
	Digest string `json:"digest"`
}

// VectorComponent is one resolved component version.
type VectorComponent struct {
	// Name of the component; the overlay's images[].name unless Image is set.
	Name string `json:"name"`

	// Image repository the stages' containers use; when set, it is the
	// overlay's images[].name instead of Name (see ImageName).
	// +optional
	Image string `json:"image,omitempty"`

	// Tag of the image; the overlay's images[].newTag.
	// +optional
	Tag string `json:"tag,omitempty"`

	// Digest of the image (sha256:...); the overlay's images[].digest.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// ImageName is the image the component's containers use without tag or
// digest: Image when set, else Name. It is the name of the overlay's images:
// entry for the component, which kustomize matches against each container's
// image with its tag and digest taken off.
func (c VectorComponent) ImageName() string {
	if c.Image != "" {
		return c.Image
	}
	return c.Name
}

// Version is the component's tag and digest as an image reference ends
// with them: tag, @digest or tag@digest.
func (c VectorComponent) Version() string {
	switch {
	case c.Digest == "":
		return c.Tag
	case c.Tag == "":
		return "@" + c.Digest
	}
	return c.Tag + "@" + c.Digest
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vec,categories=vectorflow
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.template`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.spec.digest`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Vector is an immutable, versioned set of component versions.
type Vector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VectorSpec `json:"spec,omitempty"`
}

// Ref is how stages, promotions and templates name the vector:
// `<template>:<version>`.
func (in *Vector) Ref() string { return VectorRef(in.Spec.Template, in.Spec.Version) }

// VectorRef joins a template name and a version into a vector reference.
func VectorRef(template, version string) string { return template + ":" + version }

// ParseVectorRef splits `<template>:<version>`.
func ParseVectorRef(ref string) (template, version string, err error) {
	template, version, ok := strings.Cut(ref, ":")
	if !ok || template == "" || version == "" {
		return "", "", fmt.Errorf("vector reference %q is not <template>:<version>", ref)
	}
	return template, version, nil
}

// +kubebuilder:object:root=true

// VectorList is a list of Vectors.
type VectorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Vector `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Vector{}, &VectorList{})
}
