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

// VectorAnnotation is the overlay annotation that names the vector a stage
// runs, as `<template>:<version>`.
const VectorAnnotation = "vectorflow.dev/vector"
