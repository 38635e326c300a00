package v1alpha1

import (
	"regexp"
	"strings"
	"testing"
)

// The grammars isOCITag and isSHA256Digest check, as the OCI distribution
// spec writes them.
var (
	ociTagGrammar       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	sha256DigestGrammar = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// grammarCases are strings at the edges of both grammars: every first and
// last byte class, the length limits, a line break, and bytes past ASCII.
func grammarCases() []string {
	cases := []string{"", "sha256:", "\n", "1.4.2\n", "1.4.2\nx", "é", "1.4.2é", "v1 ", " v1"}
	for _, first := range []string{"a", "Z", "0", "_", ".", "-", "/", ":", "@", "+", "~"} {
		for _, rest := range []string{"", "a", "1.4.2", "-rc.1", "_x", "a/b", "a:b", "A+b"} {
			cases = append(cases, first+rest)
		}
	}
	for _, n := range []int{126, 127, 128, 129} {
		cases = append(cases, "a"+strings.Repeat("b", n), "a"+strings.Repeat(".", n))
	}
	hex := strings.Repeat("0123456789abcdef", 4)
	cases = append(cases, "sha256:"+hex, "sha256:"+hex[1:], "sha256:"+hex+"0", "sha256:"+strings.ToUpper(hex),
		"sha256:"+hex[:63]+"g", "sha512:"+hex, "SHA256:"+hex, "sha256:"+hex+"\n")
	return cases
}

func TestTagAndDigestChecksFollowTheirGrammars(t *testing.T) {
	for _, v := range grammarCases() {
		if got, want := isOCITag(v), ociTagGrammar.MatchString(v); got != want {
			t.Errorf("isOCITag(%q) = %v, the tag grammar says %v", v, got, want)
		}
		if got, want := isSHA256Digest(v), sha256DigestGrammar.MatchString(v); got != want {
			t.Errorf("isSHA256Digest(%q) = %v, the digest grammar says %v", v, got, want)
		}
	}
}

func FuzzTagAndDigestChecksFollowTheirGrammars(f *testing.F) {
	for _, v := range grammarCases() {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := isOCITag(v), ociTagGrammar.MatchString(v); got != want {
			t.Errorf("isOCITag(%q) = %v, the tag grammar says %v", v, got, want)
		}
		if got, want := isSHA256Digest(v), sha256DigestGrammar.MatchString(v); got != want {
			t.Errorf("isSHA256Digest(%q) = %v, the digest grammar says %v", v, got, want)
		}
	})
}
