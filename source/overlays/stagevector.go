package overlays

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// StageVector is what a stage's overlay says it runs.
type StageVector struct {
	Vector string                     // metadata.annotations["vectorflow.dev/vector"], may be empty
	Images []v1alpha1.VectorComponent // the images: entries, name->Name, newName->Image, newTag->Tag, digest->Digest, in file order
	// BuildsOn are the paths the kustomization's resources, bases and
	// components name, cleaned, relative to its directory, in file order
	// (absolute ones are left out). Relative, so that a vector read once
	// serves every overlay of the same content wherever it is.
	BuildsOn []string `json:"BuildsOn,omitempty"`
}

// Entry is the images entry that sets the version of the component whose
// image is image, as a promotion's edit takes it over: the entry named
// image (kustomize's own key), or the entry whose newName is image (a base
// with a placeholder image, each overlay saying where it comes from). The
// entry's ImageName is the name the component's containers run under.
// ok is false when no entry or more than one matches (see Entries): the
// edit refuses the latter, naming both.
func (sv StageVector) Entry(image string) (entry v1alpha1.VectorComponent, ok bool) {
	matched := 0
	for _, e := range sv.Images {
		if e.Name == image || e.Image == image {
			entry, matched = e, matched+1
		}
	}
	if matched != 1 {
		return v1alpha1.VectorComponent{}, false
	}
	return entry, true
}

// Contradiction says which images entry of the overlay sets one of
// components (the vector it names) to another tag or digest, "" when none
// does. An entry that leaves a field to the base, or no entry, says nothing
// the file alone can contradict.
func (sv StageVector) Contradiction(components []v1alpha1.VectorComponent) string {
	for _, c := range components {
		e, ok := sv.Entry(c.ImageName())
		if !ok || (c.Tag == "" || e.Tag == "" || e.Tag == c.Tag) && (c.Digest == "" || e.Digest == "" || e.Digest == c.Digest) {
			continue
		}
		return fmt.Sprintf("its images entry for %s sets %s, not %s", c.ImageName(), e.Version(), c.Version())
	}
	return ""
}

// Entries are all the images entries that match image by Entry's rule.
func (sv StageVector) Entries(image string) []v1alpha1.VectorComponent {
	var out []v1alpha1.VectorComponent
	for _, e := range sv.Images {
		if e.Name == image || e.Image == image {
			out = append(out, e)
		}
	}
	return out
}

// ReadStageVector parses the overlay's kustomization file (kustomization.yaml, kustomization.yml or Kustomization) in dir.
func ReadStageVector(tree repofs.Tree, dir string) (StageVector, error) {
	file, data, err := ReadKustomization(tree, dir)
	if err != nil {
		return StageVector{}, err
	}
	return ParseStageVector(file, data)
}

// ReadKustomization reads the overlay's one kustomization file in dir and
// says which it is. With ParseStageVector it is ReadStageVector in two
// steps, for callers that read many overlays one by one (a read budget
// then runs out at the same overlay every time) and parse them on every
// core.
func ReadKustomization(tree repofs.Tree, dir string) (file string, data []byte, err error) {
	dir, err = repofs.CleanDir(dir)
	if err != nil {
		return "", nil, err
	}
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		candidate := path.Join(dir, name)
		content, err := tree.ReadFile(candidate)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("read stage overlay %s: %w", candidate, err)
		}
		if file != "" {
			return "", nil, fmt.Errorf("stage overlay %s has both %s and %s: keep one", dir, path.Base(file), name)
		}
		file, data = candidate, content
	}
	if file == "" {
		return "", nil, fmt.Errorf("stage overlay %s: no kustomization.yaml, kustomization.yml or Kustomization: %w", dir, fs.ErrNotExist)
	}
	return file, data, nil
}

// ParseStageVector reads the vector annotation and the images of one
// kustomization file. Scalars keep their text: a tag written 1.20 stays "1.20".
func ParseStageVector(file string, data []byte) (StageVector, error) {
	if err := repofs.CheckYAML(file, data, repofs.Limits{}); err != nil {
		return StageVector{}, fmt.Errorf("parse %s: %w", file, err)
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return StageVector{}, nil // empty or only comments
		}
		return StageVector{}, fmt.Errorf("parse %s: %w", file, err)
	}
	var sv StageVector
	if node.IsNilOrEmpty() {
		return sv, nil
	}
	if node.YNode().Kind != yaml.MappingNode {
		return StageVector{}, fmt.Errorf("parse %s: a kustomization is a mapping, found %s", file, kindName(node))
	}
	vector, err := node.Pipe(yaml.Lookup("metadata", "annotations", v1alpha1.VectorAnnotation))
	if err != nil {
		return StageVector{}, fmt.Errorf("parse %s: metadata.annotations: %w", file, err)
	}
	if !vector.IsNilOrEmpty() {
		if sv.Vector, err = scalar(vector); err != nil {
			return StageVector{}, fmt.Errorf("parse %s: metadata.annotations[%q]: %w", file, v1alpha1.VectorAnnotation, err)
		}
	}
	sv.BuildsOn = buildsOn(node)
	images := node.Field("images")
	if images == nil || images.Value.IsNilOrEmpty() {
		return sv, nil
	}
	if images.Value.YNode().Kind != yaml.SequenceNode {
		return StageVector{}, fmt.Errorf("parse %s: images must be a list, found %s", file, kindName(images.Value))
	}
	elements, err := images.Value.Elements()
	if err != nil {
		return StageVector{}, fmt.Errorf("parse %s: images: %w", file, err)
	}
	for i, image := range elements {
		if image.YNode().Kind != yaml.MappingNode {
			return StageVector{}, fmt.Errorf("parse %s: images[%d] must be a mapping, found %s", file, i, kindName(image))
		}
		var c v1alpha1.VectorComponent
		for _, f := range []struct {
			key string
			to  *string
		}{{"name", &c.Name}, {"newName", &c.Image}, {"newTag", &c.Tag}, {"digest", &c.Digest}} {
			field := image.Field(f.key)
			if field == nil || field.Value.IsNilOrEmpty() {
				continue
			}
			if *f.to, err = scalar(field.Value); err != nil {
				return StageVector{}, fmt.Errorf("parse %s: images[%d].%s: %w", file, i, f.key, err)
			}
		}
		sv.Images = append(sv.Images, c)
	}
	return sv, nil
}

// buildsOn is what the kustomization names to build on. What is no list
// of strings is left to kustomize to refuse.
func buildsOn(node *yaml.RNode) []string {
	var out []string
	for _, key := range []string{"resources", "bases", "components"} {
		f := node.Field(key)
		if f == nil || f.Value.YNode().Kind != yaml.SequenceNode {
			continue
		}
		for _, e := range f.Value.YNode().Content {
			if e.Kind != yaml.ScalarNode || e.Value == "" || path.IsAbs(e.Value) {
				continue
			}
			out = append(out, path.Clean(e.Value))
		}
	}
	return out
}

func scalar(n *yaml.RNode) (string, error) {
	if n.YNode().Kind != yaml.ScalarNode {
		return "", fmt.Errorf("must be a string, found %s", kindName(n))
	}
	return n.YNode().Value, nil
}

func kindName(n *yaml.RNode) string {
	switch n.YNode().Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}
