package gitwriter

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Signer signs commits. It is a go-git Signer, so it goes straight into
// git.CommitOptions.Signer; the signature it returns is what git stores in
// the commit's gpgsig header.
type Signer interface {
	git.Signer
	// Kind says whether signatures are OpenPGP or SSH, which decides how
	// `git verify-commit` must be configured (gpg.format).
	Kind() KeyKind
	// PublicKey is the key to trust for this signer's signatures, in the
	// shape an Approver's publicKey takes: an armored OpenPGP public key
	// block or an SSH authorized_keys line.
	PublicKey() string
}

// KeyKind is the kind of a signing key and of the signatures it makes.
type KeyKind string

const (
	KeyKindOpenPGP KeyKind = "openpgp"
	KeyKindSSH     KeyKind = "ssh"
)

// sshNamespace is the namespace git uses for commit signatures; ssh-keygen
// -Y verify refuses a signature made in another one.
const sshNamespace = "git"

// Errors for a key that cannot sign. They are wrapped with the cause and
// what to do; test with errors.Is.
var (
	ErrKeyMalformed       = errors.New("signing key is malformed")
	ErrKeyNotPrivate      = errors.New("signing key is a public key, not a private key")
	ErrPassphraseRequired = errors.New("signing key is encrypted and no passphrase was given")
	ErrWrongPassphrase    = errors.New("passphrase does not decrypt the signing key")
	ErrKeyCannotSign      = errors.New("signing key cannot sign")
)

const keyShapesHint = "give an armored OpenPGP private key (`gpg --export-secret-keys --armor`, Flux's git.asc) " +
	"or an OpenSSH private key (Flux's identity)"

// NewSigner reads an armored OpenPGP private key (Flux's `git.asc`, with
// its optional `passphrase`) or an SSH private key (Flux's `identity`, with
// its optional `password`); the kind is detected from the key. A passphrase
// given for an unencrypted key is ignored, as Flux does.
func NewSigner(key, passphrase []byte) (Signer, error) {
	// The constructors' results are checked before they become a Signer: a
	// nil *openPGPSigner in the interface would not compare equal to nil.
	switch detectKey(key) {
	case keyOpenPGPPrivate:
		s, err := newOpenPGPSigner(key, passphrase)
		if err != nil {
			return nil, err
		}
		return s, nil
	case keySSHPrivate:
		s, err := newSSHSigner(key, passphrase)
		if err != nil {
			return nil, err
		}
		return s, nil
	case keyOpenPGPPublic, keySSHPublic:
		return nil, fmt.Errorf("%w: %s", ErrKeyNotPrivate, keyShapesHint)
	default:
		return nil, fmt.Errorf("%w: no OpenPGP or SSH private key found: %s", ErrKeyMalformed, keyShapesHint)
	}
}

// LoadSigner reads the signing key from keyFile and its passphrase from the
// environment variable passphraseEnv or the file passphraseFile, whichever
// is given (neither: the key is not encrypted). One trailing newline of the
// passphrase file is dropped, since editors and `echo` add one.
func LoadSigner(keyFile, passphraseEnv, passphraseFile string) (Signer, error) {
	if passphraseEnv != "" && passphraseFile != "" {
		return nil, fmt.Errorf("signing key %s: give the passphrase either in environment variable %s or in file %s, not both",
			keyFile, passphraseEnv, passphraseFile)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	var passphrase []byte
	switch {
	case passphraseEnv != "":
		v, ok := os.LookupEnv(passphraseEnv)
		if !ok {
			return nil, fmt.Errorf("signing key %s: environment variable %s holding its passphrase is not set",
				keyFile, passphraseEnv)
		}
		passphrase = []byte(v)
	case passphraseFile != "":
		b, err := os.ReadFile(passphraseFile)
		if err != nil {
			return nil, fmt.Errorf("signing key %s: read passphrase: %w", keyFile, err)
		}
		passphrase = trimOneNewline(b)
	}
	s, err := NewSigner(key, passphrase)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", keyFile, err)
	}
	return s, nil
}

type keyShape int

const (
	keyUnknown keyShape = iota
	keyOpenPGPPrivate
	keyOpenPGPPublic
	keySSHPrivate
	keySSHPublic
)

// detectKey looks at armor headers only, so the error for a key of the
// wrong shape says what shape it is rather than how a parser choked on it.
func detectKey(key []byte) keyShape {
	switch {
	case bytes.Contains(key, []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----")):
		return keyOpenPGPPrivate
	case bytes.Contains(key, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")):
		return keyOpenPGPPublic
	case bytes.Contains(key, []byte("PRIVATE KEY-----")):
		// OPENSSH, RSA, EC and PKCS#8 private keys: all what ssh-keygen
		// writes or reads.
		return keySSHPrivate
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey(key); err == nil {
		return keySSHPublic
	}
	if bytes.Contains(key, []byte("-----BEGIN PUBLIC KEY-----")) {
		return keySSHPublic
	}
	return keyUnknown
}

func trimOneNewline(b []byte) []byte {
	if bytes.HasSuffix(b, []byte("\r\n")) {
		return b[:len(b)-2]
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

type openPGPSigner struct {
	entity    *openpgp.Entity
	publicKey string
}

func newOpenPGPSigner(key, passphrase []byte) (*openPGPSigner, error) {
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key))
	if err != nil {
		return nil, fmt.Errorf("%w: read OpenPGP private key: %v: %s", ErrKeyMalformed, err, keyShapesHint)
	}
	if len(entities) == 0 {
		return nil, fmt.Errorf("%w: the OpenPGP key block holds no key: %s", ErrKeyMalformed, keyShapesHint)
	}
	// The first key signs, as in Flux, so existing git.asc secrets behave
	// the same here.
	entity := entities[0]
	if entity.PrivateKey == nil {
		return nil, fmt.Errorf("%w: the OpenPGP key block has no secret key: %s", ErrKeyNotPrivate, keyShapesHint)
	}
	signing, ok := entity.SigningKey(time.Now())
	if !ok || signing.PrivateKey == nil {
		return nil, fmt.Errorf("%w: OpenPGP key %X has no valid signing key (expired, revoked, or without signing capability): "+
			"extend or replace the key", ErrKeyCannotSign, entity.PrimaryKey.Fingerprint)
	}
	if signing.PrivateKey.Dummy() {
		return nil, fmt.Errorf("%w: OpenPGP key %X holds only a stub of its secret signing key (it lives on a smartcard): "+
			"export a key whose secret is on disk", ErrKeyCannotSign, entity.PrimaryKey.Fingerprint)
	}
	if signing.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("%w: OpenPGP key %X: give its passphrase (Flux's `passphrase` secret entry)",
				ErrPassphraseRequired, entity.PrimaryKey.Fingerprint)
		}
		if err := entity.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("%w: OpenPGP key %X: %v: check the passphrase",
				ErrWrongPassphrase, entity.PrimaryKey.Fingerprint, err)
		}
	}
	public, err := armoredPublicKey(entity)
	if err != nil {
		return nil, fmt.Errorf("%w: OpenPGP key %X: export public key: %v", ErrKeyMalformed, entity.PrimaryKey.Fingerprint, err)
	}
	return &openPGPSigner{entity: entity, publicKey: public}, nil
}

// Sign makes an armored detached signature, the form git writes into
// gpgsig for gpg.format=openpgp.
func (s *openPGPSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.entity, message, nil); err != nil {
		return nil, fmt.Errorf("sign with OpenPGP key %X: %w", s.entity.PrimaryKey.Fingerprint, err)
	}
	return b.Bytes(), nil
}

func (s *openPGPSigner) Kind() KeyKind     { return KeyKindOpenPGP }
func (s *openPGPSigner) PublicKey() string { return s.publicKey }

func armoredPublicKey(e *openpgp.Entity) (string, error) {
	var b strings.Builder
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		return "", err
	}
	if err := e.Serialize(w); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	b.WriteByte('\n')
	return b.String(), nil
}

type sshSigner struct {
	signer ssh.Signer
}

func newSSHSigner(key, passphrase []byte) (*sshSigner, error) {
	raw, err := ssh.ParseRawPrivateKey(key)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("%w: SSH key: give its passphrase (Flux's `password` secret entry)", ErrPassphraseRequired)
		}
		raw, err = ssh.ParseRawPrivateKeyWithPassphrase(key, passphrase)
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, fmt.Errorf("%w: SSH key: check the passphrase", ErrWrongPassphrase)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read SSH private key: %v: %s", ErrKeyMalformed, err, keyShapesHint)
	}
	signer, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: SSH key of type %T: %v: use an ed25519, RSA or ECDSA key", ErrKeyCannotSign, raw, err)
	}
	return &sshSigner{signer: signer}, nil
}

// Sign makes an armored SSH signature (sshsig) in the "git" namespace with
// SHA-512, the form `git commit -S` writes for gpg.format=ssh.
func (s *sshSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.signer, sshsig.HashSHA512, sshNamespace)
	if err != nil {
		return nil, fmt.Errorf("sign with SSH key %s: %w", ssh.FingerprintSHA256(s.signer.PublicKey()), err)
	}
	return sshsig.Armor(sig), nil
}

func (s *sshSigner) Kind() KeyKind { return KeyKindSSH }
func (s *sshSigner) PublicKey() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.signer.PublicKey())))
}
