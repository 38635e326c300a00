package gitwriter

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Errors of VerifyCommit; test with errors.Is.
var (
	ErrUnsigned      = errors.New("commit is not signed")
	ErrUnknownSigner = errors.New("commit is signed by a key that is not trusted")
	ErrBadSignature  = errors.New("commit signature does not verify")
)

// maxClockSkew is how far in the future an OpenPGP signature may be dated:
// approvers sign on their own machines, whose clocks run a little ahead.
const maxClockSkew = 5 * time.Minute

// TrustedKey is a key whose signatures are accepted, under the name the
// audit trail shows. It mirrors v1alpha1.Approver: PublicKey is an armored
// OpenPGP public key block or an SSH authorized_keys line.
type TrustedKey struct {
	Name, PublicKey string
}

// Verifier checks commit signatures against trusted keys.
type Verifier struct {
	openPGPKeys  openpgp.EntityList
	openPGPNames map[string]string        // primary key fingerprint (hex) → name
	sshKeys      map[string]trustedSSHKey // SHA256 fingerprint → key
}

// NewVerifier parses the trusted keys. A key that does not parse, or one
// trusted under two names (an approval could not say who approved), is an
// error naming the key.
func NewVerifier(keys []TrustedKey) (*Verifier, error) {
	v := &Verifier{
		openPGPNames: map[string]string{},
		sshKeys:      map[string]trustedSSHKey{},
	}
	for i, k := range keys {
		if k.Name == "" {
			return nil, fmt.Errorf("trusted key %d has no name: give every approver a name", i)
		}
		if err := v.add(k); err != nil {
			return nil, fmt.Errorf("trusted key %q: %w", k.Name, err)
		}
	}
	return v, nil
}

// VerifyCommit checks c's signature and returns the name of the trusted key
// that made it. The signature kind (OpenPGP or SSH) comes from its armor.
func (v *Verifier) VerifyCommit(c *object.Commit) (signer string, err error) {
	if c.PGPSignature == "" {
		return "", fmt.Errorf("commit %s: %w: sign it with a trusted key", c.Hash, ErrUnsigned)
	}
	sig := []byte(c.PGPSignature)
	// go-git and git reject several signatures in one header; so do we,
	// rather than pick one.
	if n := bytes.Count(sig, []byte("-----BEGIN ")); n != 1 {
		return "", fmt.Errorf("commit %s: %w: the signature header holds %d signature blocks, want one",
			c.Hash, ErrBadSignature, n)
	}
	payload, err := signedPayload(c)
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", c.Hash, err)
	}
	switch {
	case bytes.Contains(sig, []byte("-----BEGIN PGP SIGNATURE-----")):
		signer, err = v.verifyOpenPGP(payload, sig)
	case bytes.Contains(sig, []byte("-----BEGIN SSH SIGNATURE-----")):
		signer, err = v.verifySSH(payload, sig)
	default:
		err = fmt.Errorf("%w: the signature is neither OpenPGP nor SSH (X.509 signatures are not supported)", ErrBadSignature)
	}
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", c.Hash, err)
	}
	return signer, nil
}

func (v *Verifier) add(k TrustedKey) error {
	pub := strings.TrimSpace(k.PublicKey)
	switch {
	case strings.Contains(pub, "PRIVATE KEY"):
		return errors.New("publicKey holds a private key: give the public key, and replace this key pair since its secret is exposed")
	case strings.Contains(pub, "-----BEGIN PGP PUBLIC KEY BLOCK-----"):
		entities, err := openpgp.ReadArmoredKeyRing(strings.NewReader(pub))
		if err != nil {
			return fmt.Errorf("publicKey is not a valid armored OpenPGP public key: %w", err)
		}
		for _, e := range entities {
			fp := hex.EncodeToString(e.PrimaryKey.Fingerprint)
			if other, ok := v.openPGPNames[fp]; ok {
				return fmt.Errorf("OpenPGP key %X is also trusted as %q: give each key one name", e.PrimaryKey.Fingerprint, other)
			}
			v.openPGPNames[fp] = k.Name
			v.openPGPKeys = append(v.openPGPKeys, e)
		}
		return nil
	default:
		key, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(pub))
		if err != nil {
			return fmt.Errorf("publicKey is neither an armored OpenPGP public key block nor an SSH public key line: %w", err)
		}
		if strings.TrimSpace(string(rest)) != "" {
			return errors.New("publicKey holds more than one SSH key: give one approver per key")
		}
		fp := ssh.FingerprintSHA256(key)
		if other, ok := v.sshKeys[fp]; ok {
			return fmt.Errorf("SSH key %s is also trusted as %q: give each key one name", fp, other.name)
		}
		v.sshKeys[fp] = trustedSSHKey{name: k.Name, key: key}
		return nil
	}
}

// signedPayload is the commit as git signs it: encoded without its gpgsig
// header.
func signedPayload(c *object.Commit) ([]byte, error) {
	obj := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(obj); err != nil {
		return nil, fmt.Errorf("encode commit without its signature: %w", err)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("encode commit without its signature: %w", err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

func (v *Verifier) verifyOpenPGP(payload, sig []byte) (string, error) {
	now := time.Now()
	entity, err := v.checkOpenPGP(payload, sig, now)
	var futureSig *packet.Signature
	if errors.Is(err, pgperrors.ErrSignatureExpired) {
		// A signature dated slightly ahead of our clock is skew, not
		// expiry: check it as of its own creation time.
		futureSig = openPGPSignaturePacket(sig)
	}
	if futureSig != nil && futureSig.CreationTime.After(now) {
		ahead := futureSig.CreationTime.Sub(now)
		if ahead > maxClockSkew {
			return "", fmt.Errorf("%w: OpenPGP: the signature is dated %s, %s after this clock (at most %s of skew is allowed): check the signer's clock",
				ErrBadSignature, futureSig.CreationTime.UTC().Format(time.RFC3339), ahead.Round(time.Second), maxClockSkew)
		}
		entity, err = v.checkOpenPGP(payload, sig, futureSig.CreationTime)
	}
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		issuer := "unknown"
		if p := openPGPSignaturePacket(sig); p != nil && p.IssuerKeyId != nil {
			issuer = fmt.Sprintf("%016X", *p.IssuerKeyId)
		}
		return "", fmt.Errorf("%w: OpenPGP key ID %s is not among the trusted keys: add it as an approver or sign with a trusted key",
			ErrUnknownSigner, issuer)
	case err != nil:
		return "", fmt.Errorf("%w: OpenPGP: %v", ErrBadSignature, err)
	}
	return v.openPGPNames[hex.EncodeToString(entity.PrimaryKey.Fingerprint)], nil
}

func (v *Verifier) checkOpenPGP(payload, sig []byte, at time.Time) (*openpgp.Entity, error) {
	cfg := &packet.Config{Time: func() time.Time { return at }}
	return openpgp.CheckArmoredDetachedSignature(v.openPGPKeys, bytes.NewReader(payload), bytes.NewReader(sig), cfg)
}

// openPGPSignaturePacket is the first signature packet of an armored
// signature, or nil.
func openPGPSignaturePacket(sig []byte) *packet.Signature {
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		return nil
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		return nil
	}
	s, _ := p.(*packet.Signature)
	return s
}

func (v *Verifier) verifySSH(payload, armored []byte) (string, error) {
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return "", fmt.Errorf("%w: SSH: %v", ErrBadSignature, err)
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	trusted, ok := v.sshKeys[fp]
	if !ok {
		return "", fmt.Errorf("%w: SSH key %s is not among the trusted keys: add it as an approver or sign with a trusted key",
			ErrUnknownSigner, fp)
	}
	if err := sshsig.Verify(bytes.NewReader(payload), sig, trusted.key, sig.HashAlgorithm, sshNamespace); err != nil {
		return "", fmt.Errorf("%w: SSH key %s: %v", ErrBadSignature, fp, err)
	}
	return trusted.name, nil
}

type trustedSSHKey struct {
	name string
	key  ssh.PublicKey
}
