package v1alpha1

import (
	"crypto/sha256"

	"github.com/vectorflow-dev/vectorflow/internal/memo"
)

// KeyVerdicts remembers the verdict on each distinct public key, for
// validation with ValidateWithKeys. A monorepo names the same few approvers
// in thousands of configs, and parsing an armored key (a keyring, its
// self-signatures verified) costs far more than looking its hash up. The
// verdict is a pure function of the key, so remembering it changes no
// answer; the memory is bounded. Whoever validates many objects (a loader)
// holds one; it is safe for concurrent use. It is no API object, so
// controller-gen makes no deepcopy of it.
//
// +kubebuilder:object:generate=false
type KeyVerdicts struct {
	check    func(trimmed string) string
	verdicts memo.Bounded[[sha256.Size]byte, string]
}

// NewKeyVerdicts remembers the verdicts on up to 4096 keys.
func NewKeyVerdicts() *KeyVerdicts {
	return &KeyVerdicts{check: publicKeyProblem, verdicts: memo.Bounded[[sha256.Size]byte, string]{Max: 4096}}
}

// of is the problem of a trimmed, non-empty key, "" when it has none. A nil
// KeyVerdicts parses the key every time.
func (k *KeyVerdicts) of(trimmed string) string {
	if k == nil {
		return publicKeyProblem(trimmed)
	}
	sum := sha256.Sum256([]byte(trimmed))
	if v, ok := k.verdicts.Get(sum); ok {
		return v
	}
	v := k.check(trimmed)
	k.verdicts.Put(sum, v)
	return v
}
