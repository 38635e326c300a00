package v1alpha1

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate reports every problem of a VectorPromotionConfig, each at the path
// of the field to fix. It does not need Default to have run.
func (in *VectorPromotionConfig) Validate() field.ErrorList { return in.ValidateWithKeys(nil) }

// ValidateWithKeys is Validate taking the verdict on each approver key from
// keys (nil parses every key).
func (in *VectorPromotionConfig) ValidateWithKeys(keys *KeyVerdicts) field.ErrorList {
	errs := validateName(in.Name)
	spec := field.NewPath("spec")
	errs = append(errs, validateSourceReference(in.Spec.Source, spec.Child("source"))...)
	errs = append(errs, validateStageReference(in.Spec.Target, spec.Child("target"))...)
	if in.Spec.Source.Kind == StageKind && in.Spec.Source.Name != "" &&
		in.Spec.Source.Name == in.Spec.Target.Name && in.Spec.Source.Landscape == in.Spec.Target.Landscape {
		errs = append(errs, field.Invalid(spec.Child("target"), in.Spec.Target.Landscape+"/"+in.Spec.Target.Name,
			"must be a different stage than spec.source: a stage cannot be promoted to itself"))
	}
	if k := in.Spec.KeepLastPromotions; k != nil && *k < 0 {
		errs = append(errs, field.Invalid(spec.Child("keepLastPromotions"), int64(*k), "must be greater than or equal to 0"))
	}
	errs = append(errs, validateNonNegative(in.Spec.TTLAfterFinished, spec.Child("ttlAfterFinished"))...)
	errs = append(errs, validateNonNegative(in.Spec.UpdateDelay, spec.Child("updateDelay"))...)
	if in.Spec.Approval != nil {
		errs = append(errs, validateApprovers(in.Spec.Approval.Approvers, spec.Child("approval", "approvers"), keys)...)
		errs = append(errs, validatePullRequestApproval(in.Spec.Approval.PullRequest, spec.Child("approval", "pullRequest"))...)
		errs = append(errs, validateMinApprovals(in.Spec.Approval, spec.Child("approval", "minApprovals"))...)
	}
	errs = append(errs, validateSomeoneCanApprove(in)...)
	for i, c := range in.Spec.Constraints {
		p := spec.Child("constraints").Index(i)
		if c.Component == "" {
			errs = append(errs, field.Required(p.Child("component"), "the component the constraint bounds"))
		}
		if _, err := semver.NewConstraint(c.Version); err != nil {
			errs = append(errs, field.Invalid(p.Child("version"), c.Version, "must be a semver constraint such as <2.0.0 or 1.x: "+err.Error()))
		}
	}
	if kinds := in.Spec.ProtectedKinds; kinds != nil {
		for i, k := range *kinds {
			if k == "" {
				errs = append(errs, field.Required(spec.Child("protectedKinds").Index(i), "a kind, such as Namespace"))
			}
		}
	}
	return errs
}

// validateMinApprovals keeps minApprovals reachable: at least 1 (an approval
// that needs none is required: false), at most the number of approvers (more
// would leave every promotion Waiting for good).
func validateMinApprovals(a *ApprovalPolicy, p *field.Path) field.ErrorList {
	if a.MinApprovals == nil {
		return nil
	}
	n := *a.MinApprovals
	switch {
	case n < 1:
		return field.ErrorList{field.Invalid(p, int64(n), "must be at least 1; to run promotions without approval set spec.approval.required: false")}
	case len(a.Approvers) > 0 && int(n) > len(a.Approvers):
		// Without approvers, validateSomeoneCanApprove says what is missing.
		return field.ErrorList{field.Invalid(p, int64(n), fmt.Sprintf(
			"must be at most the number of spec.approval.approvers (%d), or no promotion can ever be approved; add approvers or lower it", len(a.Approvers)))}
	}
	return nil
}

// validateSomeoneCanApprove refuses a config whose promotions wait for an
// approval nobody can give: they would pile up Waiting forever. Only the
// config's own approvers and its pull-request review can approve.
func validateSomeoneCanApprove(in *VectorPromotionConfig) field.ErrorList {
	if _, known := approvalRequiredByDefault(in.Spec.Source.Kind); !known || !in.RequireApproval() {
		return nil
	}
	if a := in.Spec.Approval; a != nil && (len(a.Approvers) > 0 || a.PullRequest != nil) {
		return nil
	}
	return field.ErrorList{field.Required(field.NewPath("spec", "approval", "approvers"),
		"promotions of this config wait for an approval (spec.approval.required is true, the default for a Stage source) "+
			"that nobody can give: "+
			"list the approvers (name and publicKey), set spec.approval.pullRequest, or set spec.approval.required: false")}
}

// envNameRE is what a shell accepts as an environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validatePullRequestApproval(pr *PullRequestApproval, p *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var errs field.ErrorList
	forges := []string{ForgeGitea, ForgeGitHub, ForgeGitLab}
	switch {
	case pr.Forge == "":
		errs = append(errs, field.Required(p.Child("forge"), "gitea, github or gitlab"))
	case pr.Forge != ForgeGitea && pr.Forge != ForgeGitHub && pr.Forge != ForgeGitLab:
		errs = append(errs, field.NotSupported(p.Child("forge"), pr.Forge, forges))
	}
	if pr.APIURL == "" && pr.Forge == ForgeGitea {
		errs = append(errs, field.Required(p.Child("apiURL"), "the root of Gitea's REST API, https://host/api/v1"))
	}
	if pr.APIURL != "" {
		u, err := url.Parse(pr.APIURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			errs = append(errs, field.Invalid(p.Child("apiURL"), pr.APIURL, "must be an http(s) URL"))
		case u.User != nil:
			errs = append(errs, field.Forbidden(p.Child("apiURL"), "must not carry credentials: set tokenEnv or tokenFile"))
		case pr.Forge == ForgeGitea && !isGiteaAPIRoot(u):
			errs = append(errs, field.Invalid(p.Child("apiURL"), pr.APIURL, giteaAPIRootDetail))
		}
	}
	errs = append(errs, validateForgeCredentials(pr.Forge, pr.TokenEnv, pr.TokenFile, pr.GitHubApp, p)...)
	seen := map[string]bool{}
	for i, l := range pr.Labels {
		switch {
		case strings.TrimSpace(l) == "":
			errs = append(errs, field.Required(p.Child("labels").Index(i), "a label name"))
		case seen[l]:
			errs = append(errs, field.Duplicate(p.Child("labels").Index(i), l))
		}
		seen[l] = true
	}
	if m := pr.Merge; m != "" && m != PullRequestMergeForge && m != PullRequestMergeVectorflow {
		errs = append(errs, field.NotSupported(p.Child("merge"), m, []string{PullRequestMergeForge, PullRequestMergeVectorflow}))
	}
	return errs
}

// Validate reports every problem of a Stage.
func (in *Stage) Validate() field.ErrorList {
	errs := validateName(in.Name)
	spec := field.NewPath("spec")
	errs = append(errs, validateReferenceName(in.Spec.Landscape, spec.Child("landscape"))...)
	if in.Spec.Path == "" {
		errs = append(errs, field.Required(spec.Child("path"), "the Kustomize overlay of the stage, relative to the landscape root"))
	} else {
		errs = append(errs, validateRelativePath(in.Spec.Path, spec.Child("path"), "the landscape root")...)
	}
	if d := in.Spec.Deployment; d != nil {
		errs = append(errs, validateDeployment(d, spec.Child("deployment"))...)
		if d.CommitStatus != nil {
			errs = append(errs, validateCommitStatus(d.CommitStatus, spec.Child("deployment", "commitStatus"))...)
		}
	}
	if m := in.Spec.MaxRevisions; m != nil && *m < 1 {
		errs = append(errs, field.Invalid(spec.Child("maxRevisions"), int64(*m),
			"must be at least 1: a stage always keeps the version it runs; leave it out for the default, 10"))
	}
	return errs
}

// validateDeployment checks what a stage names as its deployer: reports
// are matched on kind, name and namespace, so a name that can be no
// Kubernetes object's would never match one.
func validateDeployment(d *DeploymentReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch d.Kind {
	case DeploymentKindKustomization, DeploymentKindApplication:
	case "":
		errs = append(errs, field.Required(p.Child("kind"), "Kustomization (Flux) or Application (Argo CD)"))
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), d.Kind, []string{DeploymentKindKustomization, DeploymentKindApplication}))
	}
	if d.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the name of the Flux Kustomization or Argo CD Application that deploys the overlay"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, msg))
		}
	}
	if d.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(d.Namespace) {
			errs = append(errs, field.Invalid(p.Child("namespace"), d.Namespace, msg))
		}
	}
	return errs
}

// Validate reports every problem of a Landscape.
func (in *Landscape) Validate() field.ErrorList { return in.ValidateWithKeys(nil) }

// ValidateWithKeys is Validate taking the verdict on each signer key from
// keys (nil parses every key).
func (in *Landscape) ValidateWithKeys(keys *KeyVerdicts) field.ErrorList {
	errs := validateName(in.Name)
	spec := field.NewPath("spec")
	if in.Spec.Repository != nil && in.Spec.Repository.URL == "" {
		errs = append(errs, field.Required(spec.Child("repository", "url"),
			"the repository holding the stages; omit spec.repository to use the config repository"))
	}
	if in.Spec.Repository != nil && urlCarriesCredentials(in.Spec.Repository.URL) {
		errs = append(errs, field.Forbidden(spec.Child("repository", "url"),
			"must not carry credentials, which would be committed to Git for everyone who reads it: "+
				"give them to vectorflow with --username/--password-file, --token-file or the VECTORFLOW_GIT_* environment"))
	}
	if in.Spec.Path != "" {
		errs = append(errs, validateRelativePath(in.Spec.Path, spec.Child("path"), "the repository root")...)
	}
	errs = append(errs, validateApprovers(in.Spec.Signers, spec.Child("signers"), keys)...)
	return errs
}

// Validate reports every problem of a VectorTemplate.
func (in *VectorTemplate) Validate() field.ErrorList {
	errs := validateName(in.Name)
	spec := field.NewPath("spec")
	if base := in.Spec.Base; base != nil {
		if base.Kind != "" && base.Kind != VectorTemplateKind {
			errs = append(errs, field.NotSupported(spec.Child("base", "kind"), base.Kind, []string{VectorTemplateKind}))
		}
		errs = append(errs, validateReferenceName(base.Name, spec.Child("base", "name"))...)
		if base.Name != "" && base.Name == in.Name {
			errs = append(errs, field.Invalid(spec.Child("base", "name"), base.Name, "must name another VectorTemplate, not this one"))
		}
	}
	seen := make(map[string]bool, len(in.Spec.Components))
	for i, c := range in.Spec.Components {
		p := spec.Child("components").Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "the image name the overlay's images: entry matches"))
		case seen[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		seen[c.Name] = true
		errs = append(errs, validateComponentPolicy(c, p)...)
		errs = append(errs, validateSteppingStones(c.SteppingStones, p.Child("steppingStones"))...)
	}
	if in.Spec.UploadTarget != "" {
		errs = append(errs, validateUploadTarget(in.Spec.UploadTarget, spec.Child("uploadTarget"))...)
	}
	return errs
}

// validateSteppingStones: each stone is one exact release, named once.
func validateSteppingStones(stones []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range stones {
		v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(i), s, "must be an exact semver version such as 1.5.0, not a range"))
			continue
		}
		if seen[v.String()] {
			errs = append(errs, field.Duplicate(p.Index(i), s))
		}
		seen[v.String()] = true
	}
	return errs
}

// Validate reports every problem of a StageVersionUsage.
func (in *StageVersionUsage) Validate() field.ErrorList {
	errs := validateName(in.Name)
	spec := field.NewPath("spec")
	if in.Spec.Reason == "" {
		errs = append(errs, field.Required(spec.Child("reason"), "why the StageVersion is in use"))
	}
	ref, selector := in.Spec.StageVersionRef, in.Spec.StageVersionSelector
	switch {
	case ref == nil && selector == nil:
		errs = append(errs, field.Required(spec.Child("stageVersionRef"),
			"set exactly one of spec.stageVersionRef and spec.stageVersionSelector"))
	case ref != nil && selector != nil:
		errs = append(errs, field.Forbidden(spec.Child("stageVersionSelector"),
			"set exactly one of spec.stageVersionRef and spec.stageVersionSelector, not both"))
	}
	if ref != nil {
		errs = append(errs, validateReferenceName(ref.Name, spec.Child("stageVersionRef", "name"))...)
	}
	if selector != nil {
		errs = append(errs, validateStageVersionSelector(selector, spec.Child("stageVersionSelector"))...)
	}
	return errs
}

// isOCITag says whether v follows the OCI distribution spec's tag grammar,
// [A-Za-z0-9_][A-Za-z0-9._-]{0,127}. As a regular expression the bounded
// repeat compiles to 1,700 allocations, a millisecond of every process's
// start, whatever the command.
func isOCITag(v string) bool {
	if v == "" || len(v) > 128 || v[0] == '.' || v[0] == '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// isSHA256Digest says whether v is sha256: and 64 lowercase hex digits, the
// only digest form a component may be pinned to.
func isSHA256Digest(v string) bool {
	hex, ok := strings.CutPrefix(v, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func validateName(n string) field.ErrorList {
	return validateReferenceName(n, field.NewPath("metadata", "name"))
}

// validateReferenceName checks a name, or a reference to one: every object's
// name is a DNS-1123 label, so a reference that is not one can never resolve.
func validateReferenceName(n string, p *field.Path) field.ErrorList {
	if n == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(n) {
		errs = append(errs, field.Invalid(p, n, msg))
	}
	return errs
}

func validateSourceReference(ref SourceReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch ref.Kind {
	case "":
		errs = append(errs, field.Required(p.Child("kind"), "VectorTemplate or Stage"))
	case VectorTemplateKind, StageKind:
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, []string{VectorTemplateKind, StageKind}))
	}
	errs = append(errs, validateReferenceName(ref.Name, p.Child("name"))...)
	switch ref.Kind {
	case StageKind:
		errs = append(errs, validateReferenceName(ref.Landscape, p.Child("landscape"))...)
		switch ref.Readiness {
		case "", ReadinessAssigned, ReadinessActive:
		default:
			errs = append(errs, field.NotSupported(p.Child("readiness"), ref.Readiness, []string{ReadinessAssigned, ReadinessActive}))
		}
	case VectorTemplateKind:
		if ref.Landscape != "" {
			errs = append(errs, field.Forbidden(p.Child("landscape"),
				"a VectorTemplate lives in the config's own repository; remove landscape"))
		}
		if ref.Readiness != "" {
			errs = append(errs, field.Forbidden(p.Child("readiness"),
				"only a Stage source is deployed somewhere; a VectorTemplate offers its latest vector, remove readiness"))
		}
	}
	return errs
}

func validateStageReference(ref StageReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch ref.Kind {
	case "":
		errs = append(errs, field.Required(p.Child("kind"), "Stage"))
	case StageKind:
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, []string{StageKind}))
	}
	errs = append(errs, validateReferenceName(ref.Name, p.Child("name"))...)
	errs = append(errs, validateReferenceName(ref.Landscape, p.Child("landscape"))...)
	return errs
}

func validateNonNegative(d *metav1.Duration, p *field.Path) field.ErrorList {
	if d == nil || d.Duration >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, d.Duration.String(), "must be greater than or equal to 0")}
}

func validateApprovers(approvers []Approver, p *field.Path, keys *KeyVerdicts) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(approvers))
	for i, a := range approvers {
		ap := p.Index(i)
		switch {
		case a.Name == "":
			errs = append(errs, field.Required(ap.Child("name"), "who the approver is, as the audit trail shows it"))
		case seen[a.Name]:
			errs = append(errs, field.Duplicate(ap.Child("name"), a.Name))
		}
		seen[a.Name] = true
		if err := validatePublicKey(a.PublicKey, ap.Child("publicKey"), keys); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// validatePublicKey accepts an armored OpenPGP public key block or SSH
// authorized-key lines. Its errors never echo the value: a pasted private key
// must not end up in logs and statuses.
func validatePublicKey(key string, p *field.Path, keys *KeyVerdicts) *field.Error {
	trimmed := strings.TrimSpace(key)
	if trimmed == "" {
		return field.Required(p, "an armored OpenPGP public key block or an SSH public key line")
	}
	if problem := keys.of(trimmed); problem != "" {
		return field.Invalid(p, field.OmitValueType{}, problem)
	}
	return nil
}

// publicKeyProblem is what is wrong with a non-empty public key, "" when
// nothing is.
func publicKeyProblem(trimmed string) string {
	switch {
	case hasPrivateKeyHeader(trimmed):
		return "is a private key: remove it from the config and rotate it, " +
			"then paste the public key (gpg --armor --export <id>, or the .pub file of an SSH key)"
	case strings.HasPrefix(trimmed, "-----BEGIN PGP"):
		entities, err := openpgp.ReadArmoredKeyRing(strings.NewReader(trimmed))
		if err != nil {
			return fmt.Sprintf("is not a valid armored OpenPGP public key: %v", err)
		}
		for _, e := range entities {
			if e.PrivateKey != nil {
				return "is an OpenPGP private key: remove it from the config " +
					"and rotate it, then paste the public key (gpg --armor --export <id>)"
			}
		}
		return ""
	}
	rest := []byte(trimmed)
	for len(bytes.TrimSpace(rest)) > 0 {
		var err error
		if _, _, _, rest, err = ssh.ParseAuthorizedKey(rest); err != nil {
			return fmt.Sprintf("is neither an armored OpenPGP public key "+
				"block nor an SSH public key line (\"ssh-ed25519 AAAA... name\"): %v", err)
		}
	}
	return ""
}

// hasPrivateKeyHeader spots PEM and OpenPGP private key armor (OpenSSH, PKCS#1,
// PKCS#8, SEC1, "PGP PRIVATE KEY BLOCK") before any parser sees it.
func hasPrivateKeyHeader(key string) bool {
	for line := range strings.Lines(key) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "-----BEGIN ") && strings.Contains(line, "PRIVATE KEY") {
			return true
		}
	}
	return false
}

// validateRelativePath keeps a path inside root: relative, clean, slash-separated,
// and without ".." climbing out, so no config can make vectorflow read or write
// outside the repository it names.
func validateRelativePath(p string, fp *field.Path, root string) field.ErrorList {
	clean := path.Clean(p)
	switch {
	case strings.HasPrefix(p, "/"):
		return field.ErrorList{field.Invalid(fp, p, "must be relative to "+root+", without a leading /")}
	case strings.Contains(p, `\`):
		return field.ErrorList{field.Invalid(fp, p, `must use / as the separator, not \`)}
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return field.ErrorList{field.Invalid(fp, p, "must stay inside "+root+": it climbs out with ..")}
	case clean != p:
		return field.ErrorList{field.Invalid(fp, p, fmt.Sprintf("must be a clean path: write %q", clean))}
	}
	return nil
}

// validateComponentPolicy checks a component's policy, filter and order, and
// its version unless an alphabetical or numerical policy makes it optional.
func validateComponentPolicy(c ComponentSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch c.Policy {
	case "", PolicySemver:
		errs = append(errs, validateComponentVersion(c.Version, p.Child("version"))...)
	case PolicyAlphabetical, PolicyNumerical:
		if c.Version != "" {
			errs = append(errs, field.Invalid(p.Child("version"), c.Version, "must be empty with policy "+c.Policy+": the policy picks the tag"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("policy"), c.Policy, []string{PolicySemver, PolicyAlphabetical, PolicyNumerical}))
	}
	if c.Order != "" && c.Order != "asc" && c.Order != "desc" {
		errs = append(errs, field.NotSupported(p.Child("order"), c.Order, []string{"asc", "desc"}))
	}
	if f := c.FilterTags; f != nil {
		if f.Pattern == "" {
			errs = append(errs, field.Required(p.Child("filterTags", "pattern"), "a regular expression the tags must match"))
		} else if _, err := regexp.Compile(f.Pattern); err != nil {
			errs = append(errs, field.Invalid(p.Child("filterTags", "pattern"), f.Pattern, err.Error()))
		}
	}
	return errs
}

func validateComponentVersion(v string, p *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x, ^1.2) or a digest (sha256:...)")}
	}
	if strings.HasPrefix(v, "sha256:") {
		if !isSHA256Digest(v) {
			return field.ErrorList{field.Invalid(p, v, "a digest must be sha256: followed by 64 lowercase hex digits")}
		}
		return nil
	}
	if isOCITag(v) {
		return nil
	}
	// The semver error only repeats the value ("improper constraint: v"), so
	// the detail names the accepted forms instead.
	if _, err := semver.NewConstraint(v); err != nil {
		return field.ErrorList{field.Invalid(p, v,
			"must be an exact tag (1.4.2), a semver range (>=1.2.0 <2.0.0, 1.4.x, ^1.2) or a digest (sha256:...)")}
	}
	return nil
}

// validateUploadTarget wants oci://<registry host>/<repository>, with the host
// written out: "acme/vectors" would silently mean Docker Hub. A host has a dot
// or a port, or is localhost, as in Docker image references.
func validateUploadTarget(target string, p *field.Path) field.ErrorList {
	const hint = "must be oci://<registry host>/<repository>, e.g. oci://registry.example.com/acme/vectors, without a tag"
	repo, ok := strings.CutPrefix(target, "oci://")
	host, rest, _ := strings.Cut(repo, "/")
	if !ok || rest == "" || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return field.ErrorList{field.Invalid(p, target, hint)}
	}
	if _, err := name.NewRepository(repo, name.StrictValidation); err != nil {
		return field.ErrorList{field.Invalid(p, target, hint+": "+err.Error())}
	}
	return nil
}

// validateStageVersionSelector allows matchLabels on the two labels a
// StageVersion carries, compared as exact strings: the vector label's value
// is a vector reference, `<template>:<version>`, which Kubernetes label
// syntax refuses, so apimachinery's selector validation does not apply. An
// empty selector is refused: it would select, and so keep alive, every
// StageVersion there is.
func validateStageVersionSelector(s *metav1.LabelSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.MatchExpressions) > 0 {
		errs = append(errs, field.Forbidden(p.Child("matchExpressions"), "select with matchLabels on "+StageNameLabel+" and "+VectorLabel))
	}
	if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		errs = append(errs, field.Required(p, "select by at least one label, e.g. "+StageNameLabel))
	}
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		v := s.MatchLabels[k]
		switch {
		case k != StageNameLabel && k != VectorLabel:
			errs = append(errs, field.NotSupported(p.Child("matchLabels").Key(k), k, []string{StageNameLabel, VectorLabel}))
		case v == "":
			errs = append(errs, field.Required(p.Child("matchLabels").Key(k), "the stage's name or the vector, <template>:<version>"))
		case k == StageNameLabel:
			errs = append(errs, validateReferenceName(v, p.Child("matchLabels").Key(k))...)
		default:
			if _, _, err := ParseVectorRef(v); err != nil {
				errs = append(errs, field.Invalid(p.Child("matchLabels").Key(k), v, "must be a vector, <template>:<version>"))
			}
		}
	}
	return errs
}

// urlCarriesCredentials reports a URL whose user info is a secret: any user
// of an http(s) URL (a token often stands there alone) and any password.
// An ssh login name such as git@ is no secret.
func urlCarriesCredentials(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return false
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return true
	}
	return u.Scheme == "http" || u.Scheme == "https"
}
