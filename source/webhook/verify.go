package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// verifyGitHub checks X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of
// the raw body keyed with the secret. The legacy SHA-1 X-Hub-Signature is not
// accepted.
func verifyGitHub(h http.Header, body, secret []byte) bool {
	sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
	return ok && validHMAC(sig, body, secret)
}

// verifyGitea checks X-Gitea-Signature (Forgejo sends it too), the bare hex
// HMAC-SHA256 of the body. Gitea also sends the GitHub-style
// X-Hub-Signature-256, which is checked only when X-Gitea-Signature is absent:
// a wrong Gitea signature is not rescued by another header.
func verifyGitea(h http.Header, body, secret []byte) bool {
	if sig := h.Get("X-Gitea-Signature"); sig != "" {
		return validHMAC(sig, body, secret)
	}
	return verifyGitHub(h, body, secret)
}

// verifyGitLab checks X-Gitlab-Token, which GitLab sends as the secret itself.
func verifyGitLab(h http.Header, _, secret []byte) bool {
	token := h.Get("X-Gitlab-Token")
	return token != "" && equalSecret(token, secret)
}

// verifyFlux checks X-Signature, which notification-controller's
// generic-hmac Provider sets to "sha256=" and the hex HMAC-SHA256 of the body
// keyed with the Provider secret's token.
func verifyFlux(h http.Header, body, secret []byte) bool {
	sig, ok := strings.CutPrefix(h.Get("X-Signature"), "sha256=")
	return ok && validHMAC(sig, body, secret)
}

// verifyBearer checks "Authorization: Bearer <secret>" (or "Token <secret>"),
// the header the distribution endpoint configuration and Argo CD's webhook
// service are told to send: neither can sign a body.
func verifyBearer(h http.Header, _, secret []byte) bool {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	if !ok || !(strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Token")) {
		return false
	}
	token = strings.TrimSpace(token)
	return token != "" && equalSecret(token, secret)
}

func validHMAC(sigHex string, body, secret []byte) bool {
	got, err := hex.DecodeString(strings.TrimSpace(sigHex))
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// equalSecret compares in constant time. Hashing first keeps the time
// independent of the secret's length too.
func equalSecret(token string, secret []byte) bool {
	a, b := sha256.Sum256([]byte(token)), sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
