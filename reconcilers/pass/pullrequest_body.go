package pass

import (
	"bytes"
	"fmt"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// ManifestChanges is what a promotion changes in the rendered manifests of
// its target overlay, each object as `Kind namespace/name` (or `Kind name`).
type ManifestChanges struct {
	Added, Changed, Removed []string
}

// DiffManifests compares two kustomize outputs object by object.
func DiffManifests(before, after []byte) (ManifestChanges, error) {
	old, err := manifestObjects(before)
	if err != nil {
		return ManifestChanges{}, fmt.Errorf("rendered manifests before the promotion: %w", err)
	}
	cur, err := manifestObjects(after)
	if err != nil {
		return ManifestChanges{}, fmt.Errorf("rendered manifests after the promotion: %w", err)
	}
	var m ManifestChanges
	for id, doc := range cur {
		prev, ok := old[id]
		switch {
		case !ok:
			m.Added = append(m.Added, id)
		case prev != doc:
			m.Changed = append(m.Changed, id)
		}
	}
	for id := range old {
		if _, ok := cur[id]; !ok {
			m.Removed = append(m.Removed, id)
		}
	}
	sort.Strings(m.Added)
	sort.Strings(m.Changed)
	sort.Strings(m.Removed)
	return m, nil
}

func manifestObjects(data []byte) (map[string]string, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		id := n.GetKind() + " " + n.GetName()
		if ns := n.GetNamespace(); ns != "" {
			id = n.GetKind() + " " + ns + "/" + n.GetName()
		}
		s, err := n.String()
		if err != nil {
			return nil, err
		}
		out[id] = s
	}
	return out, nil
}

// OverlayEntries are components as the overlay's images entries the
// promotion leaves, keyed like the entries From is read from, so the table
// pairs each component with its entry: the entry the edit takes over keeps
// its name and newName (a placeholder's, a mirror's), a new one is named
// after the image.
func OverlayEntries(overlay overlays.StageVector, components []v1alpha1.VectorComponent) []v1alpha1.VectorComponent {
	out := make([]v1alpha1.VectorComponent, 0, len(components))
	for _, c := range components {
		entry := v1alpha1.VectorComponent{Name: c.ImageName()}
		if e, ok := overlay.Entry(c.ImageName()); ok {
			entry = v1alpha1.VectorComponent{Name: e.Name, Image: e.Image}
		}
		entry.Tag, entry.Digest = c.Tag, c.Digest
		out = append(out, entry)
	}
	return out
}
