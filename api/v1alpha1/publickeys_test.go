package v1alpha1

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vectorflow-dev/vectorflow/internal/memo"
)

// TestKeyVerdictsParseEachKeyOnce: thousands of configs naming one
// approver parse the key once; a new key is parsed; the memory stays
// bounded.
func TestKeyVerdictsParseEachKeyOnce(t *testing.T) {
	parsed := map[string]int{}
	k := &KeyVerdicts{verdicts: memo.Bounded[[sha256.Size]byte, string]{Max: 2}, check: func(key string) string {
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
	if k.verdicts.Len() > 2 {
		t.Errorf("%d verdicts remembered, want at most 2", k.verdicts.Len())
	}
}

// TestValidatePublicKeyVerdictRemembered: the second look at a key gives
// the same error, at its own path, remembered or not.
func TestValidatePublicKeyVerdictRemembered(t *testing.T) {
	p1, p2 := field.NewPath("a"), field.NewPath("b")
	for _, keys := range []*KeyVerdicts{nil, NewKeyVerdicts()} {
		for _, p := range []*field.Path{p1, p2, p1} {
			err := validatePublicKey("ssh-ed25519 not-base64", p, keys)
			if err == nil || err.Field != p.String() || !strings.Contains(err.Detail, "neither an armored OpenPGP public key") {
				t.Fatalf("validatePublicKey at %s: %v", p, err)
			}
		}
	}
}

// TestValidateWithKeysParsesEachKeyOnce: configs and landscapes validated
// with one KeyVerdicts parse a shared key once, and report the same
// problems as Validate.
func TestValidateWithKeysParsesEachKeyOnce(t *testing.T) {
	parsed := 0
	keys := &KeyVerdicts{verdicts: memo.Bounded[[sha256.Size]byte, string]{Max: 16}, check: func(key string) string {
		parsed++
		return publicKeyProblem(key)
	}}
	approvers := []Approver{{Name: "alice", PublicKey: "ssh-ed25519 not-base64"}}
	for i := 0; i < 100; i++ {
		c := &VectorPromotionConfig{}
		c.Name = "c"
		c.Spec.Approval = &ApprovalPolicy{Approvers: approvers}
		if diff := cmp.Diff(c.Validate(), c.ValidateWithKeys(keys)); diff != "" {
			t.Fatalf("config: Validate (-) and ValidateWithKeys (+) differ:\n%s", diff)
		}
		l := &Landscape{}
		l.Name = "l"
		l.Spec.Signers = approvers
		if diff := cmp.Diff(l.Validate(), l.ValidateWithKeys(keys)); diff != "" {
			t.Fatalf("landscape: Validate (-) and ValidateWithKeys (+) differ:\n%s", diff)
		}
	}
	if parsed != 1 {
		t.Errorf("the key was parsed %d times, want once", parsed)
	}
}
