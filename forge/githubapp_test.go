package forge_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/forge"
)

// TestGitHubAppOnEnterprise authenticates as a GitHub App installation on
// a GitHub Enterprise Server API root (https://HOST/api/v3): the app's JWT,
// signed with its private key, buys an installation token at
// /app/installations/ID/access_tokens, and the token authenticates the
// calls; clients sharing AppTokens buy it once. A key the server refuses
// fails the call with an error that names the installation and holds no
// key.
func TestGitHubAppOnEnterprise(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	const installationToken = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"

	var mu sync.Mutex
	var tokensBought, calls int
	var refuse bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v3/app/installations/42/access_tokens":
			if refuse {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"message":"A JSON web token could not be decoded","documentation_url":"https://docs.github.com/rest"}`))
				return
			}
			if err := verifyAppJWT(r.Header.Get("Authorization"), &key.PublicKey, "7"); err != nil {
				t.Errorf("access token request: %v", err)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			tokensBought++
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"token":"` + installationToken + `","expires_at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","permissions":{"pull_requests":"write","statuses":"read"}}`))
		case r.Method == http.MethodGet && r.URL.Path == "/api/v3/repos/octocat/Hello-World/pulls/1347":
			calls++
			if got := r.Header.Get("Authorization"); got != "token "+installationToken {
				t.Errorf("pull request read with Authorization %q, want the installation token", got)
			}
			b, err := os.ReadFile(filepath.Join("testdata", "github", "pull_open.json"))
			if err != nil {
				t.Error(err)
			}
			w.Write(b)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hub := forge.Repo{Owner: "octocat", Name: "Hello-World"}
	// The controller makes a client per call; AppTokens lets them share
	// the installation token.
	var tokens forge.AppTokens
	for range 2 {
		f, err := forge.NewWithCredentials(forge.KindGitHub, srv.URL+"/api/v3", forge.Credentials{
			GitHubApp: &forge.GitHubApp{AppID: 7, InstallationID: 42, PrivateKey: keyPEM}, AppTokens: &tokens}, srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		pr, err := f.GetPullRequest(ctx, hub, 1347)
		if err != nil {
			t.Fatalf("get pull request as the app: %v", err)
		}
		if diff := cmp.Diff(forge.PullRequest{Number: 1347, State: forge.StateOpen, HeadSHA: githubHead, Author: "octocat",
			URL: "https://github.com/octocat/Hello-World/pull/1347"}, pr); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
	if tokensBought != 1 || calls != 2 {
		t.Errorf("bought %d installation tokens for %d calls, want 1 for 2", tokensBought, calls)
	}

	mu.Lock()
	refuse = true
	mu.Unlock()
	refused, err := forge.NewWithCredentials(forge.KindGitHub, srv.URL+"/api/v3", forge.Credentials{GitHubApp: &forge.GitHubApp{AppID: 7, InstallationID: 42, PrivateKey: keyPEM}}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	_, err = refused.GetPullRequest(ctx, hub, 1347)
	t.Logf("refused app key: %v", err)
	if err == nil || !strings.Contains(err.Error(), "installation") || !strings.Contains(err.Error(), "get pull request 1347") {
		t.Errorf("refused app key: %v, want an error naming the call and the installation", err)
	}
	if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("error leaks the key: %v", err)
	}

	if _, err := forge.NewWithCredentials(forge.KindGitHub, "", forge.Credentials{GitHubApp: &forge.GitHubApp{AppID: 7, InstallationID: 42, PrivateKey: []byte("not a key")}}, nil); err == nil ||
		!strings.Contains(err.Error(), "GitHub App 7 installation 42") {
		t.Errorf("a key that is no PEM key: %v, want an error naming the app", err)
	}
	if _, err := forge.NewWithCredentials(forge.KindGitLab, "", forge.Credentials{GitHubApp: &forge.GitHubApp{AppID: 7, InstallationID: 42, PrivateKey: keyPEM}}, nil); err == nil {
		t.Errorf("a GitHub App on gitlab was accepted")
	}
}

// verifyAppJWT checks that auth is "Bearer <JWT>" signed RS256 with pub
// and issued by the app.
func verifyAppJWT(auth string, pub *rsa.PublicKey, appID string) error {
	jwt, ok := strings.CutPrefix(auth, "Bearer ")
	parts := strings.Split(jwt, ".")
	if !ok || len(parts) != 3 {
		return fmt.Errorf("Authorization %q is not a bearer JWT", auth)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		return fmt.Errorf("JWT signature: %v", err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var claims struct {
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return err
	}
	if claims.Iss != appID || claims.Exp <= time.Now().Unix() {
		return fmt.Errorf("JWT claims %+v, want issued by app %s and not expired", claims, appID)
	}
	return nil
}
