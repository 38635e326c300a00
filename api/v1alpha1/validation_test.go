package v1alpha1

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// labelMsg is apimachinery's message for a name that is not a DNS-1123 label.
const labelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " +
	"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', " +
	"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

const nonNegative = "must be greater than or equal to 0"

var (
	namePath      = field.NewPath("metadata", "name")
	specPath      = field.NewPath("spec")
	sourcePath    = specPath.Child("source")
	targetPath    = specPath.Child("target")
	approversPath = specPath.Child("approval", "approvers")

	pullRequestPath = specPath.Child("approval", "pullRequest")
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want field.ErrorList
	}{
		{name: "label", in: "dev-to-test", want: nil},
		{name: "digits first", in: "1st", want: nil},
		{name: "63 chars", in: strings.Repeat("a", 63), want: nil},
		{name: "empty", in: "", want: field.ErrorList{field.Required(namePath, "")}},
		{name: "upper case", in: "Dev", want: field.ErrorList{field.Invalid(namePath, "Dev", labelMsg)}},
		{name: "dots", in: "dev.test", want: field.ErrorList{field.Invalid(namePath, "dev.test", "must not contain dots")}},
		{name: "trailing dash", in: "dev-", want: field.ErrorList{field.Invalid(namePath, "dev-", labelMsg)}},
		{name: "64 chars", in: strings.Repeat("a", 64), want: field.ErrorList{
			field.Invalid(namePath, strings.Repeat("a", 64), "must be no more than 63 characters"),
		}},
	}
	// Every kind checks its name the same way.
	kinds := map[string]func(n string) field.ErrorList{
		"Landscape": func(n string) field.ErrorList {
			return (&Landscape{ObjectMeta: metav1.ObjectMeta{Name: n}}).Validate()
		},
		"Stage": func(n string) field.ErrorList {
			return (&Stage{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: StageSpec{Landscape: "dev", Path: "dev"}}).Validate()
		},
		"VectorTemplate": func(n string) field.ErrorList {
			return (&VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: n}}).Validate()
		},
		"VectorPromotionConfig": func(n string) field.ErrorList {
			c := validConfig()
			c.Name = n
			return c.Validate()
		},
		"StageVersionUsage": func(n string) field.ErrorList {
			return (&StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: StageVersionUsageSpec{
				Reason: TargetUsageReason, StageVersionRef: &LocalObjectReference{Name: "dev-1"},
			}}).Validate()
		},
	}
	for kind, validate := range kinds {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				if diff := cmp.Diff(tt.want, validate(tt.in)); diff != "" {
					t.Errorf("Validate() (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func validConfig() *VectorPromotionConfig {
	return &VectorPromotionConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test"},
		Spec: VectorPromotionConfigSpec{
			Source:   SourceReference{Kind: StageKind, Name: "dev", Landscape: "dev"},
			Target:   StageReference{Kind: StageKind, Name: "test", Landscape: "test"},
			Approval: &ApprovalPolicy{Required: ptr(false)},
		},
	}
}

func TestVectorPromotionConfigValidate(t *testing.T) {
	keys := newTestKeys(t)
	tests := []struct {
		name   string
		mutate func(*VectorPromotionConfig)
		want   field.ErrorList
	}{{
		name:   "stage to stage",
		mutate: func(*VectorPromotionConfig) {},
	}, {
		name: "template to stage, fully set",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Source = SourceReference{Kind: VectorTemplateKind, Name: "acme"}
			c.Spec.KeepLastPromotions = ptr[int32](0)
			c.Spec.TTLAfterFinished = &metav1.Duration{}
			c.Spec.UpdateDelay = &metav1.Duration{Duration: time.Hour}
			c.Spec.Approval = &ApprovalPolicy{Required: ptr(true), Approvers: []Approver{
				{Name: "alice", PublicKey: keys.sshPublic},
				{Name: "bob", PublicKey: keys.pgpPublic},
			}}
		},
	}, {
		name: "defaults pass",
		mutate: func(c *VectorPromotionConfig) {
			c.Default()
		},
	}, {
		name:   "empty spec",
		mutate: func(c *VectorPromotionConfig) { c.Spec = VectorPromotionConfigSpec{} },
		want: field.ErrorList{
			field.Required(sourcePath.Child("kind"), "VectorTemplate or Stage"),
			field.Required(sourcePath.Child("name"), ""),
			field.Required(targetPath.Child("kind"), "Stage"),
			field.Required(targetPath.Child("name"), ""),
			field.Required(targetPath.Child("landscape"), ""),
		},
	}, {
		name:   "readiness Active of a Stage source",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Source.Readiness = ReadinessActive },
	}, {
		name:   "readiness spelled wrong",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Source.Readiness = "Healthy" },
		want: field.ErrorList{
			field.NotSupported(sourcePath.Child("readiness"), "Healthy", []string{ReadinessAssigned, ReadinessActive}),
		},
	}, {
		name: "readiness of a VectorTemplate source",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Source = SourceReference{Kind: VectorTemplateKind, Name: "acme", Readiness: ReadinessActive}
			c.Spec.Approval = &ApprovalPolicy{Required: ptr(false)}
		},
		want: field.ErrorList{
			field.Forbidden(sourcePath.Child("readiness"),
				"only a Stage source is deployed somewhere; a VectorTemplate offers its latest vector, remove readiness"),
		},
	}, {
		name:   "source kind spelled wrong",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Source.Kind = "stage" },
		want: field.ErrorList{
			field.NotSupported(sourcePath.Child("kind"), "stage", []string{VectorTemplateKind, StageKind}),
		},
	}, {
		name:   "stage source without landscape",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Source.Landscape = "" },
		want:   field.ErrorList{field.Required(sourcePath.Child("landscape"), "")},
	}, {
		name:   "stage source landscape not a label",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Source.Landscape = "Dev" },
		want:   field.ErrorList{field.Invalid(sourcePath.Child("landscape"), "Dev", labelMsg)},
	}, {
		name: "template source with landscape",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Source = SourceReference{Kind: VectorTemplateKind, Name: "acme", Landscape: "dev"}
		},
		want: field.ErrorList{field.Forbidden(sourcePath.Child("landscape"),
			"a VectorTemplate lives in the config's own repository; remove landscape")},
	}, {
		name:   "source name not a label",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Source.Name = "dev_stage" },
		want:   field.ErrorList{field.Invalid(sourcePath.Child("name"), "dev_stage", labelMsg)},
	}, {
		name:   "target kind VectorTemplate",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Target.Kind = VectorTemplateKind },
		want: field.ErrorList{
			field.NotSupported(targetPath.Child("kind"), VectorTemplateKind, []string{StageKind}),
		},
	}, {
		name:   "target without name and landscape",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Target.Name, c.Spec.Target.Landscape = "", "" },
		want: field.ErrorList{
			field.Required(targetPath.Child("name"), ""),
			field.Required(targetPath.Child("landscape"), ""),
		},
	}, {
		name:   "stage promoted to itself",
		mutate: func(c *VectorPromotionConfig) { c.Spec.Target.Name, c.Spec.Target.Landscape = "dev", "dev" },
		want: field.ErrorList{field.Invalid(targetPath, "dev/dev",
			"must be a different stage than spec.source: a stage cannot be promoted to itself")},
	}, {
		name: "same stage name in another landscape is fine",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Source = SourceReference{Kind: StageKind, Name: "web", Landscape: "eu"}
			c.Spec.Target = StageReference{Kind: StageKind, Name: "web", Landscape: "us"}
		},
	}, {
		name: "negative numbers",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.KeepLastPromotions = ptr[int32](-1)
			c.Spec.TTLAfterFinished = &metav1.Duration{Duration: -time.Second}
			c.Spec.UpdateDelay = &metav1.Duration{Duration: -90 * time.Minute}
		},
		want: field.ErrorList{
			field.Invalid(specPath.Child("keepLastPromotions"), int64(-1), nonNegative),
			field.Invalid(specPath.Child("ttlAfterFinished"), "-1s", nonNegative),
			field.Invalid(specPath.Child("updateDelay"), "-1h30m0s", nonNegative),
		},
	}, {
		name: "approval required and nobody to give it",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Source = SourceReference{Kind: VectorTemplateKind, Name: "acme"}
			c.Spec.Approval = &ApprovalPolicy{Required: ptr(true)}
		},
		want: field.ErrorList{field.Required(approversPath, "promotions of this config wait for an approval "+
			"(spec.approval.required is true, the default for a Stage source) that nobody can give: list the approvers (name and publicKey), "+
			"set spec.approval.pullRequest, or set spec.approval.required: false")},
	}, {
		name: "approval required by default for a stage source, and nobody to give it",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = nil
			c.Default()
		},
		want: field.ErrorList{field.Required(approversPath, "promotions of this config wait for an approval "+
			"(spec.approval.required is true, the default for a Stage source) that nobody can give: list the approvers (name and publicKey), "+
			"set spec.approval.pullRequest, or set spec.approval.required: false")},
	}, {
		name: "approval by an approver or by a pull request is enough",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{Approvers: []Approver{{Name: "alice", PublicKey: keys.sshPublic}}}
		},
	}, {
		name: "approver without name, duplicate name",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{Approvers: []Approver{
				{Name: "alice", PublicKey: keys.sshPublic},
				{Name: "", PublicKey: keys.sshPublic},
				{Name: "alice", PublicKey: keys.pgpPublic},
			}}
		},
		want: field.ErrorList{
			field.Required(approversPath.Index(1).Child("name"), "who the approver is, as the audit trail shows it"),
			field.Duplicate(approversPath.Index(2).Child("name"), "alice"),
		},
	}, {
		name: "approver without key",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{Approvers: []Approver{{Name: "alice", PublicKey: " \n"}}}
		},
		want: field.ErrorList{field.Required(approversPath.Index(0).Child("publicKey"),
			"an armored OpenPGP public key block or an SSH public key line")},
	}, {
		name: "pull request approval, fully set",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{PullRequest: &PullRequestApproval{
				Forge: ForgeGitea, APIURL: "https://git.example.com/api/v1", TokenEnv: "GITEA_TOKEN",
				Labels: []string{"vectorflow", "promotion"}, Merge: PullRequestMergeVectorflow,
			}}
		},
	}, {
		name: "pull request approval on github with defaults and a token file",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{PullRequest: &PullRequestApproval{Forge: ForgeGitHub, TokenFile: "/etc/vectorflow/github-token"}}
		},
	}, {
		name: "pull request approval, everything wrong",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{PullRequest: &PullRequestApproval{
				Forge: "bitbucket", APIURL: "https://bot:secret@git.example.com/api/v1",
				TokenEnv: "GITEA_TOKEN", TokenFile: "/token", Labels: []string{"a", " ", "a"}, Merge: "auto",
			}}
		},
		want: field.ErrorList{
			field.NotSupported(pullRequestPath.Child("forge"), "bitbucket", []string{ForgeGitea, ForgeGitHub, ForgeGitLab}),
			field.Forbidden(pullRequestPath.Child("apiURL"), "must not carry credentials: set tokenEnv or tokenFile"),
			field.Forbidden(pullRequestPath.Child("tokenFile"), "set one of tokenEnv, tokenFile and githubApp"),
			field.Required(pullRequestPath.Child("labels").Index(1), "a label name"),
			field.Duplicate(pullRequestPath.Child("labels").Index(2), "a"),
			field.NotSupported(pullRequestPath.Child("merge"), "auto", []string{PullRequestMergeForge, PullRequestMergeVectorflow}),
		},
	}, {
		name: "pull request approval on gitea without API URL or token",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{PullRequest: &PullRequestApproval{Forge: ForgeGitea}}
		},
		want: field.ErrorList{
			field.Required(pullRequestPath.Child("apiURL"), "the root of Gitea's REST API, https://host/api/v1"),
			field.Required(pullRequestPath.Child("tokenEnv"), "the environment variable (or tokenFile, the file) holding the forge token, or githubApp"),
		},
	}, {
		name: "pull request approval: no forge, bad URL, bad env name",
		mutate: func(c *VectorPromotionConfig) {
			c.Spec.Approval = &ApprovalPolicy{PullRequest: &PullRequestApproval{APIURL: "git.example.com", TokenEnv: "GITEA-TOKEN"}}
		},
		want: field.ErrorList{
			field.Required(pullRequestPath.Child("forge"), "gitea, github or gitlab"),
			field.Invalid(pullRequestPath.Child("apiURL"), "git.example.com", "must be an http(s) URL"),
			field.Invalid(pullRequestPath.Child("tokenEnv"), "GITEA-TOKEN", "must be an environment variable name"),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(c)
			if diff := cmp.Diff(tt.want, c.Validate()); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApproverPublicKey(t *testing.T) {
	keys := newTestKeys(t)
	const privateMsg = "is a private key: remove it from the config and rotate it, " +
		"then paste the public key (gpg --armor --export <id>, or the .pub file of an SSH key)"
	const notAKey = "is neither an armored OpenPGP public key block nor an SSH public key line " +
		"(\"ssh-ed25519 AAAA... name\"): ssh: no key found"
	tests := []struct {
		name string
		key  string
		want string // the error's detail; empty when the key is accepted
	}{
		{name: "ssh ed25519 line", key: keys.sshPublic},
		{name: "ssh line with surrounding blank lines", key: "\n" + keys.sshPublic + "\n\n"},
		{name: "two ssh lines", key: keys.sshPublic + "\n" + keys.sshPublic},
		{name: "armored openpgp public key", key: keys.pgpPublic},
		{name: "ssh private key", key: keys.sshPrivate, want: privateMsg},
		{name: "openpgp private key", key: keys.pgpPrivate, want: privateMsg},
		{
			name: "openpgp private key under a public header",
			key:  keys.pgpPrivateMislabelled,
			want: "is an OpenPGP private key: remove it from the config and rotate it, " +
				"then paste the public key (gpg --armor --export <id>)",
		},
		{
			name: "corrupt openpgp block",
			key:  "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n-----END PGP PUBLIC KEY BLOCK-----\n",
			want: "is not a valid armored OpenPGP public key: openpgp: invalid data: tag byte does not have MSB set",
		},
		{name: "fingerprint instead of key", key: "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s", want: notAKey},
		{name: "ssh line then garbage", key: keys.sshPublic + "\nnot a key", want: notAKey +
			"; last parsing error for ignored line: illegal base64 data at input byte 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			c.Spec.Approval = &ApprovalPolicy{Approvers: []Approver{{Name: "alice", PublicKey: tt.key}}}
			var want field.ErrorList
			if tt.want != "" {
				want = field.ErrorList{field.Invalid(approversPath.Index(0).Child("publicKey"), field.OmitValueType{}, tt.want)}
			}
			got := c.Validate()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
			// A private key must never be echoed into an error message.
			if msg := got.ToAggregate(); msg != nil && strings.Contains(msg.Error(), strings.TrimSpace(tt.key)) {
				t.Errorf("error message repeats the key: %s", msg)
			}
		})
	}
}

func TestStageValidate(t *testing.T) {
	path := specPath.Child("path")
	tests := []struct {
		name string
		spec StageSpec
		want field.ErrorList
	}{
		{name: "overlay", spec: StageSpec{Landscape: "dev", Path: "apps/overlays/dev"}},
		{name: "landscape root", spec: StageSpec{Landscape: "dev", Path: "."}},
		{name: "dots inside a name", spec: StageSpec{Landscape: "dev", Path: "apps/..dev/v1..2"}},
		{name: "empty", spec: StageSpec{}, want: field.ErrorList{
			field.Required(specPath.Child("landscape"), ""),
			field.Required(path, "the Kustomize overlay of the stage, relative to the landscape root"),
		}},
		{name: "landscape not a label", spec: StageSpec{Landscape: "prod.eu", Path: "prod"}, want: field.ErrorList{
			field.Invalid(specPath.Child("landscape"), "prod.eu", "must not contain dots"),
		}},
		{name: "absolute", spec: StageSpec{Landscape: "dev", Path: "/apps/overlays/dev"}, want: field.ErrorList{
			field.Invalid(path, "/apps/overlays/dev", "must be relative to the landscape root, without a leading /"),
		}},
		{name: "climbs out", spec: StageSpec{Landscape: "dev", Path: "../other/dev"}, want: field.ErrorList{
			field.Invalid(path, "../other/dev", "must stay inside the landscape root: it climbs out with .."),
		}},
		{name: "climbs out after going in", spec: StageSpec{Landscape: "dev", Path: "apps/../../dev"}, want: field.ErrorList{
			field.Invalid(path, "apps/../../dev", "must stay inside the landscape root: it climbs out with .."),
		}},
		{name: "just ..", spec: StageSpec{Landscape: "dev", Path: ".."}, want: field.ErrorList{
			field.Invalid(path, "..", "must stay inside the landscape root: it climbs out with .."),
		}},
		{name: "goes in and out again", spec: StageSpec{Landscape: "dev", Path: "apps/../dev"}, want: field.ErrorList{
			field.Invalid(path, "apps/../dev", `must be a clean path: write "dev"`),
		}},
		{name: "trailing slash", spec: StageSpec{Landscape: "dev", Path: "apps/overlays/dev/"}, want: field.ErrorList{
			field.Invalid(path, "apps/overlays/dev/", `must be a clean path: write "apps/overlays/dev"`),
		}},
		{name: "leading ./", spec: StageSpec{Landscape: "dev", Path: "./dev"}, want: field.ErrorList{
			field.Invalid(path, "./dev", `must be a clean path: write "dev"`),
		}},
		{name: "double slash", spec: StageSpec{Landscape: "dev", Path: "apps//dev"}, want: field.ErrorList{
			field.Invalid(path, "apps//dev", `must be a clean path: write "apps/dev"`),
		}},
		{name: "backslashes", spec: StageSpec{Landscape: "dev", Path: `apps\overlays\dev`}, want: field.ErrorList{
			field.Invalid(path, `apps\overlays\dev`, `must use / as the separator, not \`),
		}},
		{name: "deployed by Flux", spec: StageSpec{Landscape: "dev", Path: "dev", MaxRevisions: ptr(int32(1)),
			Deployment: &DeploymentReference{Kind: DeploymentKindKustomization, Name: "acme-dev", Namespace: "flux-system"}}},
		{name: "deployed by Argo CD without a namespace", spec: StageSpec{Landscape: "dev", Path: "dev",
			Deployment: &DeploymentReference{Kind: DeploymentKindApplication, Name: "acme.dev"}}},
		{name: "deployment of another kind, without a name", spec: StageSpec{Landscape: "dev", Path: "dev",
			Deployment: &DeploymentReference{Kind: "HelmRelease", Namespace: "Flux"}}, want: field.ErrorList{
			field.NotSupported(specPath.Child("deployment", "kind"), "HelmRelease", []string{DeploymentKindKustomization, DeploymentKindApplication}),
			field.Required(specPath.Child("deployment", "name"), "the name of the Flux Kustomization or Argo CD Application that deploys the overlay"),
			field.Invalid(specPath.Child("deployment", "namespace"), "Flux", labelMsg),
		}},
		{name: "deployment without a kind", spec: StageSpec{Landscape: "dev", Path: "dev",
			Deployment: &DeploymentReference{Name: "acme-dev"}}, want: field.ErrorList{
			field.Required(specPath.Child("deployment", "kind"), "Kustomization (Flux) or Application (Argo CD)"),
		}},
		{name: "maxRevisions 0", spec: StageSpec{Landscape: "dev", Path: "dev", MaxRevisions: ptr(int32(0))}, want: field.ErrorList{
			field.Invalid(specPath.Child("maxRevisions"), int64(0), "must be at least 1: a stage always keeps the version it runs; leave it out for the default, 10"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Stage{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, s.Validate()); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLandscapeValidate(t *testing.T) {
	tests := []struct {
		name string
		spec LandscapeSpec
		want field.ErrorList
	}{
		{name: "all defaults", spec: LandscapeSpec{}},
		{name: "other repository", spec: LandscapeSpec{
			Repository: &RepositoryRef{URL: "ssh://git@git.example.com/acme/prod.git", Branch: "main"},
			Path:       "clusters/prod",
		}},
		{name: "repository without url", spec: LandscapeSpec{Repository: &RepositoryRef{Branch: "main"}}, want: field.ErrorList{
			field.Required(specPath.Child("repository", "url"),
				"the repository holding the stages; omit spec.repository to use the config repository"),
		}},
		{name: "credentials in the url", spec: LandscapeSpec{
			Repository: &RepositoryRef{URL: "https://deploy:s3cret@git.example.com/acme/prod.git"},
		}, want: field.ErrorList{
			field.Forbidden(specPath.Child("repository", "url"),
				"must not carry credentials, which would be committed to Git for everyone who reads it: "+
					"give them to vectorflow with --username/--password-file, --token-file or the VECTORFLOW_GIT_* environment"),
		}},
		{name: "a token as the url's user", spec: LandscapeSpec{
			Repository: &RepositoryRef{URL: "https://ghp_token@github.com/acme/prod.git"},
		}, want: field.ErrorList{
			field.Forbidden(specPath.Child("repository", "url"),
				"must not carry credentials, which would be committed to Git for everyone who reads it: "+
					"give them to vectorflow with --username/--password-file, --token-file or the VECTORFLOW_GIT_* environment"),
		}},
		{name: "ssh login name is no secret", spec: LandscapeSpec{
			Repository: &RepositoryRef{URL: "git@github.com:acme/prod.git"},
		}},
		{name: "absolute path", spec: LandscapeSpec{Path: "/srv"}, want: field.ErrorList{
			field.Invalid(specPath.Child("path"), "/srv", "must be relative to the repository root, without a leading /"),
		}},
		{name: "path climbs out", spec: LandscapeSpec{Path: "a/../../b"}, want: field.ErrorList{
			field.Invalid(specPath.Child("path"), "a/../../b", "must stay inside the repository root: it climbs out with .."),
		}},
		{name: "unclean path", spec: LandscapeSpec{Path: "apps/"}, want: field.ErrorList{
			field.Invalid(specPath.Child("path"), "apps/", `must be a clean path: write "apps"`),
		}},
		{name: "signers need a name and a public key", spec: LandscapeSpec{Signers: []Approver{{PublicKey: "not a key"}}},
			want: field.ErrorList{
				field.Required(specPath.Child("signers").Index(0).Child("name"), "who the approver is, as the audit trail shows it"),
				validatePublicKey("not a key", specPath.Child("signers").Index(0).Child("publicKey"), nil),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Landscape{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, l.Validate()); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVectorTemplateValidate(t *testing.T) {
	components := specPath.Child("components")
	version := func(i int) *field.Path { return components.Index(i).Child("version") }
	const versionHint = "must be an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x, ^1.2) or a digest (sha256:...)"
	const targetHint = "must be oci://<registry host>/<repository>, e.g. oci://registry.example.com/acme/vectors, without a tag"
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		name string
		spec VectorTemplateSpec
		want field.ErrorList
	}{
		{name: "empty", spec: VectorTemplateSpec{}},
		{name: "every version form and an upload target", spec: VectorTemplateSpec{
			Base: &TemplateReference{Kind: VectorTemplateKind, Name: "base"},
			Components: []ComponentSpec{
				{Name: "frontend", Version: "1.4.2"},
				{Name: "latest", Version: "latest"},
				{Name: "v-tag", Version: "v1.4.2-rc.1_build"},
				{Name: "range", Version: ">=1.2.0 <2.0.0"},
				{Name: "wildcard", Version: "1.4.x"},
				{Name: "caret", Version: "^1.2"},
				{Name: "tilde", Version: "~1.2.3"},
				{Name: "either", Version: "1.2.x || 2.x"},
				{Name: "pinned", Image: "registry.example.com/acme/pinned", Version: digest},
			},
			UploadTarget: "oci://registry.example.com/acme/vectors",
		}},
		{name: "base without kind", spec: VectorTemplateSpec{Base: &TemplateReference{Name: "base"}}},
		{name: "localhost registry with port", spec: VectorTemplateSpec{UploadTarget: "oci://localhost:5000/vectors"}},
		{name: "base of another kind, no name", spec: VectorTemplateSpec{Base: &TemplateReference{Kind: StageKind}}, want: field.ErrorList{
			field.NotSupported(specPath.Child("base", "kind"), StageKind, []string{VectorTemplateKind}),
			field.Required(specPath.Child("base", "name"), ""),
		}},
		{name: "base is itself", spec: VectorTemplateSpec{Base: &TemplateReference{Name: "acme"}}, want: field.ErrorList{
			field.Invalid(specPath.Child("base", "name"), "acme", "must name another VectorTemplate, not this one"),
		}},
		{name: "component without name or version, duplicate", spec: VectorTemplateSpec{Components: []ComponentSpec{
			{Name: "frontend", Version: "1.0.0"},
			{Version: "1.0.0"},
			{Name: "frontend"},
		}}, want: field.ErrorList{
			field.Required(components.Index(1).Child("name"), "the image name the overlay's images: entry matches"),
			field.Duplicate(components.Index(2).Child("name"), "frontend"),
			field.Required(version(2), "an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x, ^1.2) or a digest (sha256:...)"),
		}},
		{name: "bad versions", spec: VectorTemplateSpec{Components: []ComponentSpec{
			{Name: "short-digest", Version: "sha256:abc"},
			{Name: "upper-digest", Version: "sha256:" + strings.ToUpper(digest[7:])},
			{Name: "sha512", Version: "sha512:" + digest[7:]},
			{Name: "tag-with-slash", Version: "release/1.0"},
			{Name: "dot-first", Version: ".1"},
			{Name: "too-long", Version: "a" + strings.Repeat("b", 128)},
		}}, want: field.ErrorList{
			field.Invalid(version(0), "sha256:abc", "a digest must be sha256: followed by 64 lowercase hex digits"),
			field.Invalid(version(1), "sha256:"+strings.ToUpper(digest[7:]), "a digest must be sha256: followed by 64 lowercase hex digits"),
			field.Invalid(version(2), "sha512:"+digest[7:], versionHint),
			field.Invalid(version(3), "release/1.0", versionHint),
			field.Invalid(version(4), ".1", versionHint),
			field.Invalid(version(5), "a"+strings.Repeat("b", 128), versionHint),
		}},
		{name: "tag policies as Flux's ImagePolicy", spec: VectorTemplateSpec{Components: []ComponentSpec{
			{Name: "semver", Version: "1.4.x", Policy: PolicySemver, Order: "desc"},
			{Name: "builds", Policy: PolicyNumerical, FilterTags: &TagFilter{Pattern: `^main-[a-f0-9]+-(?P<ts>\d+)$`, Extract: "$ts"}},
			{Name: "names", Policy: PolicyAlphabetical, Order: "asc"},
		}}},
		{name: "bad policies", spec: VectorTemplateSpec{Components: []ComponentSpec{
			{Name: "unknown", Version: "1.0.0", Policy: "newest"},
			{Name: "version-with-policy", Version: "1.0.0", Policy: PolicyNumerical},
			{Name: "semver-without-version", Policy: PolicySemver},
			{Name: "bad-order", Version: "1.0.0", Order: "up"},
			{Name: "bad-pattern", Policy: PolicyAlphabetical, FilterTags: &TagFilter{Pattern: "("}},
			{Name: "no-pattern", Policy: PolicyAlphabetical, FilterTags: &TagFilter{Extract: "$1"}},
		}}, want: field.ErrorList{
			field.NotSupported(components.Index(0).Child("policy"), "newest", []string{PolicySemver, PolicyAlphabetical, PolicyNumerical}),
			field.Invalid(version(1), "1.0.0", "must be empty with policy numerical: the policy picks the tag"),
			field.Required(version(2), "an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x, ^1.2) or a digest (sha256:...)"),
			field.NotSupported(components.Index(3).Child("order"), "up", []string{"asc", "desc"}),
			field.Invalid(components.Index(4).Child("filterTags", "pattern"), "(", "error parsing regexp: missing closing ): `(`"),
			field.Required(components.Index(5).Child("filterTags", "pattern"), "a regular expression the tags must match"),
		}},
		{name: "upload targets", spec: VectorTemplateSpec{UploadTarget: "https://registry.example.com/acme/vectors"}, want: field.ErrorList{
			field.Invalid(specPath.Child("uploadTarget"), "https://registry.example.com/acme/vectors", targetHint),
		}},
		{name: "upload target without repository", spec: VectorTemplateSpec{UploadTarget: "oci://registry.example.com"}, want: field.ErrorList{
			field.Invalid(specPath.Child("uploadTarget"), "oci://registry.example.com", targetHint),
		}},
		{name: "upload target without host", spec: VectorTemplateSpec{UploadTarget: "oci://acme/vectors"}, want: field.ErrorList{
			field.Invalid(specPath.Child("uploadTarget"), "oci://acme/vectors", targetHint),
		}},
		{name: "upload target with tag", spec: VectorTemplateSpec{UploadTarget: "oci://registry.example.com/acme/vectors:latest"}, want: field.ErrorList{
			field.Invalid(specPath.Child("uploadTarget"), "oci://registry.example.com/acme/vectors:latest",
				targetHint+": repository can only contain the characters `abcdefghijklmnopqrstuvwxyz0123456789_-./`: acme/vectors:latest"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vt := &VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, vt.Validate()); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStageVersionUsageValidate(t *testing.T) {
	ref := specPath.Child("stageVersionRef")
	selector := specPath.Child("stageVersionSelector")
	byStage := &metav1.LabelSelector{MatchLabels: map[string]string{StageNameLabel: "dev"}}
	tests := []struct {
		name string
		spec StageVersionUsageSpec
		want field.ErrorList
	}{
		{name: "by name", spec: StageVersionUsageSpec{Reason: ActiveUsageReason, StageVersionRef: &LocalObjectReference{Name: "dev-3"}}},
		{name: "by selector", spec: StageVersionUsageSpec{Reason: "executing vector migrations", StageVersionSelector: byStage}},
		{name: "neither", spec: StageVersionUsageSpec{Reason: TargetUsageReason}, want: field.ErrorList{
			field.Required(ref, "set exactly one of spec.stageVersionRef and spec.stageVersionSelector"),
		}},
		{name: "both", spec: StageVersionUsageSpec{
			Reason: TargetUsageReason, StageVersionRef: &LocalObjectReference{Name: "dev-3"}, StageVersionSelector: byStage,
		}, want: field.ErrorList{
			field.Forbidden(selector, "set exactly one of spec.stageVersionRef and spec.stageVersionSelector, not both"),
		}},
		{name: "no reason, ref without name", spec: StageVersionUsageSpec{StageVersionRef: &LocalObjectReference{}}, want: field.ErrorList{
			field.Required(specPath.Child("reason"), "why the StageVersion is in use"),
			field.Required(ref.Child("name"), ""),
		}},
		{name: "selector selecting everything", spec: StageVersionUsageSpec{
			Reason: TargetUsageReason, StageVersionSelector: &metav1.LabelSelector{},
		}, want: field.ErrorList{
			field.Required(selector, "select by at least one label, e.g. vectorflow.dev/stage-name"),
		}},
		{name: "selector with another label", spec: StageVersionUsageSpec{
			Reason: TargetUsageReason, StageVersionSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}},
		}, want: field.ErrorList{
			field.NotSupported(selector.Child("matchLabels").Key("a b"), "a b", []string{StageNameLabel, VectorLabel}),
		}},
		{name: "selector by vector", spec: StageVersionUsageSpec{
			Reason: "migration", StageVersionSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				StageNameLabel: "prod", VectorLabel: "acme:2026.11.3-090000000Z"}},
		}},
		{name: "selector with a bad vector and an empty stage", spec: StageVersionUsageSpec{
			Reason: "migration", StageVersionSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				StageNameLabel: "", VectorLabel: "acme"}},
		}, want: field.ErrorList{
			field.Required(selector.Child("matchLabels").Key(StageNameLabel), "the stage's name or the vector, <template>:<version>"),
			field.Invalid(selector.Child("matchLabels").Key(VectorLabel), "acme", "must be a vector, <template>:<version>"),
		}},
		{name: "selector with expressions", spec: StageVersionUsageSpec{
			Reason: "migration", StageVersionSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: StageNameLabel, Operator: metav1.LabelSelectorOpExists}}},
		}, want: field.ErrorList{
			field.Forbidden(selector.Child("matchExpressions"), "select with matchLabels on "+StageNameLabel+" and "+VectorLabel),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: "dev-target"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, u.Validate()); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
		})
	}
}

// testKeys are fresh keys in every form an approver might paste.
type testKeys struct {
	sshPublic, sshPrivate                        string
	pgpPublic, pgpPrivate, pgpPrivateMislabelled string
}

func newTestKeys(t *testing.T) testKeys {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	entity, err := openpgp.NewEntity("Bob", "", "bob@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	armored := func(blockType string, serialize func(*bytes.Buffer) error) string {
		var buf bytes.Buffer
		w, err := armor.Encode(&buf, blockType, nil)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		if err := serialize(&body); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body.Bytes()); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	public := func(b *bytes.Buffer) error { return entity.Serialize(b) }
	private := func(b *bytes.Buffer) error { return entity.SerializePrivate(b, nil) }
	return testKeys{
		sshPublic:             strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " alice@example.com",
		sshPrivate:            string(pem.EncodeToMemory(block)),
		pgpPublic:             armored(openpgp.PublicKeyType, public),
		pgpPrivate:            armored(openpgp.PrivateKeyType, private),
		pgpPrivateMislabelled: armored(openpgp.PublicKeyType, private),
	}
}

func TestValidateUpgradePathFields(t *testing.T) {
	empty := ""
	cfg := &VectorPromotionConfig{}
	cfg.Name = "to-prod"
	cfg.Spec.Source = SourceReference{Kind: VectorTemplateKind, Name: "acme"}
	cfg.Spec.Target = StageReference{Kind: StageKind, Name: "prod", Landscape: "prod"}
	cfg.Spec.Constraints = []VersionConstraint{{Component: "a", Version: "<2.0.0"}, {Version: "<<2"}}
	cfg.Spec.ProtectedKinds = &[]string{"Namespace", empty}
	tmpl := &VectorTemplate{}
	tmpl.Name = "acme"
	tmpl.Spec.Components = []ComponentSpec{{Name: "a", Version: "1.0.0", SteppingStones: []string{"1.5.0", "1.x", "v1.5.0"}}}

	var got []string
	for _, e := range append(cfg.Validate(), tmpl.Validate()...) {
		got = append(got, e.Field)
	}
	want := []string{"spec.constraints[1].component", "spec.constraints[1].version", "spec.protectedKinds[1]",
		"spec.components[0].steppingStones[1]", "spec.components[0].steppingStones[2]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields refused (-want +got):\n%s", diff)
	}
}
