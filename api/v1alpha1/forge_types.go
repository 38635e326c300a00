package v1alpha1

// CommitStatusSource is where a stage's deployer posts commit statuses:
// Flux's notification-controller (a Provider of type github, gitlab or
// gitea) and Argo CD notifications post one per revision they apply, on the
// repository the stage's overlay lives in. The forge is reached as
// spec.approval.pullRequest reaches it; the repository is the landscape's.
type CommitStatusSource struct {
	// Context is a glob (path.Match: * stays within one /-separated part)
	// the status's context must match. The default is what the deployer
	// posts by default: Flux's "kustomization/<name>/<provider uid prefix>"
	// for a Kustomization, so "kustomization/<name>/*" (lowercased, as Flux
	// lowercases it), and Argo CD's catalog "continuous-delivery/<name>"
	// for an Application.
	// +optional
	Context string `json:"context,omitempty"`

	ForgeAccess `json:",inline"`
}

// ForgeAccess says how vectorflow reaches a forge's API.
type ForgeAccess struct {
	// Forge is gitea, github or gitlab.
	Forge string `json:"forge"`

	// APIURL is the root of the forge's REST API (https://host/api/v1 for
	// Gitea, https://host/api/v3 for GitHub Enterprise Server); required for
	// gitea, defaulted for github and gitlab.
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// TokenEnv names the environment variable holding the forge token, and
	// TokenFile a file holding it; exactly one of them or GitHubApp is set.
	// The token is read by the controller and never written to statuses or
	// logs.
	// +optional
	TokenEnv string `json:"tokenEnv,omitempty"`
	// +optional
	TokenFile string `json:"tokenFile,omitempty"`

	// GitHubApp authenticates as a GitHub App installation (forge github
	// only).
	// +optional
	GitHubApp *GitHubAppAuth `json:"githubApp,omitempty"`
}

// GitHubAppAuth is a GitHub App installation vectorflow acts as. The app's
// private key is read by the controller, from a file or an environment
// variable (exactly one), like a token; installation tokens are made from
// it as needed.
type GitHubAppAuth struct {
	// AppID is the App ID on the app's settings page.
	AppID int64 `json:"appID"`
	// InstallationID is the id of the app's installation on the account
	// owning the repository (the number at the end of the installation's
	// settings URL).
	InstallationID int64 `json:"installationID"`
	// PrivateKeyFile is a file holding the app's PEM private key.
	// +optional
	PrivateKeyFile string `json:"privateKeyFile,omitempty"`
	// PrivateKeyEnv names the environment variable holding it.
	// +optional
	PrivateKeyEnv string `json:"privateKeyEnv,omitempty"`
}
