package v1alpha1

import "testing"

func TestShortForms(t *testing.T) {
	for in, want := range map[string]string{
		"sha256:0123456789abcdef0123": "sha256:0123456789ab",
		"sha256:0123456789ab":         "sha256:0123456789ab",
		"":                            "",
		"latest":                      "latest",
	} {
		if got := ShortDigest(in); got != want {
			t.Errorf("ShortDigest(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"0123456789abcdef0123456789abcdef01234567": "0123456789ab",
		"abc": "abc",
	} {
		if got := ShortCommit(in); got != want {
			t.Errorf("ShortCommit(%q) = %q, want %q", in, got, want)
		}
	}
}
