package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LandscapeSpec says where a group of stages lives. Every field is optional:
// the default is the config repository, its branch, and the repository root.
// A Landscape in another repository is how a separate, stricter production
// repository is modelled.
type LandscapeSpec struct {
	// Repository holding the stages' overlays. Empty means the config repository.
	// +optional
	Repository *RepositoryRef `json:"repository,omitempty"`

	// Path is the root, relative to the repository, under which stage paths resolve.
	// +optional
	Path string `json:"path,omitempty"`

	// Signers are the keys trusted to sign commits into this landscape's
	// overlays: the controller's signing key, and people who commit by
	// hand. `vectorflow audit` marks commits signed by one of them (or by an
	// approver) as verified.
	// +optional
	Signers []Approver `json:"signers,omitempty"`
}

// RepositoryRef names a Git repository and a branch of it.
type RepositoryRef struct {
	// URL of the repository: https://, ssh://, file:// or a local path.
	URL string `json:"url"`

	// Branch to read and write. Empty means the config repository's branch.
	// +optional
	Branch string `json:"branch,omitempty"`
}

// LandscapeStatus is what vectorflow observed about a Landscape.
type LandscapeStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ls,categories=vectorflow
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.repository.url`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.repository.branch`
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Landscape is a place where stages live: a repository, a branch and a root.
type Landscape struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LandscapeSpec   `json:"spec,omitempty"`
	Status LandscapeStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Landscape) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Landscape) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// LandscapeList is a list of Landscapes.
type LandscapeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Landscape `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Landscape{}, &LandscapeList{})
}
