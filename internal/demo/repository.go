package demo

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Components are the quickstart's images, by their repository in the
// registry; the demo pushes tags of each.
var Components = []string{"acme/frontend", "acme/service-a", "acme/service-b"}

// VersionRange is what the demo's template asks of every component.
const VersionRange = ">=1.0.0 <2.0.0"

const exampleRegistry = "registry.example.com"

var exampleApprover = regexp.MustCompile(`publicKey: ssh-ed25519 \S+ alice@example\.com`)

// Repository turns the quickstart into the demo's repository: its images
// live in the registry at host, the template asks for VersionRange of each
// component, alice's key is the approver, and the controller's key is every
// landscape's signer. It returns the files by slash path.
func Repository(quickstart fs.FS, host string, keys Keys) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(quickstart, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(quickstart, p)
		files[p] = []byte(strings.ReplaceAll(string(b), exampleRegistry, host))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the embedded quickstart: %w", err)
	}
	promotions, ok := files["vectorflow/promotions.yaml"]
	if !ok || !exampleApprover.Match(promotions) {
		return nil, fmt.Errorf("the embedded quickstart's vectorflow/promotions.yaml has no example approver key for alice; the demo needs one to replace")
	}
	for _, p := range []string{"vectorflow/template.yaml", "vectorflow/landscapes.yaml"} {
		if _, ok := files[p]; !ok {
			return nil, fmt.Errorf("the embedded quickstart has no %s", p)
		}
	}
	files["vectorflow/promotions.yaml"] = exampleApprover.ReplaceAllLiteral(promotions, []byte("publicKey: "+keys.AlicePublicKey))
	files["vectorflow/template.yaml"] = []byte(template(host))
	files["vectorflow/landscapes.yaml"] = []byte(landscapes(keys.ControllerPublicKey))
	return files, nil
}

// WriteFiles writes files under dir.
func WriteFiles(dir string, files map[string][]byte) error {
	for p, b := range files {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func template(host string) string {
	var b strings.Builder
	b.WriteString(`# The demo's VectorTemplate: every component follows a semver range, so each
# new tag in the registry that fits makes a new vector.
apiVersion: vectorflow.dev/v1alpha1
kind: VectorTemplate
metadata:
  name: acme
spec:
  components:
`)
	for _, c := range Components {
		fmt.Fprintf(&b, "    - name: %s/%s\n      version: %q\n", host, c, VersionRange)
	}
	return b.String()
}

func landscapes(controllerKey string) string {
	var b strings.Builder
	b.WriteString("# The controller's key signs every promotion commit; audit trusts it here.\n")
	for _, name := range []string{"dev", "test", "prod"} {
		fmt.Fprintf(&b, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: %s\nspec:\n  signers:\n    - name: vectorflow\n      publicKey: |\n", name)
		for _, line := range strings.Split(strings.TrimSpace(controllerKey), "\n") {
			b.WriteString("        " + line + "\n")
		}
	}
	return b.String()
}
