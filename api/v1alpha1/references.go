package v1alpha1

import "fmt"

// The text forms of a promotion's source and target. Ref is the form of the
// Vectorflow-Source and Vectorflow-Target commit trailers, a contract that
// `git log` readers and the ratchet parse; Describe is the form of condition
// messages and errors, which people read.

// Ref is the trailer form: `Stage/<landscape>/<name>` or
// `VectorTemplate/<name>`.
func (s SourceReference) Ref() string {
	if s.Kind == StageKind {
		return s.stage().Ref()
	}
	return s.Kind + "/" + s.Name
}

// Describe is the prose form: "Stage <name> in Landscape <landscape>" or
// "VectorTemplate <name>".
func (s SourceReference) Describe() string {
	if s.Kind == StageKind {
		return s.stage().Describe()
	}
	return fmt.Sprintf("%s %s", s.Kind, s.Name)
}

func (s SourceReference) stage() StageReference {
	return StageReference{Kind: s.Kind, Name: s.Name, Landscape: s.Landscape}
}

// Ref is the trailer form: `Stage/<landscape>/<name>`.
func (t StageReference) Ref() string {
	return fmt.Sprintf("Stage/%s/%s", t.Landscape, t.Name)
}

// Describe is the prose form: "Stage <name> in Landscape <landscape>".
func (t StageReference) Describe() string {
	return fmt.Sprintf("Stage %s in Landscape %s", t.Name, t.Landscape)
}
