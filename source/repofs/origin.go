package repofs

import (
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// OriginAnnotation is the annotation kustomize's originAnnotations build
// option puts on every resource: the file it came from.
const OriginAnnotation = "config.kubernetes.io/origin"

// OriginFile reads an OriginAnnotation value of a build of dir: the file,
// relative to the repository root, that holds the resource; ok is false for
// a resource kustomize generated or fetched from a remote base.
func OriginFile(dir, annotation string) (file string, ok bool) {
	var origin struct {
		Path string `yaml:"path"`
		Repo string `yaml:"repo"`
	}
	if err := yaml.Unmarshal([]byte(annotation), &origin); err != nil || origin.Path == "" || origin.Repo != "" {
		return "", false
	}
	file = path.Join(dir, origin.Path)
	if file == ".." || strings.HasPrefix(file, "../") || path.IsAbs(file) {
		return "", false
	}
	return file, true
}
