// Package bench is `make bench`: it builds config repositories of a given
// shape and size, and turns the timings of vectorflow, the shell way and a
// bare push against the same git server into one table of medians, ratios
// and scaling exponents. The repositories and the table are pure; the
// harness that runs the processes is bench_test.go, so it can reuse
// internal/testutil's git server and keys.
package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vectorflow-dev/vectorflow/internal/demo"
)

// Shape is how a repository's stages are arranged.
type Shape string

const (
	// Chain is one template and one deep chain of N stages: the first
	// stage follows the template on its own, every later one waits for an
	// approver.
	Chain Shape = "chain"
	// Apps is N/10 applications, each a template with a chain of 10
	// stages, the common monorepo.
	Apps Shape = "apps"
	// Blobs is a 10-stage chain beside large unrelated binary files.
	Blobs Shape = "blobs"
	// Auto is one deep chain of N stages that all follow on their own: a
	// template change has to reach the last stage, Overlay, in one
	// run --once however deep.
	Auto Shape = "auto"
	// AppsAuto is Apps where every stage follows on its own: the cold
	// run promotes every stage of every application, and a template
	// change has to reach the first application's last stage, Overlay.
	AppsAuto Shape = "apps-auto"
)

// Automatic is a shape whose stages all follow on their own: a template
// change is as many promotions as its chain has stages, not one.
func (s Shape) Automatic() bool { return s == Auto || s == AppsAuto }

// Repository is a generated config repository and where its one template
// promotion lands.
type Repository struct {
	Shape  Shape
	Stages int
	// Files are the configs, overlays and bases, small enough to hold.
	Files map[string][]byte
	// BlobBytes is the size of Blobs' unrelated files, which are not in
	// Files: Write makes them one at a time, so a gigabyte of them never
	// sits in the memory of the process that generates it.
	BlobBytes int64
	// Template is the file whose Component's version a promotion bumps,
	// from Version; the first stage's overlay, Overlay, then names the new
	// tag for Image.
	Template, Component, Version string
	Overlay, Image               string
	// Overlays are every stage's overlay directory.
	Overlays []string
}

// Bump is the template file with the bumped component at version.
func (r Repository) Bump(current []byte, from, to string) ([]byte, error) {
	old := fmt.Sprintf("- name: %s\n      version: %q\n", r.Component, from)
	if !bytes.Contains(current, []byte(old)) {
		return nil, fmt.Errorf("%s has no %q at version %s to bump", r.Template, r.Component, from)
	}
	return bytes.Replace(current, []byte(old), []byte(fmt.Sprintf("- name: %s\n      version: %q\n", r.Component, to)), 1), nil
}

// Generate builds a repository of shape with stages stages; every approval
// names approverKey (an armored OpenPGP public key, so the configs carry
// what real ones do). blobBytes is the size of the unrelated files of Blobs.
func Generate(shape Shape, stages int, approverKey []byte, blobBytes int64) (Repository, error) {
	if stages < 1 {
		return Repository{}, fmt.Errorf("a repository needs at least one stage, not %d", stages)
	}
	switch shape {
	case Chain:
		return chain(stages, approverKey), nil
	case Apps, AppsAuto:
		if stages%10 != 0 {
			return Repository{}, fmt.Errorf("shape %s has 10 stages per application: %d stages is not a multiple of 10", shape, stages)
		}
		if shape == Apps {
			return apps(stages, approverKey), nil
		}
		r := apps(stages, nil)
		r.Shape, r.Overlay = AppsAuto, "apps/app0000/overlays/s10"
		return r, nil
	case Auto:
		r := chain(stages, nil)
		r.Shape, r.Overlay = Auto, fmt.Sprintf("apps/overlays/dev%d", stages)
		return r, nil
	case Blobs:
		if blobBytes < 0 {
			return Repository{}, fmt.Errorf("shape blobs needs a size of blobs of at least 0 bytes, not %d", blobBytes)
		}
		r := chain(stages, approverKey)
		r.Shape, r.BlobBytes = Blobs, blobBytes
		return r, nil
	}
	return Repository{}, fmt.Errorf("unknown shape %q (want chain, apps, apps-auto, auto or blobs)", shape)
}

const kustomizationHeader = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"

// stagesPerFile keeps every config file small, as people split them.
const stagesPerFile = 100

func chain(n int, key []byte) Repository {
	const prefix = "registry.example.com/acme/"
	files := map[string][]byte{
		"apps/base/kustomization.yaml": []byte(kustomizationHeader + "resources:\n  - app.yaml\n"),
		"apps/base/app.yaml":           []byte(deployment("app", prefix)),
	}
	resources := []string{"landscapes.yaml", "template.yaml"}
	var overlays []string
	files["vectorflow/landscapes.yaml"] = []byte(landscape("chain"))
	files["vectorflow/template.yaml"] = []byte(template("acme", prefix))
	for first := 1; first <= n; first += stagesPerFile {
		var b strings.Builder
		for i := first; i < first+stagesPerFile && i <= n; i++ {
			stage := fmt.Sprintf("dev%d", i)
			b.WriteString(stageObject(stage, "chain", "apps/overlays/"+stage))
			if i == 1 {
				b.WriteString(config("to-dev1", "VectorTemplate", "acme", "", stage, "chain", nil))
			} else {
				prev := fmt.Sprintf("dev%d", i-1)
				b.WriteString(config(prev+"-to-"+stage, "Stage", prev, "chain", stage, "chain", key))
			}
			files["apps/overlays/"+stage+"/kustomization.yaml"] = []byte(overlay(stage, "../../base", prefix))
			overlays = append(overlays, "apps/overlays/"+stage)
		}
		name := fmt.Sprintf("stages-%05d.yaml", first)
		files["vectorflow/"+name] = []byte(b.String())
		resources = append(resources, name)
	}
	files["vectorflow/kustomization.yaml"] = []byte(kustomizationList(resources))
	return Repository{Shape: Chain, Stages: n, Files: files,
		Template: "vectorflow/template.yaml", Component: prefix + "app", Version: "1.0.0",
		Overlay: "apps/overlays/dev1", Image: prefix + "app", Overlays: overlays}
}

func apps(n int, key []byte) Repository {
	files := map[string][]byte{"vectorflow/landscapes.yaml": []byte(landscape("apps"))}
	resources := []string{"landscapes.yaml"}
	var overlays []string
	for a := 0; a < n/10; a++ {
		app := fmt.Sprintf("app%04d", a)
		prefix := "registry.example.com/" + app + "/"
		files["apps/"+app+"/base/kustomization.yaml"] = []byte(kustomizationHeader + "resources:\n  - app.yaml\n")
		files["apps/"+app+"/base/app.yaml"] = []byte(deployment(app, prefix))
		var b strings.Builder
		b.WriteString(template(app, prefix))
		for i := 1; i <= 10; i++ {
			stage := fmt.Sprintf("%s-s%d", app, i)
			dir := fmt.Sprintf("apps/%s/overlays/s%d", app, i)
			b.WriteString(stageObject(stage, "apps", dir))
			if i == 1 {
				b.WriteString(config("to-"+stage, "VectorTemplate", app, "", stage, "apps", nil))
			} else {
				prev := fmt.Sprintf("%s-s%d", app, i-1)
				b.WriteString(config(prev+"-to-"+stage, "Stage", prev, "apps", stage, "apps", key))
			}
			files[dir+"/kustomization.yaml"] = []byte(overlay(stage, "../../base", prefix))
			overlays = append(overlays, dir)
		}
		files["vectorflow/"+app+".yaml"] = []byte(b.String())
		resources = append(resources, app+".yaml")
	}
	files["vectorflow/kustomization.yaml"] = []byte(kustomizationList(resources))
	return Repository{Shape: Apps, Stages: n, Files: files,
		Template: "vectorflow/app0000.yaml", Component: "registry.example.com/app0000/app", Version: "1.0.0",
		Overlay: "apps/app0000/overlays/s1", Image: "registry.example.com/app0000/app", Overlays: overlays}
}

// WriteTemp is Generate's repository written into a temporary directory
// of tb (no blobs): the setup of the benchmarks and tests elsewhere that
// run on make bench's shapes.
func WriteTemp(tb testing.TB, shape Shape, stages int, approverKey []byte) (Repository, string) {
	tb.Helper()
	r, err := Generate(shape, stages, approverKey, 0)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if err := r.Write(dir); err != nil {
		tb.Fatal(err)
	}
	return r, dir
}

// Write writes the repository's files under dir, and its blobs as they are
// generated.
func (r Repository) Write(dir string) error {
	if err := demo.WriteFiles(dir, r.Files); err != nil {
		return err
	}
	return writeBlobs(dir, r.BlobBytes)
}

// blobChunk is the size of each unrelated file, and all that writeBlobs
// holds at once.
const blobChunk = 16 << 20

// writeBlobs writes incompressible files (as built artefacts and vendored
// archives are) that no config or overlay reads, total bytes in all, the
// same bytes every time.
func writeBlobs(dir string, total int64) error {
	if total <= 0 {
		return nil
	}
	assets := filepath.Join(dir, "assets")
	if err := os.MkdirAll(assets, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, blobChunk)
	for i := 0; total > 0; i++ {
		b := buf[:min(total, blobChunk)]
		for j := 0; j+8 <= len(b); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8; k++ {
				b[j+k] = byte(v >> (8 * k))
			}
		}
		if err := os.WriteFile(filepath.Join(assets, fmt.Sprintf("blob-%04d.bin", i)), b, 0o644); err != nil {
			return fmt.Errorf("write blob %d of the blobs shape: %w", i, err)
		}
		total -= int64(len(b))
	}
	return nil
}

func kustomizationList(resources []string) string {
	var b strings.Builder
	b.WriteString(kustomizationHeader + "resources:\n")
	for _, r := range resources {
		b.WriteString("  - " + r + "\n")
	}
	return b.String()
}

func landscape(name string) string {
	return "---\napiVersion: vectorflow.dev/v1alpha1\nkind: Landscape\nmetadata:\n  name: " + name + "\nspec: {}\n"
}

func template(name, prefix string) string {
	return fmt.Sprintf(`---
apiVersion: vectorflow.dev/v1alpha1
kind: VectorTemplate
metadata:
  name: %s
spec:
  components:
    - name: %sapp
      version: "1.0.0"
    - name: %sworker
      version: "1.0.0"
`, name, prefix, prefix)
}

func stageObject(name, landscape, path string) string {
	return fmt.Sprintf("---\napiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:\n  landscape: %s\n  path: %s\n", name, landscape, path)
}

// config is a VectorPromotionConfig; with an approver key it requires
// approval by that key, without one it promotes on its own.
func config(name, sourceKind, source, sourceLandscape, target, targetLandscape string, key []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata:\n  name: %s\nspec:\n  source:\n    kind: %s\n    name: %s\n", name, sourceKind, source)
	if sourceLandscape != "" {
		fmt.Fprintf(&b, "    landscape: %s\n", sourceLandscape)
	}
	fmt.Fprintf(&b, "  target:\n    kind: Stage\n    name: %s\n    landscape: %s\n", target, targetLandscape)
	if key == nil {
		b.WriteString("  approval:\n    required: false\n")
		return b.String()
	}
	b.WriteString("  approval:\n    required: true\n    approvers:\n      - name: alice\n        publicKey: |\n")
	for _, line := range strings.Split(strings.TrimSpace(string(key)), "\n") {
		b.WriteString("          " + line + "\n")
	}
	return b.String()
}

func overlay(namespace, base, prefix string) string {
	return fmt.Sprintf("%snamespace: %s\nresources:\n  - %s\nimages:\n  - name: %sapp\n    newTag: \"0.0.0\"\n  - name: %sworker\n    newTag: \"0.0.0\"\n",
		kustomizationHeader, namespace, base, prefix, prefix)
}

func deployment(name, prefix string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
        - name: app
          image: %sapp:0.0.0
        - name: worker
          image: %sworker:0.0.0
`, name, name, name, prefix, prefix)
}
