package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source"
)

const (
	goodFixture   = "../../source/testdata/good"
	brokenFixture = "../../source/testdata/broken"
)

// runValidate executes the real root command in-process and returns what
// it printed and its error.
func runValidate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"validate"}, args...))
	err := root.Execute()
	return out.String(), err
}

// isolateCredentials keeps the developer's credentials and known_hosts out
// of the test.
func isolateCredentials(t *testing.T) {
	// Go finds its build and module caches through HOME: pin them first, or
	// a go build later in the test would compile every module again.
	if home, err := os.UserHomeDir(); err == nil && os.Getenv("GOPATH") == "" {
		t.Setenv("GOPATH", filepath.Join(home, "go"))
	}
	if cache, err := os.UserCacheDir(); err == nil && os.Getenv("GOCACHE") == "" {
		t.Setenv("GOCACHE", filepath.Join(cache, "go-build"))
	}
	t.Setenv("HOME", t.TempDir())
	for _, k := range []string{source.EnvGitUsername, source.EnvGitPassword, source.EnvGitToken,
		source.EnvSSHKey, source.EnvSSHPassphrase, source.EnvKnownHosts} {
		t.Setenv(k, "")
	}
}

func TestValidateGood(t *testing.T) {
	isolateCredentials(t)
	out, err := runValidate(t, "--repo", goodFixture, "-o", "json")
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	var got validationReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	var names []string
	for _, o := range got.Objects {
		names = append(names, o.Kind+"/"+o.Name)
	}
	want := []string{"Landscape/dev", "Landscape/prod", "Stage/dev/dev", "Stage/dev/test", "Stage/prod/prod",
		"VectorTemplate/app", "VectorTemplate/platform",
		"VectorPromotionConfig/dev-to-test", "VectorPromotionConfig/latest-to-dev", "VectorPromotionConfig/test-to-prod"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]source.Problem{}, got.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	wantRefs := []referenceReport{
		{Role: "source", Kind: "Stage", Name: "dev", Landscape: "dev", Resolved: true,
			Repository: goodFixture, Overlay: "apps/overlays/dev", Vector: "app:2026.7.27-dev"},
		{Role: "target", Kind: "Stage", Name: "test", Landscape: "dev", Resolved: true,
			Repository: goodFixture, Overlay: "apps/overlays/test", Vector: "app:2026.7.27-test"},
	}
	if diff := cmp.Diff(wantRefs, got.Objects[7].References); diff != "" {
		t.Errorf("dev-to-test references (-want +got):\n%s", diff)
	}

	table, err := runValidate(t, "--repo", goodFixture)
	if err != nil {
		t.Fatalf("validate -o table: %v", err)
	}
	for _, line := range []string{
		"source Stage dev/dev → overlay apps/overlays/dev in " + goodFixture + " @ vector app:2026.7.27-dev; target Stage dev/test → overlay apps/overlays/test",
		"no problems",
	} {
		if !strings.Contains(table, line) {
			t.Errorf("table output lacks %q:\n%s", line, table)
		}
	}
}

func TestValidateBroken(t *testing.T) {
	isolateCredentials(t)
	for _, format := range []string{"json", "yaml", "table"} {
		out, err := runValidate(t, "--repo", brokenFixture, "-o", format)
		if err == nil || !strings.Contains(err.Error(), "16 problem(s) found") {
			t.Errorf("-o %s: error = %v, want 16 problems", format, err)
		}
		if format != "json" {
			continue
		}
		var got validationReport
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		var where []string
		for _, p := range got.Problems {
			where = append(where, strings.Join([]string{p.File, p.Kind, p.Name, p.Field}, " "))
		}
		const f = "vectorflow/faults.yaml "
		want := []string{
			f + "Pipeline release kind",
			f + "Stage broken spec.path", // does not build
			f + "Stage escape spec.path",
			f + "Stage ghost spec.path",
			f + "Stage old-api apiVersion",
			f + "Stage orphan spec.landscape",
			f + "Stage typo spec.overlay",
			f + "VectorPromotionConfig bad-ttl spec.ttlAfterFinished",
			f + "VectorPromotionConfig from-missing-template spec.source.name",
			f + "VectorPromotionConfig to-missing-landscape spec.target.landscape",
			f + "VectorPromotionConfig to-missing-stage spec.target.name",
			f + "VectorTemplate dangling spec.base.name",
			f + "VectorTemplate loop-a spec.base.name",
			f + "VectorTemplate loop-b spec.base.name",
			"vectorflow/malformed.yaml   ",
			"vectorflow/team-b.yaml Landscape dev metadata.name",
		}
		if diff := cmp.Diff(want, where); diff != "" {
			t.Errorf("problems (-want +got):\n%s", diff)
		}
		if len(got.Objects) != 19 {
			t.Errorf("listed %d objects, want the 19 that load", len(got.Objects))
		}
	}
}

// TestValidateGitServer validates over HTTP with credentials from the
// environment and a password file, and over SSH with key and known_hosts
// files, against a real git server.
func TestValidateGitServer(t *testing.T) {
	isolateCredentials(t)
	srv := testutil.StartGitServer(t)
	srv.InitRepo(t, goodFixture, "main", "config")
	dir := t.TempDir()
	write := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("pass"))
	if err != nil {
		t.Fatal(err)
	}
	keyFile := write("id_ed25519", pem.EncodeToMemory(block))
	knownHosts := write("known_hosts", srv.KnownHosts)
	passwordFile := write("password", []byte(srv.Password+"\n"))

	t.Run("HTTP, username from the environment, password file", func(t *testing.T) {
		t.Setenv(source.EnvGitUsername, srv.Username)
		if out, err := runValidate(t, "--repo", srv.HTTPURL("config"), "--password-file", passwordFile); err != nil {
			t.Fatalf("validate: %v\n%s", err, out)
		}
	})
	t.Run("HTTP, wrong password", func(t *testing.T) {
		t.Setenv(source.EnvGitUsername, srv.Username)
		t.Setenv(source.EnvGitPassword, "wrong")
		_, err := runValidate(t, "--repo", srv.HTTPURL("config"))
		if err == nil || !strings.Contains(err.Error(), "refused the credentials") {
			t.Fatalf("error = %v, want the credentials refused", err)
		}
	})
	t.Run("SSH, key and known_hosts files", func(t *testing.T) {
		t.Setenv(source.EnvSSHPassphrase, "pass")
		if out, err := runValidate(t, "--repo", srv.SSHURL("config"), "--ssh-key", keyFile, "--known-hosts", knownHosts); err != nil {
			t.Fatalf("validate: %v\n%s", err, out)
		}
	})
	t.Run("SSH, no known_hosts", func(t *testing.T) {
		t.Setenv(source.EnvSSHPassphrase, "pass")
		_, err := runValidate(t, "--repo", srv.SSHURL("config"), "--ssh-key", keyFile)
		if err == nil || !strings.Contains(err.Error(), "known_hosts") {
			t.Fatalf("error = %v, want one asking for known_hosts", err)
		}
	})
}

func TestValidateUsage(t *testing.T) {
	isolateCredentials(t)
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil, wantErr: "--repo is required"},
		{args: []string{"--repo", goodFixture, "-o", "xml"}, wantErr: `unknown output format "xml"`},
		{args: []string{"--repo", filepath.Join(t.TempDir(), "missing")}, wantErr: "no such file or directory"},
		{args: []string{"--repo", goodFixture, "--config-path", "nowhere"}, wantErr: "1 problem(s) found"},
		{args: []string{"--repo", goodFixture, "--token-file", "/nonexistent/token"}, wantErr: "read --token-file"},
	}
	for _, tt := range tests {
		_, err := runValidate(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("validate %v: error = %v, want one containing %q", tt.args, err, tt.wantErr)
		}
	}
}

// TestValidateQuickstart keeps the shipped example valid.
func TestValidateQuickstart(t *testing.T) {
	isolateCredentials(t)
	const quickstart = "../../examples/quickstart"
	if out, err := runValidate(t, "--repo", quickstart); err != nil {
		t.Fatalf("validate %s: %v\n%s", quickstart, err, out)
	}
}

// refusedReport is validate's JSON report on dir, which must fail: it was
// given what.
func refusedReport(t *testing.T, dir, what string) validationReport {
	t.Helper()
	out, err := runValidate(t, dir, "-o", "json")
	if err == nil {
		t.Fatalf("validate passed %s:\n%s", what, out)
	}
	var got validationReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return got
}

// TestValidateRefusesAStageBuiltOnAnotherStagesOverlay: kustomize lets an
// overlay build on another ("prod: resources: [../test]"), but a stage
// whose overlay reads another stage's kustomization file runs what
// promotions into that stage write there: a promotion into test would
// change what prod runs without prod's own promotion and approvals, and
// prod would report the vector its own file names, not the one it runs.
// Through a directory in between too.
func TestValidateRefusesAStageBuiltOnAnotherStagesOverlay(t *testing.T) {
	isolateCredentials(t)
	for _, tt := range []struct {
		name      string
		resources string // prod's, instead of the base and its namespace
		files     map[string]string
	}{
		{name: "directly", resources: "  - ../test\n"},
		{name: "through a directory in between", resources: "  - ../../shared\n",
			files: map[string]string{"apps/shared/kustomization.yaml": "resources:\n  - ../overlays/test\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.CopyDir(t, "../../examples/quickstart")
			prod := filepath.Join(dir, "apps", "overlays", "prod", "kustomization.yaml")
			own := "resources:\n  - ../../base\n  - namespace.yaml\n"
			data := readFile(t, prod)
			if !strings.Contains(data, own) {
				t.Fatalf("the quickstart's prod overlay no longer has %q; update this test", own)
			}
			writeFile(t, filepath.Dir(prod), "kustomization.yaml", []byte(strings.Replace(data, own, "resources:\n"+tt.resources, 1)))
			testutil.WriteFiles(t, dir, tt.files)
			got := refusedReport(t, dir, "an overlay built on another stage's")
			var where []string
			for _, p := range got.Problems {
				where = append(where, strings.Join([]string{p.File, p.Kind, p.Name, p.Field}, " "))
				for _, want := range []string{"apps/overlays/test", "Stage test/test", "prod/prod"} {
					if !strings.Contains(p.Reason, want) {
						t.Errorf("problem %q does not name %s", p.Reason, want)
					}
				}
			}
			if diff := cmp.Diff([]string{"vectorflow/stages.yaml Stage prod spec.path"}, where); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateRefusesTwoOverlaysNamingOneVectorDifferently: test's
// vector annotation was edited by hand to dev's vector, but its images
// entries still run the old frontend: one of the two overlays does not run
// the vector it names (a pass believes neither blindly), and validate says
// which entry disagrees, in CI, before it lands.
func TestValidateRefusesTwoOverlaysNamingOneVectorDifferently(t *testing.T) {
	isolateCredentials(t)
	dir := testutil.CopyDir(t, "../../examples/quickstart")
	test := filepath.Join(dir, "apps", "overlays", "test", "kustomization.yaml")
	data := readFile(t, test)
	const own, devs = "vectorflow.dev/vector: acme:2026.11.2-090000000Z", "vectorflow.dev/vector: acme:2026.11.3-090000000Z"
	if !strings.Contains(data, own) || !strings.Contains(readFile(t, filepath.Join(dir, "apps", "overlays", "dev", "kustomization.yaml")), devs) {
		t.Fatal("the quickstart's dev and test overlays changed; update this test")
	}
	writeFile(t, filepath.Dir(test), "kustomization.yaml", []byte(strings.Replace(data, own, devs, 1)))

	got := refusedReport(t, dir, "two overlays naming one vector with different images")
	if len(got.Problems) != 1 || got.Problems[0].Kind != "Stage" || got.Problems[0].Name != "test" || got.Problems[0].Field != "spec.path" {
		t.Fatalf("problems %+v, want one on Stage test's spec.path", got.Problems)
	}
	for _, want := range []string{"acme:2026.11.3-090000000Z", "registry.example.com/acme/frontend", "1.1.0", "1.2.0", "Stage dev/dev"} {
		if !strings.Contains(got.Problems[0].Reason, want) {
			t.Errorf("problem %q does not name %s", got.Problems[0].Reason, want)
		}
	}
}
