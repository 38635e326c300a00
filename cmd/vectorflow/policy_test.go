package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/source/registry/registrytest"
)

// TestEveryVersionPolicyFromValidateToPromotion: the quickstart's three
// images in an in-process OCI registry, and a template that picks their
// versions by each policy there is, with and without filterTags and
// extract. For each template: validate accepts it, run assembles a vector
// and promotes it to dev, and dev's overlay names exactly the picked tags,
// pinned to the registry's digests (an exact tag and a digest are written
// as given).
func TestEveryVersionPolicyFromValidateToPromotion(t *testing.T) {
	f := newFlowFixture(t)
	reg := registrytest.Start(t)
	host := reg.Host()
	frontend := reg.PushTags(t, "acme/frontend", "1.0.0", "1.2.0", "1.3.0-rc.1", "2.0.0", "latest", "v1.4.0-alpine", "v2.1.0-alpine")
	serviceA := reg.PushTags(t, "acme/service-a", "1", "5", "10", "42")
	serviceB := reg.PushTags(t, "acme/service-b", "build-3", "build-12", "build-7", "alpha", "beta", "gamma", "2026-01-03", "2026-02-01")
	f.useRegistry(t, host)

	type image struct{ tag, digest string }
	rounds := []struct {
		name       string
		components string
		want       map[string]image // by repository
	}{{
		name: "semver range; numerical without filter; numerical with filter and extract",
		components: `
    - name: HOST/acme/frontend
      version: ">=1.0.0 <2.0.0"
    - name: HOST/acme/service-a
      policy: numerical
    - name: HOST/acme/service-b
      policy: numerical
      filterTags:
        pattern: "^build-(?P<n>[0-9]+)$"
        extract: "$n"
`,
		want: map[string]image{
			"acme/frontend":  {"1.2.0", frontend["1.2.0"]},
			"acme/service-a": {"42", serviceA["42"]},
			"acme/service-b": {"build-12", serviceB["build-12"]},
		},
	}, {
		name: "exact tag; digest; alphabetical without filter",
		components: `
    - name: HOST/acme/frontend
      version: "2.0.0"
    - name: HOST/acme/service-a
      version: "` + serviceA["5"] + `"
    - name: HOST/acme/service-b
      policy: alphabetical
`,
		want: map[string]image{
			"acme/frontend":  {"2.0.0", ""},
			"acme/service-a": {"", serviceA["5"]},
			"acme/service-b": {"gamma", serviceB["gamma"]},
		},
	}, {
		name: "semver policy with filter and extract; numerical descending with filter; alphabetical with filter and extract",
		components: `
    - name: HOST/acme/frontend
      policy: semver
      version: ">=1.0.0"
      filterTags:
        pattern: "^v(?P<v>.+)-alpine$"
        extract: "$v"
    - name: HOST/acme/service-a
      policy: numerical
      order: desc
      filterTags:
        pattern: "^[0-9]$"
    - name: HOST/acme/service-b
      policy: alphabetical
      filterTags:
        pattern: "^(?P<y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})$"
        extract: "$y$m$d"
`,
		want: map[string]image{
			"acme/frontend":  {"v2.1.0-alpine", frontend["v2.1.0-alpine"]},
			"acme/service-a": {"1", serviceA["1"]},
			"acme/service-b": {"2026-02-01", serviceB["2026-02-01"]},
		},
	}}
	for i, r := range rounds {
		f.pushTemplate(t, strings.ReplaceAll(r.components, "HOST", host))
		if out, err := f.cliE("validate"); err != nil {
			t.Fatalf("round %d (%s): validate: %v\n%s", i+1, r.name, err, out)
		}
		f.run(t)
		promotion := "latest-to-dev-" + string(rune('1'+i))
		ps := f.promotions(t)
		wantState(t, ps, promotion, v1alpha1.PromotionSucceeded)
		var want []overlayImage
		for _, repo := range []string{"acme/frontend", "acme/service-a", "acme/service-b"} {
			want = append(want, overlayImage{Name: host + "/" + repo, NewTag: r.want[repo].tag, Digest: r.want[repo].digest})
		}
		annotation, got := f.devOverlay(t)
		t.Logf("round %d: dev runs %s with %+v", i+1, annotation, got)
		if annotation != ps[promotion].Spec.Vector {
			t.Errorf("round %d (%s): dev names vector %s, want %s", i+1, r.name, annotation, ps[promotion].Spec.Vector)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round %d (%s): dev overlay images (-want +got):\n%s", i+1, r.name, diff)
		}
	}
}

type overlayImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// useRegistry points every image reference of the fixture's repository at
// host, in one commit a person pushes.
func (f *flowFixture) useRegistry(t *testing.T, host string) {
	t.Helper()
	dir := f.clone(t)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "registry.example.com", host)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, nil, "commit", "-qam", "images from "+host)
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
}

// pushTemplate replaces template acme's components.
func (f *flowFixture) pushTemplate(t *testing.T, components string) {
	t.Helper()
	dir := f.clone(t)
	tmpl := "apiVersion: vectorflow.dev/v1alpha1\nkind: VectorTemplate\nmetadata:\n  name: acme\nspec:\n  components:" + components
	writeFile(t, filepath.Join(dir, "vectorflow"), "template.yaml", []byte(tmpl))
	testutil.Git(t, dir, nil, "commit", "-qam", "template acme")
	testutil.Git(t, dir, nil, "push", "-q", "origin", "main")
}

// devOverlay is the vector annotation and the images of dev's overlay on main.
func (f *flowFixture) devOverlay(t *testing.T) (string, []overlayImage) {
	t.Helper()
	data := readFile(t, filepath.Join(f.clone(t), "apps", "overlays", "dev", "kustomization.yaml"))
	var overlay struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Images []overlayImage `json:"images"`
	}
	if err := yaml.Unmarshal([]byte(data), &overlay); err != nil {
		t.Fatalf("dev overlay: %v\n%s", err, data)
	}
	return overlay.Metadata.Annotations[v1alpha1.VectorAnnotation], overlay.Images
}
