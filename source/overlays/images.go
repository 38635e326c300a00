package overlays

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// RenderedImage is the image of one container in a build's output.
type RenderedImage struct {
	// Object is `Kind namespace/name` (or `Kind name`).
	Object string
	// Container is the container's name, or its path when it has none.
	Container string
	Image     string
}

// Images finds the image of every container and initContainer in a build's
// output: any `containers` or `initContainers` list at any depth of any
// object, the fields kustomize's images: entries edit (its legacy image
// filter looks there in every kind, so custom resources count too).
func Images(manifests []byte) ([]RenderedImage, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(manifests), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("read the rendered manifests: %w", err)
	}
	var out []RenderedImage
	for _, n := range nodes {
		object := n.GetKind() + " " + n.GetName()
		if ns := n.GetNamespace(); ns != "" {
			object = n.GetKind() + " " + ns + "/" + n.GetName()
		}
		out = appendContainerImages(out, object, "", n.YNode())
	}
	return out, nil
}

func appendContainerImages(out []RenderedImage, object, path string, n *yaml.Node) []RenderedImage {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i].Value, n.Content[i+1]
			p := strings.TrimPrefix(path+"."+key, ".")
			if (key == "containers" || key == "initContainers") && value.Kind == yaml.SequenceNode {
				for j, c := range value.Content {
					if c.Kind != yaml.MappingNode {
						continue
					}
					rn := yaml.NewRNode(c)
					image := rn.Field("image")
					if image == nil || image.Value.YNode().Kind != yaml.ScalarNode {
						continue
					}
					container := fmt.Sprintf("%s[%d]", p, j)
					if name := rn.Field("name"); name != nil && name.Value.YNode().Kind == yaml.ScalarNode && name.Value.YNode().Value != "" {
						container = name.Value.YNode().Value
					}
					out = append(out, RenderedImage{Object: object, Container: container, Image: image.Value.YNode().Value})
				}
			}
			out = appendContainerImages(out, object, p, value)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			out = appendContainerImages(out, object, fmt.Sprintf("%s[%d]", path, i), c)
		}
	}
	return out
}

// ImageMatches is kustomize's rule for whether an images: entry named name
// applies to a container's image: name, then optionally a tag and a digest.
// kustomize puts name into a regular expression unquoted, and so does this;
// its own function is internal to kustomize (api/internal/image).
func ImageMatches(image, name string) bool {
	return ImageMatcher(name)(image)
}

// ImageMatcher is ImageMatches for one name against many images: the
// expression is compiled once, not once an image.
func ImageMatcher(name string) func(image string) bool {
	pattern, err := regexp.Compile("^" + name + "(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$")
	if err != nil {
		return func(string) bool { return false }
	}
	return pattern.MatchString
}

// SplitImage splits an image into its name as written, tag and digest,
// with go-containerregistry's name package. What the package refuses (a
// kustomize placeholder such as app:${TAG}) is split as kustomize splits
// it: a colon or at sign after the first slash ends the name.
func SplitImage(image string) (name, tag, digest string) {
	p := PartsOf(image)
	return p.Name, p.Tag, p.Digest
}

func kustomizeSplit(image string) (name, tag, digest string) {
	search, offset := image, 0
	if i := strings.Index(image, "/"); i > 0 {
		search, offset = image[i:], i
	}
	at, colon := strings.Index(search, "@"), strings.Index(search, ":")
	switch {
	case at < 0 && colon < 0:
		return image, "", ""
	case at >= 0 && (colon < 0 || at < colon):
		return image[:at+offset], "", image[at+offset+1:]
	case at >= 0:
		return image[:colon+offset], image[colon+offset+1 : at+offset], image[at+offset+1:]
	}
	return image[:colon+offset], image[colon+offset+1:], ""
}
