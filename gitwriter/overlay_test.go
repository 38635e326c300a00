package gitwriter

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

var updateOverlayGolden = flag.Bool("update-overlay", false, "rewrite testdata/overlay/*/out.yaml")

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

type overlayCase struct {
	vector     string
	components []v1alpha1.VectorComponent
	// diff is the exact line diff from in.yaml to out.yaml ("-old", "+new"),
	// so a change anywhere else fails the test.
	diff []string
}

func comp(name, image, tag, digest string) v1alpha1.VectorComponent {
	return v1alpha1.VectorComponent{Name: name, Image: image, Tag: tag, Digest: digest}
}

// overlayCases drive the golden tests in testdata/overlay/<name>/.
var overlayCases = map[string]overlayCase{
	"comments": {
		vector:     "shop:2026.11.2-000000000Z",
		components: []v1alpha1.VectorComponent{comp("api", "api", "1.5.0", ""), comp("web", "", "2.0.0", "")},
		diff: []string{
			"-    vectorflow.dev/vector: shop:2026.11.1-000000000Z",
			"+    vectorflow.dev/vector: shop:2026.11.2-000000000Z",
			"-    newTag: 1.4.0 # pinned by vectorflow",
			"+    newTag: 1.5.0 # pinned by vectorflow",
		},
	},
	"indent4-wide": {
		vector:     "shop:3",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.5.0", digestA), comp("web", "", "2.0.0", ""), comp("worker", "registry.example.com/worker", "0.1.0", "")},
		diff: []string{
			"+    annotations:",
			"+        vectorflow.dev/vector: shop:3",
			"+        vectorflow.dev/components: api,registry.example.com/worker,web",
			"-        newTag: 1.4.0",
			"+        newTag: 1.5.0",
			"+        digest: " + digestA,
			"+    -   name: registry.example.com/worker",
			"+        newTag: 0.1.0",
		},
	},
	"flow-images": {
		vector:     "shop:3",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.5.0", "")},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:3",
			"+    vectorflow.dev/components: api",
			"-images: [{name: api, newTag: 1.4.0}, {name: sidecar, newTag: \"9\"}]",
			"+images:",
			"+- name: api",
			"+  newTag: 1.5.0",
			"+- name: sidecar",
			"+  newTag: \"9\"",
		},
	},
	"quoted-tags": {
		vector:     "shop:4",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.20", ""), comp("web", "", "1.20", ""), comp("worker", "", "1.20", "")},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:4",
			"+    vectorflow.dev/components: api,web,worker",
			"-  newTag: \"1.19\"",
			"+  newTag: \"1.20\"",
			"-  newTag: '1.19'",
			"+  newTag: '1.20'",
			"-  newTag: 1.2.3",
			"+  newTag: \"1.20\"",
		},
	},
	"missing-images": {
		vector:     "shop:5",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.5.0", ""), comp("web", "ghcr.io/shop/web", "", digestB)},
		diff: []string{
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:5",
			"+    vectorflow.dev/components: api,ghcr.io/shop/web",
			"+images:",
			"+- name: api",
			"+  newTag: 1.5.0",
			"+- name: ghcr.io/shop/web",
			"+  digest: " + digestB,
		},
	},
	"missing-metadata": {
		vector:     "shop:6",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.4.0", "")},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:6",
			"+    vectorflow.dev/components: api",
		},
	},
	"owned-removal": {
		vector:     "shop:7",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.4.0", ""), comp("web", "", "2.1.0", "")},
		diff: []string{
			"-    vectorflow.dev/vector: shop:1",
			"-    vectorflow.dev/components: api,cache,web",
			"+    vectorflow.dev/vector: shop:7",
			"+    vectorflow.dev/components: api,web",
			"-- name: cache # vectorflow wrote this one",
			"-  newTag: 7.0.0",
			"-  newTag: 2.0.0",
			"+  newTag: 2.1.0",
		},
	},
	"digest": {
		vector:     "shop:8",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.4.0", digestA), comp("web", "", "2.0.0", "")},
		diff: []string{
			"-    vectorflow.dev/vector: shop:1",
			"+    vectorflow.dev/vector: shop:8",
			"+  digest: " + digestA,
			"-  digest: sha256:1111111111111111111111111111111111111111111111111111111111111111",
		},
	},
	// An older vectorflow named the entry after the component: the entry is
	// now the image's. A newName on a component's entry stays: it is where
	// the stage pulls the image from.
	"newname": {
		vector:     "shop:9",
		components: []v1alpha1.VectorComponent{comp("api", "registry.example.com/shop/api", "1.4.0", ""), comp("web", "web", "2.0.0", "")},
		diff: []string{
			"-    vectorflow.dev/vector: shop:1",
			"-    vectorflow.dev/components: api,web",
			"+    vectorflow.dev/vector: shop:9",
			"+    vectorflow.dev/components: registry.example.com/shop/api,web",
			"-- name: api",
			"-  newTag: 1.4.0",
			"+- name: registry.example.com/shop/api",
			"+  newTag: 1.4.0",
		},
	},
	// The placeholder layout: the base says image: api, and the overlay's
	// entry says where api comes from. The component's image is that
	// newName, so the entry is the component's: only its tag moves.
	"placeholder": {
		vector:     "shop:2",
		components: []v1alpha1.VectorComponent{comp("api", "registry.example.com/shop/api", "1.1.0", "")},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:2",
			"+    vectorflow.dev/components: registry.example.com/shop/api",
			`-    newTag: "1.0.0"`,
			`+    newTag: "1.1.0"`,
		},
	},
	// A stage that pulls the image from a mirror keeps pulling from it: the
	// entry is taken over for its tag, its newName stays.
	"mirror": {
		vector:     "shop:2",
		components: []v1alpha1.VectorComponent{comp("api", "registry.example.com/shop/api", "1.1.0", "")},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:2",
			"+    vectorflow.dev/components: registry.example.com/shop/api",
			"-    newTag: 1.0.0",
			"+    newTag: 1.1.0",
		},
	},
	// The entry the containers match is the image's: a human's pin of it is
	// taken over in place, comments kept, and the entry an older vectorflow
	// wrote under the component's name goes.
	"takeover": {
		vector:     "shop:2",
		components: []v1alpha1.VectorComponent{comp("api", "registry.example.com/shop/api", "1.1.0", "")},
		diff: []string{
			"-    vectorflow.dev/vector: shop:1",
			"-    vectorflow.dev/components: api",
			"+    vectorflow.dev/vector: shop:2",
			"+    vectorflow.dev/components: registry.example.com/shop/api",
			`-    newTag: "1.0.0" # the version the team last tested`,
			`+    newTag: "1.1.0" # the version the team last tested`,
			"-  # an entry an older vectorflow wrote under the component's name",
			"-  - name: api",
			"-    newTag: 1.0.0",
		},
	},
	"takeover-digest": {
		vector:     "shop:3",
		components: []v1alpha1.VectorComponent{comp("api", "registry.example.com/shop/api", "", digestB)},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:3",
			"+    vectorflow.dev/components: registry.example.com/shop/api",
			"-  digest: " + digestA,
			"+  digest: " + digestB,
		},
	},
	"crlf": {
		vector:     "shop:10",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.5.0", "")},
		diff: []string{
			"+metadata:\r",
			"+  annotations:\r",
			"+    vectorflow.dev/vector: shop:10\r",
			"+    vectorflow.dev/components: api\r",
			"-  newTag: 1.4.0\r",
			"+  newTag: 1.5.0\r",
		},
	},
	"unchanged": {
		vector:     "shop:2",
		components: []v1alpha1.VectorComponent{comp("api", "api", "1.20", "")},
	},
	"empty-fields": {
		vector:     "shop:11",
		components: []v1alpha1.VectorComponent{comp("api", "", "1.5.0", "")},
		diff: []string{
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:11",
			"+    vectorflow.dev/components: api",
			"+- name: api",
			"+  newTag: 1.5.0",
		},
	},
	"numeric-tags": {
		vector:     "shop:12",
		components: []v1alpha1.VectorComponent{comp("a", "", "1.0", ""), comp("b", "", "1e3", ""), comp("c", "", "0777", ""), comp("d", "", "true", "")},
		diff: []string{
			"+metadata:",
			"+  annotations:",
			"+    vectorflow.dev/vector: shop:12",
			"+    vectorflow.dev/components: a,b,c,d",
			"-  newTag: 1.0",
			"+  newTag: \"1.0\"",
			"-  newTag: v1",
			"+  newTag: \"1e3\"",
			"-  newTag: v1",
			"+  newTag: \"0777\"",
			"-  newTag: v1",
			"+  newTag: \"true\"",
		},
	},
	"first-key": {
		vector:     "shop:13",
		components: []v1alpha1.VectorComponent{comp("api", "api", "1.4.0", "")},
		diff: []string{
			"-  annotations: {team: shop}",
			"+  annotations:",
			"+    team: shop",
			"+    vectorflow.dev/vector: shop:13",
			"+    vectorflow.dev/components: api",
			"-- digest: sha256:0000000000000000000000000000000000000000000000000000000000000001",
			"-  name: api",
			"+- name: api",
		},
	},
}

func TestEditOverlayGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "overlay", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != len(overlayCases) {
		t.Fatalf("%d case directories, %d cases: keep testdata/overlay and overlayCases in step", len(dirs), len(overlayCases))
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			tc, ok := overlayCases[name]
			if !ok {
				t.Fatalf("no overlayCases entry for %s", dir)
			}
			in := readOverlayFile(t, filepath.Join(dir, "in.yaml"))
			got, spliced, err := editOverlay(name+"/kustomization.yaml", in, tc.vector, tc.components)
			if err != nil {
				t.Fatal(err)
			}
			if !spliced {
				t.Errorf("fell back to re-writing the whole file")
			}
			golden := filepath.Join(dir, "out.yaml")
			if *updateOverlayGolden {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(string(readOverlayFile(t, golden)), string(got)); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
			}
			if diff := cmp.Diff(tc.diff, overlayLineDiff(in, got)); diff != "" {
				t.Errorf("changed lines (-want +got):\n%s", diff)
			}
			if tc.diff == nil && !bytes.Equal(in, got) {
				t.Errorf("an edit that changes nothing must return the input byte for byte")
			}
			again, err := EditOverlay(name+"/kustomization.yaml", got, tc.vector, tc.components)
			if err != nil {
				t.Fatalf("re-applying: %v", err)
			}
			if diff := cmp.Diff(string(got), string(again)); diff != "" {
				t.Errorf("re-applying is not a no-op (-first +second):\n%s", diff)
			}
			assertOverlayImages(t, in, got, tc)
		})
	}
}

// assertOverlayImages checks the data, not the text: every component's
// entry (the one named after its image, or whose newName is its image) has
// exactly the expected string fields, the name and newName it had in the
// input, and the annotations are set.
func assertOverlayImages(t *testing.T, in, out []byte, tc overlayCase) {
	t.Helper()
	type kustomization struct {
		Metadata struct {
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Images []map[string]any `yaml:"images"`
	}
	decode := func(b []byte) kustomization {
		var k kustomization
		if err := yaml.Unmarshal(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), &k); err != nil {
			t.Fatalf("does not parse: %v\n%s", err, b)
		}
		return k
	}
	entry := func(k kustomization, image string) map[string]any {
		for _, im := range k.Images {
			if im["name"] == image || im["newName"] == image {
				return im
			}
		}
		return nil
	}
	before, after := decode(in), decode(out)
	if got := after.Metadata.Annotations[v1alpha1.VectorAnnotation]; got != tc.vector {
		t.Errorf("vector annotation = %q, want %q", got, tc.vector)
	}
	for _, c := range tc.components {
		want := map[string]any{"name": c.ImageName()}
		if old := entry(before, c.ImageName()); old != nil {
			want["name"] = old["name"]
			if old["newName"] != nil {
				want["newName"] = old["newName"]
			}
		}
		if c.Tag != "" {
			want["newTag"] = c.Tag
		}
		if c.Digest != "" {
			want["digest"] = c.Digest
		}
		if diff := cmp.Diff(want, entry(after, c.ImageName())); diff != "" {
			t.Errorf("images entry %s (-want +got):\n%s", c.ImageName(), diff)
		}
	}
}

func TestEditOverlayErrors(t *testing.T) {
	api := []v1alpha1.VectorComponent{comp("api", "", "1.0.0", "")}
	tests := []struct {
		name       string
		in         string
		vector     string
		components []v1alpha1.VectorComponent
		want       string // a part of the error
	}{
		{"not yaml", "kind: [unclosed\n", "shop:1", api, "not valid YAML"},
		{"empty", "", "shop:1", api, "is empty"},
		{"scalar document", "just a string\n", "shop:1", api, "is not a YAML mapping"},
		{"list document", "- a\n- b\n", "shop:1", api, "is not a YAML mapping"},
		{"two documents", "kind: A\n---\nkind: B\n", "shop:1", api, "more than one YAML document"},
		{"images a mapping", "images:\n  api: 1.0\n", "shop:1", api, "images is not a list"},
		{"images a string", "images: api\n", "shop:1", api, "images is not a list"},
		{"entry without name", "images:\n- newTag: 1.0.0\n", "shop:1", api, "images[0] (line 2) has no name"},
		{"entry a string", "images:\n- api\n", "shop:1", api, "images[0] (line 2) is not a mapping"},
		{"duplicate entry", "images:\n- name: api\n- name: api\n", "shop:1", api, `more than one entry named "api"`},
		{"metadata a list", "metadata: [a]\n", "shop:1", api, "metadata is not a mapping"},
		{"annotations a string", "metadata:\n  annotations: x\n", "shop:1", api, "metadata.annotations is not a mapping"},
		{"merge key in a touched entry", "images:\n- <<: {newName: x}\n  name: api\n", "shop:1", api, "uses a merge key"},
		{"field twice", "images: []\nimages: []\n", "shop:1", api, `has the field "images" twice (line 2)`},
		{"no vector", "kind: Kustomization\n", "", api, "vector reference is empty"},
		{"image with a tag", "kind: Kustomization\n", "shop:1", []v1alpha1.VectorComponent{comp("api", "registry.example.com/api:1.0", "1.0", "")}, `image "registry.example.com/api:1.0" is not a valid image repository`},
		{"component without name", "kind: Kustomization\n", "shop:1", []v1alpha1.VectorComponent{{Tag: "1"}}, "component 0 has no name"},
		{"component twice", "kind: Kustomization\n", "shop:1", append(api, api...), `component "api" appears twice`},
		{"two entries for one image", "images:\n- name: registry.example.com/shop/api\n  newTag: 1.0.0\n- name: api\n  newName: registry.example.com/shop/api\n",
			"shop:1", []v1alpha1.VectorComponent{comp("api", "registry.example.com/shop/api", "1.1.0", "")},
			`images entries "registry.example.com/shop/api" (line 2) and "api" (line 4, newName registry.example.com/shop/api) both set the image of component "api"`},
		{"a key twice in an entry", "images:\n- name: api\n  newTag: 1.0.0\n  newTag: 1.1.0\n", "shop:1", api, `has the field "images[0].newTag" twice (line 4)`},
		{"a key twice deeper", "metadata:\n  labels:\n    a: x\n    a: y\n", "shop:1", api, `has the field "metadata.labels.a" twice (line 4)`},
		{"too large", "kind: Kustomization\n#" + strings.Repeat("x", maxOverlayBytes) + "\n", "shop:1", api, "more than the 1048576 a kustomization.yaml may have"},
		{"a mapping of 40,000 keys", "labels:\n" + overlayKeys(40_000), "shop:1", api, "labels (line 2) has 40000 keys, more than the 2000"},
		{"too many nodes", "resources:\n" + strings.Repeat("- x\n", maxOverlayNodes), "shop:1", api, "more than 100000 YAML nodes"},
		{"an alias bomb", overlayAliasBomb(9), "shop:1", api, "expands to more than 100000 YAML nodes through its aliases"},
		{"one entry for two components", "images:\n- name: api\n  newName: registry.example.com/shop/api\n",
			"shop:1", []v1alpha1.VectorComponent{comp("api", "", "1", ""), comp("shop-api", "registry.example.com/shop/api", "2", "")},
			`images entry "api" (line 2, newName registry.example.com/shop/api) is the entry of both components "api" and "shop-api"`},
		{"comma in name", "kind: Kustomization\n", "shop:1", []v1alpha1.VectorComponent{comp("a,b", "", "1", "")}, "may not contain a comma"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := EditOverlay("apps/overlays/dev/kustomization.yaml", []byte(tt.in), tt.vector, tt.components)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if !strings.Contains(err.Error(), "apps/overlays/dev/kustomization.yaml") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name the file and %q", err, tt.want)
			}
		})
	}
}

func overlayKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	return b.String()
}

// overlayAliasBomb is a kustomization whose last label, expanded, is 9^levels
// strings (9^9 is 387 million) in a few hundred bytes.
func overlayAliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("commonLabels:\n  l0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.Repeat(p+", ", 8)+p)
	}
	return b.String()
}

// A kustomization may repeat a value with an anchor and aliases.
func TestEditOverlayAcceptsSmallAliases(t *testing.T) {
	in := overlayAliasBomb(2) + "images:\n- name: api\n  newTag: 1.0.0\n"
	got, err := EditOverlay("k.yaml", []byte(in), "shop:1", []v1alpha1.VectorComponent{comp("api", "", "1.1.0", "")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "newTag: 1.1.0\n") || !strings.Contains(string(got), "l2: &l2 [*l1,") {
		t.Errorf("the edit did not keep the anchors or set the tag:\n%s", got)
	}
}

// A duplicate entry vectorflow does not touch is the human's business.
func TestEditOverlayIgnoresForeignDuplicates(t *testing.T) {
	in := "images:\n- name: debug\n- name: debug\n"
	got, err := EditOverlay("k.yaml", []byte(in), "shop:1", []v1alpha1.VectorComponent{comp("api", "", "1", "")})
	if err != nil {
		t.Fatal(err)
	}
	want := "images:\n- name: debug\n- name: debug\n- name: api\n  newTag: \"1\"\n" +
		"metadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestEditOverlayRendersLikeKustomizeEdit renders a base plus the overlay with
// the real kustomize CLI twice: once edited by EditOverlay, once by
// `kustomize edit set image`. Both must render the same manifests.
func TestEditOverlayRendersLikeKustomizeEdit(t *testing.T) {
	kustomize := testutil.KustomizeBinary(t)
	const base = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  selector:
    matchLabels: {app: shop}
  template:
    metadata:
      labels: {app: shop}
    spec:
      containers:
      - name: api
        image: api:0.0.1
      - name: web
        image: web
      - name: worker
        image: registry.example.com/worker:0.0.1
`
	const overlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
# pinned
images:
- name: api
  newTag: "1.19"
- name: web
  newName: ghcr.io/shop/web
  newTag: 2.0.0
`
	tests := []struct {
		name      string
		component v1alpha1.VectorComponent
	}{
		{"tag", comp("api", "", "1.20", "")},
		{"tag and digest", comp("api", "", "1.4.0", digestA)},
		{"image differs from name", comp("shop-api", "api", "1.4.0", "")},
		{"new entry", comp("registry.example.com/worker", "", "1e3", "")},
		{"new entry for an image that differs from the name", comp("worker", "registry.example.com/worker", "", digestB)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours := writeOverlayTree(t, base, overlay)
			theirs := writeOverlayTree(t, base, overlay)

			path := filepath.Join(ours, "overlay", "kustomization.yaml")
			edited, err := EditOverlay(path, readOverlayFile(t, path), "shop:1", []v1alpha1.VectorComponent{tt.component})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, edited, 0o644); err != nil {
				t.Fatal(err)
			}

			// The component's entry is named after its image, as if a
			// human set that image's version.
			c := tt.component
			arg := c.ImageName()
			if c.Tag != "" {
				arg += ":" + c.Tag
			}
			if c.Digest != "" {
				arg += "@" + c.Digest
			}
			cmd := exec.Command(kustomize, "edit", "set", "image", arg)
			cmd.Dir = filepath.Join(theirs, "overlay")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kustomize edit set image %s: %v: %s", arg, err, out)
			}

			want := testutil.KustomizeBuild(t, filepath.Join(theirs, "overlay"))
			got := testutil.KustomizeBuild(t, filepath.Join(ours, "overlay"))
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("render differs from kustomize edit set image %s (-kustomize +ours):\n%s", arg, diff)
			}
			if bytes.Equal(testutil.KustomizeBuild(t, filepath.Join(writeOverlayTree(t, base, overlay), "overlay")), got) {
				t.Errorf("the edit did not change the render: the case proves nothing")
			}
		})
	}
}

func writeOverlayTree(t *testing.T, base, overlay string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"base/deployment.yaml":       base,
		"base/kustomization.yaml":    "resources:\n- deployment.yaml\n",
		"overlay/kustomization.yaml": overlay,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readOverlayFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// overlayLineDiff is a longest-common-subsequence line diff: "-" lines of a
// that are not in b and "+" lines of b that are not in a, in order.
func overlayLineDiff(a, b []byte) []string {
	x := strings.SplitAfter(string(a), "\n")
	y := strings.SplitAfter(string(b), "\n")
	trim := func(s string) string { return strings.TrimSuffix(s, "\n") }
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var diff []string
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			diff = append(diff, "-"+trim(x[i]))
			i++
		default:
			diff = append(diff, "+"+trim(y[j]))
			j++
		}
	}
	return diff
}

func BenchmarkEditOverlay(b *testing.B) {
	in := readOverlayFile(b, filepath.Join("testdata", "overlay", "comments", "in.yaml"))
	components := []v1alpha1.VectorComponent{
		comp("api", "", "1.5.0", digestA),
		comp("web", "ghcr.io/shop/web", "2.1.0", ""),
		comp("worker", "", "0.3.0", ""),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EditOverlay("kustomization.yaml", in, "shop:2026.11.2-000000000Z", components); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEditOverlayShapes covers YAML shapes beyond the golden files: the
// exact output, that it is a fixed point, and that it decodes as wanted.
func TestEditOverlayShapes(t *testing.T) {
	api := []v1alpha1.VectorComponent{comp("api", "", "1.5.0", "")}
	tests := []struct {
		name       string
		in         string
		components []v1alpha1.VectorComponent
		want       string
		kyaml      bool // the whole file is re-written by kyaml, not spliced
	}{
		{
			name: "document start marker and no final newline",
			in:   "---\nkind: Kustomization\nimages:\n- name: api\n  newTag: 1.4.0",
			want: "---\nkind: Kustomization\nmetadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\nimages:\n- name: api\n  newTag: 1.5.0",
		},
		{
			name: "last owned entry removed, new one appended",
			in:   "metadata:\n  annotations:\n    vectorflow.dev/vector: shop:0\n    vectorflow.dev/components: old\nimages:\n- name: keep\n# about old\n- name: old\n  newTag: \"1\"\n# end\n",
			want: "metadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\nimages:\n- name: keep\n- name: api\n  newTag: 1.5.0\n# end\n",
		},
		{
			name:       "every owned entry removed",
			in:         "metadata:\n  annotations:\n    vectorflow.dev/vector: shop:0\n    vectorflow.dev/components: old\nimages:\n- name: old\n  newTag: \"1\"\nresources:\n- ../base\n",
			components: []v1alpha1.VectorComponent{},
			want:       "metadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\nimages: []\nresources:\n- ../base\n",
		},
		{
			name: "name not first, quoted multi-line tag",
			in:   "images:\n- newTag: \"1.4\n    .0\"\n  name: api\n  digest: sha256:x\nmetadata:\n  annotations:\n    note: |\n      multi\n      line\n",
			want: "images:\n- newTag: \"1.5.0\"\n  name: api\nmetadata:\n  annotations:\n    note: |\n      multi\n      line\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\n",
		},
		{
			name: "tab-free odd spacing and comments everywhere",
			in:   "images:   # list\n\n  - name: api   # the api\n\n    newTag:   \"1.4.0\"   # tag\n\n# foot\nmetadata:   # meta\n  annotations:   # ann\n    other: x   # other\n",
			want: "images:   # list\n\n  - name: api   # the api\n\n    newTag:   \"1.5.0\"   # tag\n\n# foot\nmetadata:   # meta\n  annotations:   # ann\n    other: x   # other\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\n",
		},
		{
			name: "anchors and aliases",
			in:   "x: &tag 1.4.0\nimages:\n- name: api\n  newTag: *tag\n- &w\n  name: web\n",
			want: "x: &tag 1.4.0\nimages:\n- name: api\n  newTag: 1.5.0\n- &w\n  name: web\nmetadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\n",
		},
		{
			name: "images null with explicit tilde",
			in:   "images: ~\nmetadata: {}\n",
			want: "images:\n- name: api\n  newTag: 1.5.0\nmetadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\n",
		},
		{
			name:       "insertions at one point: the deeper block first",
			in:         "kind: Kustomization\nimages:\n- name: api\nmetadata:\n  name: dev\n",
			components: []v1alpha1.VectorComponent{comp("api", "", "1.5.0", ""), comp("web", "", "2.0.0", "")},
			want:       "kind: Kustomization\nimages:\n- name: api\n  newTag: 1.5.0\n- name: web\n  newTag: 2.0.0\nmetadata:\n  name: dev\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api,web\n",
		},
		{
			name: "new images after a last metadata that gets annotations",
			in:   "kind: Kustomization\nmetadata:\n  name: dev\n",
			want: "kind: Kustomization\nmetadata:\n  name: dev\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\nimages:\n- name: api\n  newTag: 1.5.0\n",
		},
		{
			// Only all-CRLF files are converted; new lines here end in LF.
			name: "mixed line endings",
			in:   "kind: Kustomization\r\nimages:\n- name: api\r\n  newTag: 1.4.0\r\n",
			want: "kind: Kustomization\r\nmetadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\nimages:\n- name: api\r\n  newTag: 1.5.0\r\n",
		},
		{
			// A flow-style root cannot be spliced: the result is kyaml's
			// writing of the edited document.
			name:  "flow root falls back to kyaml",
			in:    "{kind: Kustomization, images: [{name: api, newTag: 1.4.0}]}\n",
			kyaml: true,
			want:  "{kind: Kustomization, metadata: {annotations: {vectorflow.dev/vector: 'shop:1', vectorflow.dev/components: api}}, images: [{name: api, newTag: 1.5.0}]}\n",
		},
		{
			name: "dash gap kept, newName kept",
			in:   "images:\n-   name: api\n    newName: api\n",
			want: "images:\n-   name: api\n    newName: api\n    newTag: 1.5.0\nmetadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: api\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			components := tt.components
			if components == nil {
				components = api
			}
			got, spliced, err := editOverlay("k.yaml", []byte(tt.in), "shop:1", components)
			if err != nil {
				t.Fatal(err)
			}
			if spliced == tt.kyaml {
				t.Errorf("spliced = %v, want %v", spliced, !tt.kyaml)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			again, err := EditOverlay("k.yaml", got, "shop:1", components)
			if err != nil || !bytes.Equal(got, again) {
				t.Errorf("re-applying is not a no-op (%v):\n%s", err, again)
			}
			assertOverlayImages(t, []byte(tt.in), got, overlayCase{vector: "shop:1", components: components})
		})
	}
}

// Values YAML 1.1 (kustomize) or 1.2 (kyaml) would read as something other
// than the same string must be quoted; the fast path must agree with
// actually parsing the value.
func TestOverlayPlainSafe(t *testing.T) {
	tests := map[string]bool{
		"1.20": false, "1.0": false, "0777": false, "1e3": false, "0x1F": false, "1_000": false,
		"1:20": false, "2026-11-29": false, ".inf": false, ".nan": false, "~": false, "null": false,
		"true": false, "yes": false, "Yes": false, "on": false, "OFF": false, "y": false, "n": false,
		"": false, " v1": false, "v1 ": false, "a: b": false, "a #b": false, "-": false, "- a": false,
		"a:": false, "*a": false, "&a": false, "!a": false, "[a]": false, "{a}": false, "'a'": false,
		"\"a\"": false, "%a": false, "@a": false, "`a": false, "a\nb": false, "a\tb": false, "é": false,
		"v1.2.3": true, "latest": true, "1.2.3": true, "sha256:" + strings.Repeat("a", 64): true,
		"shop:2026.11.29-101010000Z": true, "api,web,worker": true, "registry.example.com/shop/api": true,
		"vectorflow.dev/vector": true, "ghcr.io/x/y_z": true, "1.2.3-rc.1+build.5": true, "a#b": true,
	}
	for value, want := range tests {
		if got := overlayPlainSafe(value); got != want {
			t.Errorf("overlayPlainSafe(%q) = %v, want %v", value, got, want)
		}
		if overlayPlainWord(value) && !overlayPlainParsed(value) {
			t.Errorf("overlayPlainWord(%q) says plain, parsing disagrees", value)
		}
	}
}

// An entry vectorflow took over for a component that has left the vector
// stays when it has a newName: removing it would move the stage's
// containers to another registry. One without a newName goes.
func TestEditOverlayKeepsAnOwnedEntryWithANewName(t *testing.T) {
	in := "metadata:\n  annotations:\n    vectorflow.dev/vector: shop:1\n    vectorflow.dev/components: registry.example.com/shop/web,registry.example.com/shop/worker\n" +
		"images:\n- name: registry.example.com/shop/web\n  newName: mirror.example.com/shop/web\n  newTag: 2.0.0\n" +
		"- name: registry.example.com/shop/worker\n  newTag: 3.0.0\n"
	got, err := EditOverlay("k.yaml", []byte(in), "shop:2", []v1alpha1.VectorComponent{comp("api", "", "1", "")})
	if err != nil {
		t.Fatal(err)
	}
	want := "metadata:\n  annotations:\n    vectorflow.dev/vector: shop:2\n    vectorflow.dev/components: api\n" +
		"images:\n- name: registry.example.com/shop/web\n  newName: mirror.example.com/shop/web\n  newTag: 2.0.0\n" +
		"- name: api\n  newTag: \"1\"\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
