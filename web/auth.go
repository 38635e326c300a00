package web

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// Auth guards the view: a bearer token, or users with bcrypt password
// hashes. Every comparison takes the same time whatever the guess.
type Auth struct {
	// token is the sha256 of the token; comparing digests of equal length
	// keeps the comparison's time independent of the token's length.
	token *[sha256.Size]byte
	users map[string][]byte // user → bcrypt hash
	// unknownUser is the hash an unknown user's password is checked
	// against (never to success): the users' costliest, so that the time
	// of a refusal does not tell which user names exist.
	unknownUser []byte

	// bcrypt costs tens of milliseconds by design: a verified password is
	// remembered (as a digest) so that a page's stylesheet, script and
	// event stream do not each pay it, and at most maxHashing guesses are
	// hashed at once, so a flood of wrong passwords cannot take every core.
	verified sync.Map // user → [sha256.Size]byte of user and password
	hashing  chan struct{}
}

const maxHashing = 4

// LoadTokenFile reads a bearer token from file (surrounding whitespace
// removed).
func LoadTokenFile(file string) (*Auth, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read --ui-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return nil, fmt.Errorf("--ui-token-file %s: the token has %d characters; use at least 16 (for example `openssl rand -hex 32`)", file, len(tok))
	}
	sum := sha256.Sum256([]byte(tok))
	return &Auth{token: &sum}, nil
}

// LoadBasicAuthFile reads `user:bcrypt-hash` lines, as `htpasswd -nB user`
// writes them; blank lines and # comments are skipped. Plain-text
// passwords are refused: the file would be a list of passwords.
func LoadBasicAuthFile(file string) (*Auth, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read --ui-basic-auth-file: %w", err)
	}
	a := &Auth{users: map[string][]byte{}, hashing: make(chan struct{}, maxHashing)}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("--ui-basic-auth-file %s:%d: want `user:bcrypt-hash` (htpasswd -nB user)", file, n)
		}
		cost, err := bcrypt.Cost([]byte(hash))
		if err != nil {
			return nil, fmt.Errorf("--ui-basic-auth-file %s:%d: the password of %s is not a bcrypt hash (make one with htpasswd -nB %s): %v", file, n, user, user, err)
		}
		if _, dup := a.users[user]; dup {
			return nil, fmt.Errorf("--ui-basic-auth-file %s:%d: user %s is listed twice", file, n, user)
		}
		a.users[user] = []byte(hash)
		if highest, _ := bcrypt.Cost(a.unknownUser); a.unknownUser == nil || cost > highest {
			a.unknownUser = []byte(hash)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read --ui-basic-auth-file %s: %w", file, err)
	}
	if len(a.users) == 0 {
		return nil, fmt.Errorf("--ui-basic-auth-file %s lists no user", file)
	}
	return a, nil
}

// Wrap answers 401 to requests without the token or a user's password.
// The token is accepted as `Authorization: Bearer <token>` and, so that a
// browser can send it, as the password of basic auth with any user name.
func (a *Auth) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch ok, busy := a.allowed(r); {
		case busy:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many sign-ins in progress; retry", http.StatusServiceUnavailable)
		case !ok:
			w.Header().Set("WWW-Authenticate", `Basic realm="vectorflow", charset="UTF-8"`)
			http.Error(w, "sign in: this vectorflow view needs the token or a user's password", http.StatusUnauthorized)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

func (a *Auth) allowed(r *http.Request) (ok, busy bool) {
	if a.token != nil {
		secret := ""
		if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			secret = h[7:]
		} else if _, p, ok := r.BasicAuth(); ok {
			secret = p
		}
		sum := sha256.Sum256([]byte(secret))
		return subtle.ConstantTimeCompare(sum[:], a.token[:]) == 1, false
	}
	user, password, ok := r.BasicAuth()
	if !ok {
		return false, false
	}
	sum := sha256.Sum256([]byte(user + "\x00" + password))
	if v, ok := a.verified.Load(user); ok {
		known := v.([sha256.Size]byte)
		if subtle.ConstantTimeCompare(known[:], sum[:]) == 1 {
			return true, false
		}
	}
	select {
	case a.hashing <- struct{}{}:
		defer func() { <-a.hashing }()
	default:
		return false, true
	}
	hash, known := a.users[user]
	if !known {
		hash = a.unknownUser
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || !known {
		return false, false
	}
	a.verified.Store(user, sum)
	return true, false
}
