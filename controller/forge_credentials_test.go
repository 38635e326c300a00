package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
)

func TestForgeAccessCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile := write("token", "glpat-secret\n")
	emptyFile := write("empty", "\n")
	keyFile := write("app.pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n")
	t.Setenv("VF_TEST_TOKEN", " ghp_secret ")
	t.Setenv("VF_TEST_EMPTY", "")
	const field = "Stage prod/apps: spec.deployment.commitStatus"
	tests := []struct {
		name    string
		access  v1alpha1.ForgeAccess
		want    forge.Credentials
		wantErr string
	}{
		{name: "token from the environment", access: v1alpha1.ForgeAccess{TokenEnv: "VF_TEST_TOKEN"}, want: forge.Credentials{Token: "ghp_secret"}},
		{name: "token from a file", access: v1alpha1.ForgeAccess{TokenFile: tokenFile}, want: forge.Credentials{Token: "glpat-secret"}},
		{name: "github app key from a file", access: v1alpha1.ForgeAccess{GitHubApp: &v1alpha1.GitHubAppAuth{AppID: 7, InstallationID: 42, PrivateKeyFile: keyFile}},
			want: forge.Credentials{GitHubApp: &forge.GitHubApp{AppID: 7, InstallationID: 42, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----")}}},
		{name: "empty environment variable", access: v1alpha1.ForgeAccess{TokenEnv: "VF_TEST_EMPTY"},
			wantErr: field + ".tokenEnv: the environment variable VF_TEST_EMPTY of the controller is empty: set it to a forge access token"},
		{name: "empty file", access: v1alpha1.ForgeAccess{TokenFile: emptyFile},
			wantErr: field + ".tokenFile: " + emptyFile + " is empty: put a forge access token in it"},
		{name: "missing key file", access: v1alpha1.ForgeAccess{GitHubApp: &v1alpha1.GitHubAppAuth{AppID: 7, InstallationID: 42, PrivateKeyFile: filepath.Join(dir, "missing.pem")}},
			wantErr: field + ".githubApp.privateKeyFile: open " + filepath.Join(dir, "missing.pem")},
		{name: "nothing", wantErr: field + ": set tokenEnv, tokenFile or githubApp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := forgeAccessCredentials(field, tt.access)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
