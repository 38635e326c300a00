package kube

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"

	"github.com/vectorflow-dev/vectorflow/internal/testutil/kubetest"
)

// TestCRDsAreGenerated regenerates the CRDs from api/v1alpha1 with the
// pinned controller-gen and compares them with config/crd/bases: a marker
// or a field changed without `make generate` fails here.
func TestCRDsAreGenerated(t *testing.T) {
	root := kubetest.RepoRoot(t)
	out := t.TempDir()
	cmd := exec.Command(controllerGen(t), "crd", "paths=./api/...", "output:crd:artifacts:config="+out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	want := readDir(t, out)
	got := readDir(t, filepath.Join(root, "config", "crd", "bases"))
	if len(want) != 8 {
		t.Errorf("controller-gen made %d CRDs, want one per kind (8)", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config/crd/bases is not what api/v1alpha1 generates; run make generate (-generated +committed):\n%s", diff)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(bytes.TrimSpace(b))
	}
	return files
}

// controllerGen is the controller-gen hack/tools.sh builds at the pinned
// version.
func controllerGen(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("VECTORFLOW_TOOLS")
	if cache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(dir, "vectorflow", "tools")
		}
	}
	p := filepath.Join(cache, "bin", "controller-gen")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("controller-gen is required: run hack/tools.sh (make test does): %v", err)
	}
	return p
}

// TestCRDNamesAreTheCLIs: kubectl and vectorflow get know each kind by the
// same words; the CRDs' names come from markers, the CLI's from
// v1alpha1.Resources, so this keeps the two homes saying one thing.
func TestCRDNamesAreTheCLIs(t *testing.T) {
	dir := filepath.Join(kubetest.RepoRoot(t), "config", "crd", "bases")
	for _, r := range v1alpha1.Resources {
		data, err := os.ReadFile(filepath.Join(dir, v1alpha1.GroupVersion.Group+"_"+r.Plural+".yaml"))
		if err != nil {
			t.Errorf("%s: %v", r.Kind, err)
			continue
		}
		var crd struct {
			Spec struct {
				Names struct {
					Kind, Plural, Singular string
					ShortNames             []string `json:"shortNames"`
				}
			}
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		n := crd.Spec.Names
		if diff := cmp.Diff([]string{r.Kind, r.Plural, r.Singular}, []string{n.Kind, n.Plural, n.Singular}); diff != "" {
			t.Errorf("%s names (-cli +crd):\n%s", r.Kind, diff)
		}
		if diff := cmp.Diff(r.ShortNames, n.ShortNames); diff != "" {
			t.Errorf("%s short names (-cli +crd):\n%s", r.Kind, diff)
		}
	}
}
