package reconcilers

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestRemovedProtected(t *testing.T) {
	ns := func(name string) v1alpha1.InventoryEntry {
		return v1alpha1.InventoryEntry{Kind: "Namespace", Name: name}
	}
	pvc := func(namespace, name string) v1alpha1.InventoryEntry {
		return v1alpha1.InventoryEntry{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: name}
	}
	crd := v1alpha1.InventoryEntry{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.acme.io"}
	deploy := v1alpha1.InventoryEntry{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	defaults := v1alpha1.DefaultProtectedKinds()

	cases := []struct {
		name     string
		from, to []v1alpha1.InventoryEntry
		kinds    []string
		want     []v1alpha1.InventoryEntry
	}{
		{"nothing removed", []v1alpha1.InventoryEntry{ns("shop"), deploy}, []v1alpha1.InventoryEntry{deploy, ns("shop")}, defaults, nil},
		{"a Namespace removed", []v1alpha1.InventoryEntry{ns("shop"), ns("old"), deploy}, []v1alpha1.InventoryEntry{ns("shop"), deploy}, defaults,
			[]v1alpha1.InventoryEntry{ns("old")}},
		{"an unprotected kind removed", []v1alpha1.InventoryEntry{deploy}, nil, defaults, nil},
		{"everything removed, sorted by kind", []v1alpha1.InventoryEntry{pvc("shop", "data"), crd, ns("shop")}, nil, defaults,
			[]v1alpha1.InventoryEntry{crd, ns("shop"), pvc("shop", "data")}},
		{"a claim moved to another namespace", []v1alpha1.InventoryEntry{pvc("shop", "data")}, []v1alpha1.InventoryEntry{pvc("store", "data")}, defaults,
			[]v1alpha1.InventoryEntry{pvc("shop", "data")}},
		{"a config protecting Deployments", []v1alpha1.InventoryEntry{deploy, ns("shop")}, nil, []string{"Deployment"},
			[]v1alpha1.InventoryEntry{deploy}},
		{"a config protecting nothing", []v1alpha1.InventoryEntry{ns("shop")}, nil, []string{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RemovedProtected(tc.from, tc.to, tc.kinds)); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProtectedKinds(t *testing.T) {
	none := []string{}
	cases := map[string]struct {
		spec *[]string
		want []string
	}{
		"default":         {nil, []string{"CustomResourceDefinition", "Namespace", "PersistentVolumeClaim"}},
		"explicitly none": {&none, []string{}},
		"own":             {&[]string{"Secret"}, []string{"Secret"}},
	}
	for name, tc := range cases {
		cfg := &v1alpha1.VectorPromotionConfig{Spec: v1alpha1.VectorPromotionConfigSpec{ProtectedKinds: tc.spec}}
		if diff := cmp.Diff(tc.want, ProtectedKinds(cfg)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
