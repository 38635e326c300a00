// Package v1alpha1 holds the vectorflow.dev/v1alpha1 API: the objects users
// declare in their repository (Landscape, Stage, VectorTemplate,
// VectorPromotionConfig) and the runtime objects vectorflow keeps on its state
// branch (Vector, VectorPromotion, StageVersion, StageVersionUsage).
//
// +kubebuilder:object:generate=true
// +groupName=vectorflow.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every vectorflow object.
	GroupVersion = schema.GroupVersion{Group: "vectorflow.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the vectorflow kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the vectorflow kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// The kinds of the API, as written in the `kind:` field.
const (
	LandscapeKind             = "Landscape"
	StageKind                 = "Stage"
	VectorTemplateKind        = "VectorTemplate"
	VectorKind                = "Vector"
	VectorPromotionConfigKind = "VectorPromotionConfig"
	VectorPromotionKind       = "VectorPromotion"
	StageVersionKind          = "StageVersion"
	StageVersionUsageKind     = "StageVersionUsage"
)

// Annotations vectorflow keeps on a stage overlay's kustomization.yaml: the
// contract between the overlay and everything that reads it.
const (
	// VectorAnnotation names the vector a stage runs, as
	// `<template>:<version>`.
	VectorAnnotation = "vectorflow.dev/vector"
	// ComponentsAnnotation lists, comma-separated, the images entries
	// vectorflow wrote, so that it removes only its own entries, never one
	// a human added.
	ComponentsAnnotation = "vectorflow.dev/components"
)
