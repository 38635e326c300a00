package source

import (
	"context"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// plainKustomization is a kustomization that only lists files of its own
// directory: kustomize's build of it is those files' objects, unchanged.
type plainKustomization struct {
	APIVersion string   `json:"apiVersion,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Resources  []string `json:"resources,omitempty"`
}

// plainResources returns the files a kustomization in dir lists when it
// transforms nothing: only apiVersion, kind and resources, each resource a
// YAML file inside dir, named once. Then decoding those files one by one
// gives what kustomize's build would, without its cost, which grows with
// the square of the number of objects. (One difference: kustomize refuses
// two Stages of one name in different Landscapes, which vectorflow tells
// apart, as it does in a directory without a kustomization.) Anything else (a patch, a prefix, a
// generator, a base directory, a remote resource, a file kustomize would
// refuse) is for kustomize to build, with its own errors.
func plainResources(tree repofs.Tree, dir, kustomization string) ([]string, bool) {
	data, err := tree.ReadFile(kustomization)
	if err != nil {
		return nil, false
	}
	var k plainKustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return nil, false
	}
	if k.Kind != "" && k.Kind != "Kustomization" || k.APIVersion != "" && !strings.HasPrefix(k.APIVersion, "kustomize.config.k8s.io/") {
		return nil, false
	}
	files := make([]string, 0, len(k.Resources))
	seen := make(map[string]bool, len(k.Resources))
	for _, r := range k.Resources {
		if r == "" || strings.Contains(r, "://") || strings.HasPrefix(r, "/") || strings.Contains(r, "\\") {
			return nil, false
		}
		file := path.Join(dir, r)
		if path.Clean(r) != r || strings.HasPrefix(r, "../") || r == ".." || seen[file] ||
			!(strings.HasSuffix(r, ".yaml") || strings.HasSuffix(r, ".yml")) {
			return nil, false
		}
		st, err := tree.Stat(file)
		if err != nil || !st.Mode().IsRegular() {
			return nil, false
		}
		seen[file] = true
		files = append(files, file)
	}
	return files, true
}

// decodeListed decodes files one by one, each attributed to itself.
func decodeListed(ctx context.Context, tree repofs.Tree, files []string, keys *v1alpha1.KeyVerdicts) decodedConfig {
	var d decodedConfig
	for _, file := range files {
		if ctx.Err() != nil {
			break
		}
		data, err := tree.ReadFile(file)
		if err != nil {
			d.problems = append(d.problems, readProblem(file, "cannot read", err))
			continue
		}
		objects, problems := decode(file, data, "", keys)
		d.objects = append(d.objects, objects...)
		d.problems = append(d.problems, problems...)
	}
	return d
}
