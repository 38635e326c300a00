package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestKeyVerdictsParseEachKeyOnce: thousands of configs naming one
// approver parse the key once; a new key is parsed; the memory stays
// bounded.
func TestKeyVerdictsParseEachKeyOnce(t *testing.T) {
	parsed := map[string]int{}
	k := &keyVerdicts{max: 2, check: func(key string) string {
		parsed[key]++
		if strings.HasPrefix(key, "bad") {
			return "is bad"
		}
		return ""
	}}
	for i := 0; i < 1000; i++ {
		if got := k.of("alice"); got != "" {
			t.Fatalf("alice's key: %q", got)
		}
		if got := k.of("bad key"); got != "is bad" {
			t.Fatalf("a bad key: %q", got)
		}
	}
	if parsed["alice"] != 1 || parsed["bad key"] != 1 {
		t.Errorf("parsed %v, want each key once", parsed)
	}
	k.of("carol")
	if len(k.verdicts) > 2 {
		t.Errorf("%d verdicts remembered, want at most 2", len(k.verdicts))
	}
}

// TestValidatePublicKeyVerdictRemembered: the second look at a key gives
// the same error, at its own path.
func TestValidatePublicKeyVerdictRemembered(t *testing.T) {
	p1, p2 := field.NewPath("a"), field.NewPath("b")
	for _, p := range []*field.Path{p1, p2, p1} {
		err := validatePublicKey("ssh-ed25519 not-base64", p)
		if err == nil || err.Field != p.String() || !strings.Contains(err.Detail, "neither an armored OpenPGP public key") {
			t.Fatalf("validatePublicKey at %s: %v", p, err)
		}
	}
}
