package gitwriter

import (
	"fmt"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// PromotionChange is the Change that writes vector into the stage overlay
// whose kustomization file is at kustomization (repository-relative). The
// edit is EditOverlay, re-applied to the overlay as it is on each tip; the
// message lists the images that changed between the overlay before and
// after, and carries t, whose Promotion is the idempotency key.
func PromotionChange(kustomization, landscape, stage, vector string, components []v1alpha1.VectorComponent, t Trailers) Change {
	return Change{
		ID: t.Promotion,
		Files: []FileEdit{{Path: kustomization, Edit: func(old []byte, exists bool) ([]byte, bool, error) {
			if !exists {
				return nil, false, fmt.Errorf("the overlay of stage %s/%s does not exist: create it or fix the Stage's spec.path", landscape, stage)
			}
			out, err := EditOverlay(kustomization, old, vector, components)
			return out, false, err
		}}},
		Message: func(diffs []FileDiff) string {
			p := Promotion{Vector: vector, Landscape: landscape, Stage: stage, Trailers: t}
			if len(diffs) == 1 {
				p.From, p.To = overlayImages(diffs[0].Old), overlayImages(diffs[0].New)
			}
			return PromotionMessage(p)
		},
	}
}

// overlayImages reads the images entries of a kustomization for the commit
// message. Scalars are kept as written, so a tag like 1.20 stays "1.20". An
// overlay that does not parse has no images to report; the edit itself has
// already rejected it.
func overlayImages(kustomization []byte) []v1alpha1.VectorComponent {
	if len(kustomization) == 0 {
		return nil
	}
	doc, err := yaml.Parse(string(kustomization))
	if err != nil {
		return nil
	}
	images, err := doc.Pipe(yaml.Lookup("images"))
	if err != nil || images == nil {
		return nil
	}
	items, err := images.Elements()
	if err != nil {
		return nil
	}
	var out []v1alpha1.VectorComponent
	for _, item := range items {
		field := func(name string) string {
			n := item.Field(name)
			if n == nil || n.Value == nil {
				return ""
			}
			return n.Value.YNode().Value
		}
		c := v1alpha1.VectorComponent{Name: field("name"), Image: field("newName"), Tag: field("newTag"), Digest: field("digest")}
		if c.Name != "" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
