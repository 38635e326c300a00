package overlays

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestInventory(t *testing.T) {
	manifests := []byte(`apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
`)
	got, err := Inventory(manifests)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.InventoryEntry{
		{Kind: "Service", Namespace: "shop", Name: "web"},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if d := RenderDigest(manifests); !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 || d == RenderDigest(append(manifests, ' ')) {
		t.Errorf("RenderDigest = %s", d)
	}
	if _, err := Inventory([]byte("kind: [")); err == nil {
		t.Error("broken YAML gave an inventory")
	}
}
