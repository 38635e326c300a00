package v1alpha1

import (
	"crypto/sha256"
	"sync"
)

// publicKeyProblems remembers the verdict on each distinct public key. A
// monorepo names the same few approvers in thousands of configs, and
// parsing an armored key (a keyring, its self-signatures verified) costs
// far more than looking its hash up. The verdict is a pure function of the
// key, so remembering it changes no answer; the memory is bounded.
var publicKeyProblems = &keyVerdicts{max: 4096, check: publicKeyProblem}

type keyVerdicts struct {
	mu       sync.Mutex
	max      int
	check    func(trimmed string) string
	verdicts map[[sha256.Size]byte]string
}

func (k *keyVerdicts) of(trimmed string) string {
	sum := sha256.Sum256([]byte(trimmed))
	k.mu.Lock()
	v, ok := k.verdicts[sum]
	k.mu.Unlock()
	if ok {
		return v
	}
	v = k.check(trimmed)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.verdicts == nil || len(k.verdicts) >= k.max {
		k.verdicts = map[[sha256.Size]byte]string{} // start over rather than grow
	}
	k.verdicts[sum] = v
	return v
}
