package controller

import (
	"fmt"
	"os"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
)

// pullRequestCredentials are the credentials spec.approval.pullRequest of
// config cfg names: its token, or its GitHub App installation.
func pullRequestCredentials(cfg string, policy *v1alpha1.PullRequestApproval) (forge.Credentials, error) {
	if policy.GitHubApp != nil {
		return gitHubAppCredentials("VectorPromotionConfig "+cfg+": spec.approval.pullRequest.githubApp", policy.GitHubApp)
	}
	token, err := forgeToken(cfg, policy)
	return forge.Credentials{Token: token}, err
}

// forgeAccessCredentials reads the credentials a ForgeAccess names; field
// is where it is written, for errors. They are read on every call, so a
// rotated token or key is picked up without a restart.
func forgeAccessCredentials(field string, a v1alpha1.ForgeAccess) (forge.Credentials, error) {
	switch {
	case a.GitHubApp != nil:
		return gitHubAppCredentials(field+".githubApp", a.GitHubApp)
	case a.TokenEnv != "":
		v, err := secretFromEnv(field+".tokenEnv", a.TokenEnv, "a forge access token")
		return forge.Credentials{Token: v}, err
	case a.TokenFile != "":
		v, err := secretFromFile(field+".tokenFile", a.TokenFile, "a forge access token")
		return forge.Credentials{Token: v}, err
	}
	return forge.Credentials{}, fmt.Errorf("%s: set tokenEnv, tokenFile or githubApp", field)
}

func gitHubAppCredentials(field string, app *v1alpha1.GitHubAppAuth) (forge.Credentials, error) {
	var key string
	var err error
	switch {
	case app.PrivateKeyEnv != "":
		key, err = secretFromEnv(field+".privateKeyEnv", app.PrivateKeyEnv, "the GitHub App's PEM private key")
	case app.PrivateKeyFile != "":
		key, err = secretFromFile(field+".privateKeyFile", app.PrivateKeyFile, "the GitHub App's PEM private key")
	default:
		err = fmt.Errorf("%s: set privateKeyFile or privateKeyEnv", field)
	}
	if err != nil {
		return forge.Credentials{}, err
	}
	return forge.Credentials{GitHubApp: &forge.GitHubApp{AppID: app.AppID, InstallationID: app.InstallationID, PrivateKey: []byte(key)}}, nil
}

func secretFromEnv(field, name, what string) (string, error) {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s: the environment variable %s of the controller is empty: set it to %s", field, name, what)
}

func secretFromFile(field, path, what string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if v := strings.TrimSpace(string(b)); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%s: %s is empty: put %s in it", field, path, what)
}
