package demo

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"golang.org/x/crypto/ssh"
)

// Keys are the demo's fresh signing keys, written to files the CLI reads.
type Keys struct {
	// ControllerKeyFile is the controller's armored OpenPGP private key.
	ControllerKeyFile string
	// ControllerPublicKey is its armored public key, the landscapes' signer.
	ControllerPublicKey string
	// AliceKeyFile is the approver's OpenSSH private key.
	AliceKeyFile string
	// AlicePublicKey is her authorized_keys line, the configs' approver.
	AlicePublicKey string
}

// GenerateKeys writes a controller OpenPGP key and an SSH key for alice
// into dir. The OpenPGP key is v4 EdDSA (legacy ed25519) because gpg 2.2,
// still common, cannot verify RFC 9580 Ed25519 signatures, and users will
// want `git verify-commit` to work on the kept clone.
func GenerateKeys(dir string) (Keys, error) {
	entity, err := openpgp.NewEntity("vectorflow demo", "", "vectorflow@vectorflow.dev",
		&packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Curve: packet.Curve25519})
	if err != nil {
		return Keys{}, fmt.Errorf("generate the controller's OpenPGP key: %w", err)
	}
	public, err := armored(openpgp.PublicKeyType, func(w *bytes.Buffer) error { return entity.Serialize(w) })
	if err != nil {
		return Keys{}, err
	}
	private, err := armored(openpgp.PrivateKeyType, func(w *bytes.Buffer) error {
		return entity.SerializePrivateWithoutSigning(w, nil)
	})
	if err != nil {
		return Keys{}, err
	}
	_, alice, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Keys{}, fmt.Errorf("generate alice's SSH key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(alice, "alice@example.com")
	if err != nil {
		return Keys{}, fmt.Errorf("encode alice's SSH key: %w", err)
	}
	sshPublic, err := ssh.NewPublicKey(alice.Public())
	if err != nil {
		return Keys{}, fmt.Errorf("encode alice's SSH public key: %w", err)
	}
	k := Keys{
		ControllerKeyFile:   filepath.Join(dir, "controller.asc"),
		ControllerPublicKey: string(public),
		AliceKeyFile:        filepath.Join(dir, "alice"),
		AlicePublicKey:      strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPublic))) + " alice@example.com",
	}
	if err := os.WriteFile(k.ControllerKeyFile, private, 0o600); err != nil {
		return Keys{}, fmt.Errorf("write the controller's key: %w", err)
	}
	if err := os.WriteFile(k.AliceKeyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		return Keys{}, fmt.Errorf("write alice's key: %w", err)
	}
	return k, nil
}

func armored(blockType string, serialize func(*bytes.Buffer) error) ([]byte, error) {
	var body, out bytes.Buffer
	if err := serialize(&body); err != nil {
		return nil, fmt.Errorf("serialize the OpenPGP key: %w", err)
	}
	w, err := armor.Encode(&out, blockType, nil)
	if err != nil {
		return nil, fmt.Errorf("armor the OpenPGP key: %w", err)
	}
	if _, err := w.Write(body.Bytes()); err != nil {
		return nil, fmt.Errorf("armor the OpenPGP key: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("armor the OpenPGP key: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
