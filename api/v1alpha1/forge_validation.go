package v1alpha1

import (
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateCommitStatus checks a stage's spec.deployment.commitStatus.
func validateCommitStatus(cs *CommitStatusSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cs.Context != "" {
		if _, err := path.Match(cs.Context, ""); err != nil {
			errs = append(errs, field.Invalid(p.Child("context"), cs.Context, "must be a glob (* ? [...]): "+err.Error()))
		}
	}
	return append(errs, validateForgeAccess(cs.ForgeAccess, p)...)
}

// validateForgeAccess checks the forge, its API URL and exactly one way to
// authenticate.
func validateForgeAccess(a ForgeAccess, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch a.Forge {
	case "":
		errs = append(errs, field.Required(p.Child("forge"), "gitea, github or gitlab"))
	case ForgeGitea, ForgeGitHub, ForgeGitLab:
	default:
		errs = append(errs, field.NotSupported(p.Child("forge"), a.Forge, []string{ForgeGitea, ForgeGitHub, ForgeGitLab}))
	}
	if a.APIURL == "" && a.Forge == ForgeGitea {
		errs = append(errs, field.Required(p.Child("apiURL"), "the root of Gitea's REST API, https://host/api/v1"))
	}
	if a.APIURL != "" {
		u, err := url.Parse(a.APIURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			errs = append(errs, field.Invalid(p.Child("apiURL"), a.APIURL, "must be an http(s) URL"))
		case u.User != nil:
			errs = append(errs, field.Forbidden(p.Child("apiURL"), "must not carry credentials: set tokenEnv, tokenFile or githubApp"))
		case a.Forge == ForgeGitea && !isGiteaAPIRoot(u):
			errs = append(errs, field.Invalid(p.Child("apiURL"), a.APIURL, giteaAPIRootDetail))
		}
	}
	return append(errs, validateForgeCredentials(a.Forge, a.TokenEnv, a.TokenFile, a.GitHubApp, p)...)
}

// validateForgeCredentials wants exactly one of tokenEnv, tokenFile and
// githubApp, the last on github only.
func validateForgeCredentials(forge, tokenEnv, tokenFile string, app *GitHubAppAuth, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	for _, ok := range []bool{tokenEnv != "", tokenFile != "", app != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set == 0:
		errs = append(errs, field.Required(p.Child("tokenEnv"), "the environment variable (or tokenFile, the file) holding the forge token, or githubApp"))
	case set > 1:
		errs = append(errs, field.Forbidden(p.Child("tokenFile"), "set one of tokenEnv, tokenFile and githubApp"))
	}
	if tokenEnv != "" && !envNameRE.MatchString(tokenEnv) {
		errs = append(errs, field.Invalid(p.Child("tokenEnv"), tokenEnv, "must be an environment variable name"))
	}
	if app == nil {
		return errs
	}
	ap := p.Child("githubApp")
	if forge != ForgeGitHub {
		errs = append(errs, field.Forbidden(ap, "a GitHub App authenticates on forge github only"))
	}
	if app.AppID <= 0 {
		errs = append(errs, field.Required(ap.Child("appID"), "the App ID from the GitHub App's settings page"))
	}
	if app.InstallationID <= 0 {
		errs = append(errs, field.Required(ap.Child("installationID"), "the id of the app's installation on the repository's owner"))
	}
	switch {
	case app.PrivateKeyFile == "" && app.PrivateKeyEnv == "":
		errs = append(errs, field.Required(ap.Child("privateKeyFile"), "the file (or privateKeyEnv, the environment variable) holding the app's PEM private key"))
	case app.PrivateKeyFile != "" && app.PrivateKeyEnv != "":
		errs = append(errs, field.Forbidden(ap.Child("privateKeyEnv"), "set privateKeyFile or privateKeyEnv, not both"))
	case app.PrivateKeyEnv != "" && !envNameRE.MatchString(app.PrivateKeyEnv):
		errs = append(errs, field.Invalid(ap.Child("privateKeyEnv"), app.PrivateKeyEnv, "must be an environment variable name"))
	}
	return errs
}

const giteaAPIRootDetail = "must be the root of Gitea's REST API, ending in /api/v1 (https://host/api/v1)"

// isGiteaAPIRoot: Gitea's SDK addresses the server root and adds /api/v1
// itself, so the configured root must end in it.
func isGiteaAPIRoot(u *url.URL) bool {
	return strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1")
}
