package overlays

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Inventory lists the objects of a build's output (group, kind, namespace,
// name), in the build's order: what a StageVersion records of its render.
func Inventory(manifests []byte) ([]v1alpha1.InventoryEntry, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(manifests), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("read the rendered manifests: %w", err)
	}
	out := make([]v1alpha1.InventoryEntry, 0, len(nodes))
	for _, n := range nodes {
		group, _, _ := strings.Cut(n.GetApiVersion(), "/")
		if !strings.Contains(n.GetApiVersion(), "/") {
			group = "" // the core group: apiVersion v1
		}
		out = append(out, v1alpha1.InventoryEntry{Group: group, Kind: n.GetKind(), Namespace: n.GetNamespace(), Name: n.GetName()})
	}
	return out, nil
}

// RenderDigest is the sha256 of a build's output, "sha256:<hex>".
func RenderDigest(manifests []byte) string {
	sum := sha256.Sum256(manifests)
	return "sha256:" + hex.EncodeToString(sum[:])
}
