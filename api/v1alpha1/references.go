package v1alpha1

// The text forms of a promotion's source and target. Ref is the form of the
// Vectorflow-Source and Vectorflow-Target commit trailers, a contract that
// `git log` readers and the ratchet parse; Describe is the form of condition
// messages and errors, which people read. Both are made for every config
// in every decision, so they are concatenated, not formatted.

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
	return s.Kind + " " + s.Name
}

func (s SourceReference) stage() StageReference {
	return StageReference{Kind: s.Kind, Name: s.Name, Landscape: s.Landscape}
}

// Ref is the trailer form: `Stage/<landscape>/<name>`.
func (t StageReference) Ref() string {
	return "Stage/" + t.Landscape + "/" + t.Name
}

// Describe is the prose form: "Stage <name> in Landscape <landscape>".
func (t StageReference) Describe() string {
	return "Stage " + t.Name + " in Landscape " + t.Landscape
}
