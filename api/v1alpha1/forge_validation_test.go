package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestStageCommitStatusValidate(t *testing.T) {
	cs := specPath.Child("deployment", "commitStatus")
	app := cs.Child("githubApp")
	with := func(c CommitStatusSource) StageSpec {
		return StageSpec{Landscape: "dev", Path: "dev", Deployment: &DeploymentReference{Kind: DeploymentKindKustomization, Name: "apps", CommitStatus: &c}}
	}
	gitea := ForgeAccess{Forge: ForgeGitea, APIURL: "https://gitea.example.com/api/v1", TokenEnv: "GITEA_TOKEN"}
	tests := []struct {
		name string
		spec StageSpec
		want field.ErrorList
	}{
		{name: "default context on gitea", spec: with(CommitStatusSource{ForgeAccess: gitea})},
		{name: "own context", spec: with(CommitStatusSource{Context: "kustomization/apps/*", ForgeAccess: gitea})},
		{name: "github app", spec: with(CommitStatusSource{ForgeAccess: ForgeAccess{Forge: ForgeGitHub,
			GitHubApp: &GitHubAppAuth{AppID: 1, InstallationID: 2, PrivateKeyFile: "/etc/vectorflow/app.pem"}}})},
		{name: "bad glob", spec: with(CommitStatusSource{Context: "kustomization/[apps", ForgeAccess: gitea}), want: field.ErrorList{
			field.Invalid(cs.Child("context"), "kustomization/[apps", "must be a glob (* ? [...]): syntax error in pattern"),
		}},
		{name: "no forge, no credentials", spec: with(CommitStatusSource{}), want: field.ErrorList{
			field.Required(cs.Child("forge"), "gitea, github or gitlab"),
			field.Required(cs.Child("tokenEnv"), "the environment variable (or tokenFile, the file) holding the forge token, or githubApp"),
		}},
		{name: "token and app", spec: with(CommitStatusSource{ForgeAccess: ForgeAccess{Forge: ForgeGitHub, TokenEnv: "T",
			GitHubApp: &GitHubAppAuth{AppID: 1, InstallationID: 2, PrivateKeyEnv: "KEY"}}}), want: field.ErrorList{
			field.Forbidden(cs.Child("tokenFile"), "set one of tokenEnv, tokenFile and githubApp"),
		}},
		{name: "app on gitlab, incomplete", spec: with(CommitStatusSource{ForgeAccess: ForgeAccess{Forge: ForgeGitLab, GitHubApp: &GitHubAppAuth{}}}), want: field.ErrorList{
			field.Forbidden(app, "a GitHub App authenticates on forge github only"),
			field.Required(app.Child("appID"), "the App ID from the GitHub App's settings page"),
			field.Required(app.Child("installationID"), "the id of the app's installation on the repository's owner"),
			field.Required(app.Child("privateKeyFile"), "the file (or privateKeyEnv, the environment variable) holding the app's PEM private key"),
		}},
		{name: "gitea url without the api root", spec: with(CommitStatusSource{ForgeAccess: ForgeAccess{Forge: ForgeGitea, APIURL: "https://gitea.example.com", TokenEnv: "T"}}), want: field.ErrorList{
			field.Invalid(cs.Child("apiURL"), "https://gitea.example.com", "must be the root of Gitea's REST API, ending in /api/v1 (https://host/api/v1)"),
		}},
		{name: "api url with credentials", spec: with(CommitStatusSource{ForgeAccess: ForgeAccess{Forge: ForgeGitLab, APIURL: "https://u:p@gitlab.example.com/api/v4", TokenFile: "/t"}}), want: field.ErrorList{
			field.Forbidden(cs.Child("apiURL"), "must not carry credentials: set tokenEnv, tokenFile or githubApp"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Stage{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, s.Validate(), cmpopts.IgnoreFields(field.Error{}, "BadValue")); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}
