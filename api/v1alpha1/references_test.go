package v1alpha1

import "testing"

// TestReferenceText: the trailer form is a contract (gitwriter's ratchet
// and `git log` readers parse it), the prose form is what messages say.
func TestReferenceText(t *testing.T) {
	for _, tc := range []struct {
		ref            SourceReference
		wantRef, wantD string
	}{
		{SourceReference{Kind: StageKind, Name: "dev", Landscape: "eu"}, "Stage/eu/dev", "Stage dev in Landscape eu"},
		{SourceReference{Kind: VectorTemplateKind, Name: "acme"}, "VectorTemplate/acme", "VectorTemplate acme"},
	} {
		if got := tc.ref.Ref(); got != tc.wantRef {
			t.Errorf("%+v.Ref() = %q, want %q", tc.ref, got, tc.wantRef)
		}
		if got := tc.ref.Describe(); got != tc.wantD {
			t.Errorf("%+v.Describe() = %q, want %q", tc.ref, got, tc.wantD)
		}
	}
	target := StageReference{Kind: StageKind, Name: "prod", Landscape: "us"}
	if got := target.Ref(); got != "Stage/us/prod" {
		t.Errorf("target Ref() = %q", got)
	}
	if got := target.Describe(); got != "Stage prod in Landscape us" {
		t.Errorf("target Describe() = %q", got)
	}
}
