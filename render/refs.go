package render

import (
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// kustomizationRefs lists every file or directory a kustomization file
// names: the fields kustomize loads through its loader, where a relative
// path, an absolute path or a URL is accepted. Inline patches and inline
// transformer configs (several lines) are not references. Unparseable YAML
// yields nothing: kustomize then fails on it before loading anything.
func kustomizationRefs(data []byte) []string {
	return parseKustomization(data).refs
}

// kustomizationFacts is what a build checks in a kustomization file before
// kustomize reads it.
type kustomizationFacts struct {
	refs        []string // see kustomizationRefs
	setsOpenAPI bool     // see setsOpenAPI
}

// parseKustomization parses a kustomization file once for both checks.
func parseKustomization(data []byte) kustomizationFacts {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return kustomizationFacts{setsOpenAPI: true}
	}
	return kustomizationFacts{refs: refsOf(k), setsOpenAPI: hasOpenAPI(k)}
}

func refsOf(k map[string]any) []string {
	var refs []string
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" && !strings.Contains(s, "\n") {
			refs = append(refs, s)
		}
	}
	list := func(v any, each func(any)) {
		if l, ok := v.([]any); ok {
			for _, item := range l {
				each(item)
			}
		}
	}
	field := func(name string) func(any) {
		return func(v any) {
			if m, ok := v.(map[string]any); ok {
				add(m[name])
			}
		}
	}
	for _, key := range []string{"resources", "bases", "components", "crds", "configurations",
		"generators", "transformers", "validators", "patchesStrategicMerge"} {
		list(k[key], add)
	}
	for _, key := range []string{"patches", "patchesJson6902", "replacements"} {
		list(k[key], field("path"))
	}
	for _, key := range []string{"configMapGenerator", "secretGenerator"} {
		list(k[key], func(v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			list(m["files"], func(f any) {
				if s, ok := f.(string); ok {
					// "key=path" names the key the file is stored under.
					if _, p, found := strings.Cut(s, "="); found {
						s = p
					}
					add(s)
				}
			})
			list(m["envs"], add)
			add(m["env"])
		})
	}
	if m, ok := k["openapi"].(map[string]any); ok {
		add(m["path"])
	}
	list(k["helmCharts"], func(v any) {
		if m, ok := v.(map[string]any); ok {
			add(m["valuesFile"])
			list(m["additionalValuesFiles"], add)
		}
	})
	if m, ok := k["helmGlobals"].(map[string]any); ok {
		add(m["chartHome"])
		add(m["configHome"])
	}
	return refs
}

// setsOpenAPI says whether a kustomization file may set kustomize's OpenAPI
// schema: it has an openapi field, in any letter case (kustomize decodes it
// through encoding/json, which matches field names that way), or it does
// not parse here, so cannot be shown not to.
func setsOpenAPI(data []byte) bool {
	return parseKustomization(data).setsOpenAPI
}

func hasOpenAPI(k map[string]any) bool {
	for key := range k {
		if strings.EqualFold(key, "openapi") {
			return true
		}
	}
	return false
}

// refEscape says why ref, written in a kustomization in dir, leaves the
// repository, or nil when it stays inside.
func refEscape(dir, ref string) error {
	if isRemote(ref) {
		return repofs.ErrRemoteBase
	}
	if strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, `\`) || (len(ref) > 1 && ref[1] == ':') {
		return repofs.ErrAbsolutePath
	}
	joined := path.Join(dir, strings.ReplaceAll(ref, `\`, "/"))
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return repofs.ErrOutsideRoot
	}
	return nil
}

// isRemote mirrors what kustomize fetches instead of reading from disk:
// anything with a URL scheme (http(s) files, ssh/https/file git repos), the
// go-getter "git::" prefix, scp-like "user@host:path", and github.com paths.
// It errs on the side of refusing: a local directory named "github.com" is
// fetched by kustomize too.
func isRemote(ref string) bool {
	lower := strings.ToLower(ref)
	if strings.Contains(lower, "://") || strings.HasPrefix(lower, "git::") {
		return true
	}
	host, _, _ := strings.Cut(lower, "/")
	if strings.Contains(host, "@") {
		return true
	}
	return host == "github.com" || strings.HasPrefix(host, "github.com:")
}
