package examples_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

// deployedRepository is the repository the Flux and Argo CD examples deploy:
// their READMEs tell users to copy the quickstart and add them to it.
const deployedRepository = "quickstart"

// TestOverlaysBuild renders every stage overlay of every example with the
// real kustomize CLI and checks the overlay decides what runs: each container
// image carries the overlay's tag, and every object lives in the overlay's
// namespace, which the overlay creates.
func TestOverlaysBuild(t *testing.T) {
	overlays := globDirs(t, "*/apps/overlays/*")
	if diff := cmp.Diff([]string{
		"quickstart/apps/overlays/dev", "quickstart/apps/overlays/prod", "quickstart/apps/overlays/test",
	}, overlays); diff != "" {
		t.Errorf("overlays (-want +got):\n%s", diff)
	}
	for _, dir := range overlays {
		t.Run(dir, func(t *testing.T) {
			k := readOverlay(t, dir)
			if _, _, err := v1alpha1.ParseVectorRef(k.Metadata.Annotations[v1alpha1.VectorAnnotation]); err != nil {
				t.Errorf("%s/kustomization.yaml: metadata.annotations[%s]: %v", dir, v1alpha1.VectorAnnotation, err)
			}
			tags := map[string]string{}
			for _, img := range k.Images {
				tags[img.Name] = img.Name + ":" + img.NewTag
			}
			var wantImages, gotImages, wrongNamespace []string
			namespaceCreated := false
			for _, o := range decodeRendered(t, testutil.KustomizeBuild(t, dir)) {
				namespaceCreated = namespaceCreated || o.Kind == "Namespace" && o.Metadata.Name == k.Namespace
				if o.Kind != "Namespace" && o.Metadata.Namespace != k.Namespace {
					wrongNamespace = append(wrongNamespace, o.Kind+"/"+o.Metadata.Name+" in "+o.Metadata.Namespace)
				}
				for _, c := range o.Spec.Template.Spec.Containers {
					repo, _, _ := strings.Cut(c.Image, ":")
					wantImages = append(wantImages, tags[repo])
					gotImages = append(gotImages, c.Image)
				}
			}
			if len(gotImages) != 3 {
				t.Errorf("rendered %d container images, want the 3 of the base", len(gotImages))
			}
			if diff := cmp.Diff(wantImages, gotImages); diff != "" {
				t.Errorf("rendered images do not follow the overlay's images: (-want +got):\n%s", diff)
			}
			if !namespaceCreated {
				t.Errorf("the overlay does not create its namespace %q; Flux would fail to apply it", k.Namespace)
			}
			if len(wrongNamespace) > 0 {
				t.Errorf("objects outside the overlay namespace %q: %v", k.Namespace, wrongNamespace)
			}
		})
	}
}

// TestConfigObjects decodes every object under <example>/vectorflow strictly
// into the API types and requires it to pass Default and Validate.
func TestConfigObjects(t *testing.T) {
	files := configFiles(t)
	if len(files) == 0 {
		t.Fatal("no */vectorflow/*.yaml files found")
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			for _, o := range decodeConfigFile(t, file) {
				o.object.Default()
				if errs := o.object.Validate(); len(errs) > 0 {
					t.Errorf("%s: %s %s: %v", file, o.kind, o.object.GetName(), errs.ToAggregate())
				}
			}
		})
	}
}

// TestConfigReferences checks each example is coherent as a whole: every
// reference resolves, every stage's overlay exists and names a vector of a
// template in the example, and carries an images: entry per component.
func TestConfigReferences(t *testing.T) {
	for _, example := range examplesWithConfig(t) {
		t.Run(example, func(t *testing.T) {
			c := loadConfig(t, example)
			for _, s := range c.stages {
				if c.landscapes[s.Spec.Landscape] == nil {
					t.Errorf("Stage %s: landscape %q is not defined", s.Name, s.Spec.Landscape)
				}
				dir := filepath.Join(example, filepath.FromSlash(s.Spec.Path))
				k := readOverlay(t, dir)
				template, _, err := v1alpha1.ParseVectorRef(k.Metadata.Annotations[v1alpha1.VectorAnnotation])
				if err != nil {
					t.Errorf("Stage %s: %s: %v", s.Name, dir, err)
					continue
				}
				vt := c.templates[template]
				if vt == nil {
					t.Errorf("Stage %s: %s names template %q, which is not defined", s.Name, dir, template)
					continue
				}
				var want, got []string
				for _, comp := range vt.Spec.Components {
					want = append(want, comp.Name)
				}
				for _, img := range k.Images {
					got = append(got, img.Name)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Stage %s: %s images: do not match template %s's components (-want +got):\n%s", s.Name, dir, template, diff)
				}
			}
			for _, p := range c.promotions {
				src, dst := p.Spec.Source, p.Spec.Target
				switch {
				case src.Kind == v1alpha1.VectorTemplateKind && c.templates[src.Name] == nil:
					t.Errorf("VectorPromotionConfig %s: source template %q is not defined", p.Name, src.Name)
				case src.Kind == v1alpha1.StageKind && !c.hasStage(src.Name, src.Landscape):
					t.Errorf("VectorPromotionConfig %s: source stage %s/%s is not defined", p.Name, src.Landscape, src.Name)
				}
				if !c.hasStage(dst.Name, dst.Landscape) {
					t.Errorf("VectorPromotionConfig %s: target stage %s/%s is not defined", p.Name, dst.Landscape, dst.Name)
				}
			}
			if len(c.promotions) == 0 || len(c.stages) == 0 {
				t.Errorf("%s defines %d stages and %d promotions; an example needs both", example, len(c.stages), len(c.promotions))
			}
		})
	}
}

// TestConfigKustomization renders each vectorflow/ directory with the real
// kustomize CLI: it must yield exactly the objects of its files, so none is
// forgotten in its kustomization.yaml.
func TestConfigKustomization(t *testing.T) {
	for _, example := range examplesWithConfig(t) {
		t.Run(example, func(t *testing.T) {
			var want []string
			for _, file := range configFiles(t) {
				if strings.HasPrefix(file, example+string(filepath.Separator)) {
					for _, o := range decodeConfigFile(t, file) {
						want = append(want, o.kind+"/"+o.object.GetName())
					}
				}
			}
			var got []string
			for _, o := range decodeRendered(t, testutil.KustomizeBuild(t, filepath.Join(example, "vectorflow"))) {
				got = append(got, o.Kind+"/"+o.Metadata.Name)
			}
			slices.Sort(want)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kustomize build %s/vectorflow (-files +rendered):\n%s", example, diff)
			}
		})
	}
}

// TestFluxClusters checks examples/flux/clusters: one Flux Kustomization per
// stage of the deployed repository, each pruning, polling, pointing at a
// GitRepository that is defined, and at an overlay that builds; and the
// Provider and Alert that send every one's events, signed, to /hooks/flux.
func TestFluxClusters(t *testing.T) {
	files, err := filepath.Glob("flux/clusters/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no flux/clusters/*/*.yaml files (%v)", err)
	}
	sources := map[string]bool{}
	var kustomizations []fluxKustomization
	var providers []fluxProvider
	var alerts []fluxAlert
	for _, file := range files {
		for _, doc := range splitDocuments(t, file) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch tm.APIVersion + " " + tm.Kind {
			case "source.toolkit.fluxcd.io/v1 GitRepository":
				var g fluxGitRepository
				strictDecode(t, file, doc, &g)
				requireDuration(t, file, "spec.interval", g.Spec.Interval)
				if g.Spec.URL == "" || g.Spec.Ref.Branch == "" {
					t.Errorf("%s: GitRepository %s needs spec.url and spec.ref.branch", file, g.Metadata.Name)
				}
				sources[g.Metadata.Namespace+"/"+g.Metadata.Name] = true
			case "kustomize.toolkit.fluxcd.io/v1 Kustomization":
				var k fluxKustomization
				strictDecode(t, file, doc, &k)
				requireDuration(t, file, "spec.interval", k.Spec.Interval)
				if !k.Spec.Prune {
					t.Errorf("%s: Kustomization %s: spec.prune must be true, or resources a promotion removes stay behind", file, k.Metadata.Name)
				}
				kustomizations = append(kustomizations, k)
			case "notification.toolkit.fluxcd.io/v1beta3 Provider":
				var p fluxProvider
				strictDecode(t, file, doc, &p)
				providers = append(providers, p)
			case "notification.toolkit.fluxcd.io/v1beta3 Alert":
				var a fluxAlert
				strictDecode(t, file, doc, &a)
				alerts = append(alerts, a)
			default:
				t.Errorf("%s: unexpected %s %s", file, tm.APIVersion, tm.Kind)
			}
		}
	}
	var paths []string
	for _, k := range kustomizations {
		ref := k.Spec.SourceRef
		if ref.Kind != "GitRepository" || !sources[k.Metadata.Namespace+"/"+ref.Name] {
			t.Errorf("Kustomization %s: sourceRef %s %s is not a GitRepository in namespace %s", k.Metadata.Name, ref.Kind, ref.Name, k.Metadata.Namespace)
		}
		p := path.Clean(k.Spec.Path)
		paths = append(paths, p)
		testutil.KustomizeBuild(t, filepath.Join(deployedRepository, filepath.FromSlash(p)))
	}
	slices.Sort(paths)
	if diff := cmp.Diff(stagePaths(t), paths); diff != "" {
		t.Errorf("Flux Kustomization paths vs the stages of %s (-stages +kustomizations):\n%s", deployedRepository, diff)
	}
	checkFluxFeedback(t, kustomizations, providers, alerts)
}

// checkFluxFeedback: one generic-hmac Provider posting to /hooks/flux with
// its secret's token as the HMAC key, and one Alert sending it every event
// (info and error) of every stage's Kustomization.
func checkFluxFeedback(t *testing.T, kustomizations []fluxKustomization, providers []fluxProvider, alerts []fluxAlert) {
	t.Helper()
	if len(providers) != 1 || len(alerts) != 1 {
		t.Fatalf("flux/clusters: %d Providers and %d Alerts, want one of each feeding /hooks/flux", len(providers), len(alerts))
	}
	p, a := providers[0], alerts[0]
	if p.Spec.Type != "generic-hmac" {
		t.Errorf("Provider %s: type %q, want generic-hmac: vectorflow accepts only signed events", p.Metadata.Name, p.Spec.Type)
	}
	if u, err := url.Parse(p.Spec.Address); err != nil || u.Path != "/hooks/flux" || u.Host == "" {
		t.Errorf("Provider %s: address %q must be vectorflow's http(s)://<host>/hooks/flux", p.Metadata.Name, p.Spec.Address)
	}
	if p.Spec.SecretRef.Name == "" {
		t.Errorf("Provider %s: secretRef.name is required: its token is the HMAC key", p.Metadata.Name)
	}
	if a.Spec.ProviderRef.Name != p.Metadata.Name || a.Metadata.Namespace != p.Metadata.Namespace {
		t.Errorf("Alert %s: providerRef %q, want Provider %s in its namespace", a.Metadata.Name, a.Spec.ProviderRef.Name, p.Metadata.Name)
	}
	if a.Spec.EventSeverity != "info" {
		t.Errorf("Alert %s: eventSeverity %q, want info: ReconciliationSucceeded is an info event", a.Metadata.Name, a.Spec.EventSeverity)
	}
	var want, got []string
	for _, k := range kustomizations {
		if !k.Spec.Wait {
			t.Errorf("Kustomization %s: spec.wait must be true, or ReconciliationSucceeded means applied, not healthy", k.Metadata.Name)
		}
		want = append(want, "Kustomization "+k.Metadata.Namespace+"/"+k.Metadata.Name)
	}
	for _, s := range a.Spec.EventSources {
		ns := s.Namespace
		if ns == "" {
			ns = a.Metadata.Namespace
		}
		got = append(got, s.Kind+" "+ns+"/"+s.Name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Alert %s: eventSources vs the stages' Kustomizations (-kustomizations +sources):\n%s", a.Metadata.Name, diff)
	}
}

// TestArgoCDApplicationSet checks examples/argocd: its git directory
// generator must match exactly the stage overlays of the deployed repository,
// each of which builds, and its Applications must sync on their own.
func TestArgoCDApplicationSet(t *testing.T) {
	const file = "argocd/applicationset.yaml"
	docs := splitDocuments(t, file)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1 ApplicationSet", file, len(docs))
	}
	var set argoApplicationSet
	strictDecode(t, file, docs[0], &set)
	if set.APIVersion != "argoproj.io/v1alpha1" || set.Kind != "ApplicationSet" {
		t.Fatalf("%s: %s %s, want argoproj.io/v1alpha1 ApplicationSet", file, set.APIVersion, set.Kind)
	}
	if len(set.Spec.Generators) != 1 || set.Spec.Generators[0].Git == nil {
		t.Fatalf("%s: want exactly one git generator", file)
	}
	git := set.Spec.Generators[0].Git
	var matched []string
	for _, d := range git.Directories {
		dirs := globDirs(t, filepath.Join(deployedRepository, filepath.FromSlash(d.Path)))
		for _, dir := range dirs {
			rel, err := filepath.Rel(deployedRepository, dir)
			if err != nil {
				t.Fatal(err)
			}
			matched = append(matched, filepath.ToSlash(rel))
			testutil.KustomizeBuild(t, dir)
		}
	}
	slices.Sort(matched)
	if diff := cmp.Diff(stagePaths(t), matched); diff != "" {
		t.Errorf("directories the generator matches vs the stages of %s (-stages +matched):\n%s", deployedRepository, diff)
	}
	spec := set.Spec.Template.Spec
	if diff := cmp.Diff(argoSource{RepoURL: git.RepoURL, TargetRevision: git.Revision, Path: "{{.path.path}}"}, spec.Source); diff != "" {
		t.Errorf("template source must deploy the generated directory of the same repository (-want +got):\n%s", diff)
	}
	if a := spec.SyncPolicy.Automated; a == nil || !a.Prune {
		t.Errorf("template syncPolicy.automated.prune must be set: promotions must deploy without a manual sync")
	}
	if spec.Project == "" || spec.Destination.Server == "" || spec.Destination.Namespace == "" {
		t.Errorf("template needs project, destination.server and destination.namespace: %+v", spec)
	}
}

// TestArgoCDNotifications checks examples/argocd/notifications.yaml: a
// webhook service posting to /hooks/argocd with the secret as a bearer
// token, the template vectorflow parses (source/webhook renders it over an
// Application and parses the result), a trigger sending it, and the
// ApplicationSet's Applications subscribed to that trigger and service.
// Everything the file defines is used, and everything used is defined.
func TestArgoCDNotifications(t *testing.T) {
	const file = "argocd/notifications.yaml"
	docs := splitDocuments(t, file)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1 ConfigMap", file, len(docs))
	}
	var cm struct {
		metav1.TypeMeta
		Metadata objectMeta        `json:"metadata"`
		Data     map[string]string `json:"data"`
	}
	strictDecode(t, file, docs[0], &cm)
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Metadata.Name != "argocd-notifications-cm" {
		t.Fatalf("%s: %s %s %s, want v1 ConfigMap argocd-notifications-cm", file, cm.APIVersion, cm.Kind, cm.Metadata.Name)
	}
	services, templates, triggers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for key, value := range cm.Data {
		kind, name, _ := strings.Cut(key, ".")
		switch kind {
		case "service":
			name = strings.TrimPrefix(name, "webhook.")
			services[name] = true
			var svc struct {
				URL     string `json:"url"`
				Headers []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"headers"`
			}
			strictDecode(t, file+": "+key, []byte(value), &svc)
			if u, err := url.Parse(svc.URL); err != nil || u.Path != "/hooks/argocd" || u.Host == "" {
				t.Errorf("%s: %s: url %q must be vectorflow's http(s)://<host>/hooks/argocd", file, key, svc.URL)
			}
			bearer := false
			for _, h := range svc.Headers {
				bearer = bearer || h.Name == "Authorization" && regexp.MustCompile(`^Bearer [$][\w-]+$`).MatchString(h.Value)
			}
			if !bearer {
				t.Errorf("%s: %s: needs the header Authorization: Bearer $<key of argocd-notifications-secret>", file, key)
			}
		case "template":
			templates[name] = true
			var tmpl struct {
				Webhook map[string]struct {
					Method string `json:"method"`
					Body   string `json:"body"`
				} `json:"webhook"`
			}
			strictDecode(t, file+": "+key, []byte(value), &tmpl)
			for service, hook := range tmpl.Webhook {
				if !services[service] && cm.Data["service.webhook."+service] == "" {
					t.Errorf("%s: %s sends to webhook %q, which is not defined", file, key, service)
				}
				if hook.Method != "POST" {
					t.Errorf("%s: %s: method %q, want POST", file, key, hook.Method)
				}
				if _, err := template.New(key).Funcs(template.FuncMap{"toJson": func(any) string { return "" }}).Parse(hook.Body); err != nil {
					t.Errorf("%s: %s: body: %v", file, key, err)
				}
			}
		case "trigger":
			triggers[name] = true
			var conditions []struct {
				When    string   `json:"when"`
				OncePer string   `json:"oncePer"`
				Send    []string `json:"send"`
			}
			strictDecode(t, file+": "+key, []byte(value), &conditions)
			for i, c := range conditions {
				if c.When == "" || len(c.Send) == 0 {
					t.Errorf("%s: %s[%d] needs when and send", file, key, i)
				}
				for _, tmpl := range c.Send {
					if cm.Data["template."+tmpl] == "" {
						t.Errorf("%s: %s[%d] sends template %q, which is not defined", file, key, i, tmpl)
					}
				}
			}
		default:
			t.Errorf("%s: unexpected key %q", file, key)
		}
	}

	const setFile = "argocd/applicationset.yaml"
	var set argoApplicationSet
	strictDecode(t, setFile, splitDocuments(t, setFile)[0], &set)
	var subscribed []string
	for key := range set.Spec.Template.Metadata.Annotations {
		rest, ok := strings.CutPrefix(key, "notifications.argoproj.io/subscribe.")
		if !ok {
			continue
		}
		trigger, service, _ := strings.Cut(rest, ".")
		if !triggers[trigger] || !services[service] {
			t.Errorf("%s: annotation %s names trigger %q and service %q; %s defines triggers %v and services %v",
				setFile, key, trigger, service, file, triggers, services)
		}
		subscribed = append(subscribed, trigger+"."+service)
	}
	if len(subscribed) == 0 {
		t.Errorf("%s: the Applications subscribe to no trigger of %s; vectorflow would hear nothing", setFile, file)
	}
}

// TestStageDeployments applies each deployer's stage-deployments.yaml to the
// deployed repository's vectorflow/ directory as its comment says, with the
// real kustomize CLI: every Stage must then name, in spec.deployment, the
// very Flux Kustomization or Argo CD Application that deploys its overlay.
func TestStageDeployments(t *testing.T) {
	deployers := map[string]map[string]v1alpha1.DeploymentReference{
		"flux":   fluxDeployments(t),
		"argocd": argoDeployments(t),
	}
	for example, byPath := range deployers {
		t.Run(example, func(t *testing.T) {
			dir := testutil.CopyDir(t, filepath.Join(deployedRepository, "vectorflow"))
			patch, err := os.ReadFile(filepath.Join(example, "stage-deployments.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(patch, []byte("#   patches:\n#     - path: stage-deployments.yaml\n")) {
				t.Fatalf("%s/stage-deployments.yaml no longer says how to apply it; update this test with it", example)
			}
			if err := os.WriteFile(filepath.Join(dir, "stage-deployments.yaml"), patch, 0o644); err != nil {
				t.Fatal(err)
			}
			k, err := os.OpenFile(filepath.Join(dir, "kustomization.yaml"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := k.WriteString("patches:\n  - path: stage-deployments.yaml\n"); err != nil {
				t.Fatal(err)
			}
			k.Close()

			var stages int
			for _, doc := range splitYAML(t, "kustomize output", testutil.KustomizeBuild(t, dir)) {
				var tm metav1.TypeMeta
				if err := yaml.Unmarshal(doc, &tm); err != nil || tm.Kind != v1alpha1.StageKind {
					continue
				}
				var s v1alpha1.Stage
				strictDecode(t, example+"/stage-deployments.yaml applied", doc, &s)
				stages++
				want, ok := byPath[s.Spec.Path]
				if !ok {
					t.Errorf("Stage %s: no %s object deploys its overlay %s", s.Name, example, s.Spec.Path)
					continue
				}
				if diff := cmp.Diff(&want, s.Spec.Deployment); diff != "" {
					t.Errorf("Stage %s: spec.deployment is not what deploys %s (-deployer +stage):\n%s", s.Name, s.Spec.Path, diff)
				}
			}
			if stages != len(stagePaths(t)) {
				t.Errorf("%d Stages after the patch, want %d", stages, len(stagePaths(t)))
			}
		})
	}
}

// fluxDeployments are the Flux Kustomizations of flux/clusters by the
// overlay path they deploy.
func fluxDeployments(t *testing.T) map[string]v1alpha1.DeploymentReference {
	t.Helper()
	files, err := filepath.Glob("flux/clusters/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1alpha1.DeploymentReference{}
	for _, file := range files {
		for _, doc := range splitDocuments(t, file) {
			var k fluxKustomization
			if err := yaml.Unmarshal(doc, &k); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if k.Kind == "Kustomization" && k.APIVersion == "kustomize.toolkit.fluxcd.io/v1" {
				out[path.Clean(k.Spec.Path)] = v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization, Name: k.Metadata.Name, Namespace: k.Metadata.Namespace}
			}
		}
	}
	return out
}

// argoDeployments are the Applications the ApplicationSet generates, by the
// overlay path they deploy: its name template over each directory it matches.
func argoDeployments(t *testing.T) map[string]v1alpha1.DeploymentReference {
	t.Helper()
	const file = "argocd/applicationset.yaml"
	var set argoApplicationSet
	strictDecode(t, file, splitDocuments(t, file)[0], &set)
	name, err := template.New("name").Option("missingkey=error").Parse(set.Spec.Template.Metadata.Name)
	if err != nil {
		t.Fatalf("%s: template.metadata.name: %v", file, err)
	}
	out := map[string]v1alpha1.DeploymentReference{}
	for _, d := range set.Spec.Generators[0].Git.Directories {
		for _, dir := range globDirs(t, filepath.Join(deployedRepository, filepath.FromSlash(d.Path))) {
			rel, err := filepath.Rel(deployedRepository, dir)
			if err != nil {
				t.Fatal(err)
			}
			rel = filepath.ToSlash(rel)
			var b strings.Builder
			if err := name.Execute(&b, map[string]any{"path": map[string]string{"path": rel, "basename": path.Base(rel)}}); err != nil {
				t.Fatalf("%s: template.metadata.name: %v", file, err)
			}
			// Applications live where the ApplicationSet does.
			out[rel] = v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindApplication, Name: b.String(), Namespace: set.Metadata.Namespace}
		}
	}
	return out
}

type exampleConfig struct {
	landscapes map[string]*v1alpha1.Landscape
	stages     []*v1alpha1.Stage
	templates  map[string]*v1alpha1.VectorTemplate
	promotions []*v1alpha1.VectorPromotionConfig
}

func (c exampleConfig) hasStage(name, landscape string) bool {
	return slices.ContainsFunc(c.stages, func(s *v1alpha1.Stage) bool {
		return s.Name == name && s.Spec.Landscape == landscape
	})
}

func loadConfig(t *testing.T, example string) exampleConfig {
	t.Helper()
	c := exampleConfig{
		landscapes: map[string]*v1alpha1.Landscape{},
		templates:  map[string]*v1alpha1.VectorTemplate{},
	}
	for _, file := range configFiles(t) {
		if !strings.HasPrefix(file, example+string(filepath.Separator)) {
			continue
		}
		for _, o := range decodeConfigFile(t, file) {
			switch o := o.object.(type) {
			case *v1alpha1.Landscape:
				c.landscapes[o.Name] = o
			case *v1alpha1.Stage:
				c.stages = append(c.stages, o)
			case *v1alpha1.VectorTemplate:
				c.templates[o.Name] = o
			case *v1alpha1.VectorPromotionConfig:
				c.promotions = append(c.promotions, o)
			}
		}
	}
	return c
}

// stagePaths are the overlay paths of the deployed repository's stages.
func stagePaths(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, s := range loadConfig(t, deployedRepository).stages {
		paths = append(paths, s.Spec.Path)
	}
	slices.Sort(paths)
	return paths
}

// decodedObject is one decoded config object with the calls the tests need.
type decodedObject struct {
	kind   string
	object interface {
		Default()
		Validate() field.ErrorList
		GetName() string
	}
}

// decodeConfigFile decodes every document of a vectorflow config file
// strictly: an unknown or misspelt field fails the test, as it should fail
// for a user.
func decodeConfigFile(t *testing.T, file string) []decodedObject {
	t.Helper()
	var objects []decodedObject
	for _, doc := range splitDocuments(t, file) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if tm.APIVersion != v1alpha1.GroupVersion.String() {
			t.Errorf("%s: apiVersion %q, want %q", file, tm.APIVersion, v1alpha1.GroupVersion.String())
		}
		var o decodedObject
		switch tm.Kind {
		case v1alpha1.LandscapeKind:
			o.object = &v1alpha1.Landscape{}
		case v1alpha1.StageKind:
			o.object = &v1alpha1.Stage{}
		case v1alpha1.VectorTemplateKind:
			o.object = &v1alpha1.VectorTemplate{}
		case v1alpha1.VectorPromotionConfigKind:
			o.object = &v1alpha1.VectorPromotionConfig{}
		case v1alpha1.StageVersionUsageKind:
			o.object = &v1alpha1.StageVersionUsage{}
		default:
			t.Errorf("%s: kind %q is not one a user declares", file, tm.Kind)
			continue
		}
		o.kind = tm.Kind
		strictDecode(t, file, doc, o.object)
		objects = append(objects, o)
	}
	return objects
}

// configFiles are the config object files of every example, without the
// kustomization.yaml that lists them.
func configFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*/vectorflow/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
}

func examplesWithConfig(t *testing.T) []string {
	t.Helper()
	dirs := globDirs(t, "*/vectorflow")
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	if len(dirs) == 0 {
		t.Fatal("no example has a vectorflow/ directory")
	}
	return dirs
}

func globDirs(t *testing.T, pattern string) []string {
	t.Helper()
	matches, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(matches, func(m string) bool {
		st, err := os.Stat(m)
		return err != nil || !st.IsDir()
	})
}

func splitDocuments(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return splitYAML(t, file, data)
}

func splitYAML(t *testing.T, name string, data []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// stripComments drops full-line comments, so a document of only comments
// counts as empty.
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
		}
	}
	return out.Bytes()
}

func strictDecode(t *testing.T, file string, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func requireDuration(t *testing.T, file, fieldPath, value string) {
	t.Helper()
	if d, err := time.ParseDuration(value); err != nil || d <= 0 {
		t.Errorf("%s: %s %q must be a positive duration", file, fieldPath, value)
	}
}

// overlay is the part of a stage overlay's kustomization.yaml the tests read.
type overlay struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Namespace string `json:"namespace"`
	Images    []struct {
		Name   string `json:"name"`
		NewTag string `json:"newTag"`
	} `json:"images"`
}

func readOverlay(t *testing.T, dir string) overlay {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k overlay
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// renderedObject is the part of a rendered manifest the tests read.
type renderedObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Spec struct {
				Containers []struct {
					Image string `json:"image"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func decodeRendered(t *testing.T, out []byte) []renderedObject {
	t.Helper()
	var objects []renderedObject
	for _, doc := range splitYAML(t, "kustomize output", out) {
		var o renderedObject
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("kustomize output: %v", err)
		}
		objects = append(objects, o)
	}
	return objects
}

// The Flux and Argo CD objects below model the fields the examples use, so
// strict decoding catches a misspelt or misplaced field in them.

type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

type fluxGitRepository struct {
	metav1.TypeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		Interval string `json:"interval"`
		URL      string `json:"url"`
		Ref      struct {
			Branch string `json:"branch"`
		} `json:"ref"`
	} `json:"spec"`
}

type fluxKustomization struct {
	metav1.TypeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		Interval      string `json:"interval"`
		RetryInterval string `json:"retryInterval"`
		Path          string `json:"path"`
		Prune         bool   `json:"prune"`
		Wait          bool   `json:"wait"`
		Timeout       string `json:"timeout"`
		SourceRef     struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"sourceRef"`
	} `json:"spec"`
}

type fluxProvider struct {
	metav1.TypeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		Type      string `json:"type"`
		Address   string `json:"address"`
		SecretRef struct {
			Name string `json:"name"`
		} `json:"secretRef"`
	} `json:"spec"`
}

type fluxAlert struct {
	metav1.TypeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		ProviderRef struct {
			Name string `json:"name"`
		} `json:"providerRef"`
		EventSeverity string `json:"eventSeverity"`
		EventSources  []struct {
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"eventSources"`
	} `json:"spec"`
}

type argoApplicationSet struct {
	metav1.TypeMeta
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		GoTemplate        bool     `json:"goTemplate"`
		GoTemplateOptions []string `json:"goTemplateOptions"`
		Generators        []struct {
			Git *struct {
				RepoURL     string `json:"repoURL"`
				Revision    string `json:"revision"`
				Directories []struct {
					Path string `json:"path"`
				} `json:"directories"`
			} `json:"git"`
		} `json:"generators"`
		Template struct {
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec argoApplicationSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type argoApplicationSpec struct {
	Project     string     `json:"project"`
	Source      argoSource `json:"source"`
	Destination struct {
		Server    string `json:"server"`
		Namespace string `json:"namespace"`
	} `json:"destination"`
	SyncPolicy struct {
		Automated *struct {
			Prune    bool `json:"prune"`
			SelfHeal bool `json:"selfHeal"`
		} `json:"automated"`
		SyncOptions []string `json:"syncOptions"`
	} `json:"syncPolicy"`
}

type argoSource struct {
	RepoURL        string `json:"repoURL"`
	TargetRevision string `json:"targetRevision"`
	Path           string `json:"path"`
}
