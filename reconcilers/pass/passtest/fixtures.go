// Package passtest holds the hand-built snapshots that the tests of a pass
// (reconcilers/pass) and of the shell that runs it (controller) decide
// over. It is imported by tests only.
package passtest

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

// T0 is when the first decision of every scenario is made.
var T0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// WantPromotion fails unless state holds promotion name in state
// want (and promoting vector, when given).
func WantPromotion(t *testing.T, state *reconcilers.State, name string, want v1alpha1.PromotionState, vector string) *v1alpha1.VectorPromotion {
	t.Helper()
	p := state.Promotions[name]
	if p == nil {
		t.Fatalf("no promotion %s; have %v", name, slices.Sorted(maps.Keys(state.Promotions)))
	}
	if p.Status.State != want || reconcilers.DeriveState(p) != want {
		t.Fatalf("%s is %s (derived %s), want %s; conditions %+v", name, p.Status.State, reconcilers.DeriveState(p), want, p.Status.Conditions)
	}
	if vector != "" && p.Spec.Vector != vector {
		t.Fatalf("%s promotes %s, want %s", name, p.Spec.Vector, vector)
	}
	return p
}

// RoundTrip passes a state through the state branch's files, as the next
// pass would read it.
func RoundTrip(t *testing.T, s *reconcilers.State) *reconcilers.State {
	t.Helper()
	files, err := reconcilers.EncodeState(s.Clone())
	if err != nil {
		t.Fatal(err)
	}
	out, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return out
}

// SnapshotSpec describes the quickstart's shape: a template acme,
// landscapes and stages dev, test and prod, and configs latest-to-dev
// (template to dev), dev-to-test and test-to-prod (stage to stage,
// approval required).
type SnapshotSpec struct {
	ServiceA                          string
	DevVector, TestVector, ProdVector string
	DevImages, TestImages, ProdImages []v1alpha1.VectorComponent
	WithoutConfig, WithoutStage       string
	Problems                          []source.Problem
}

func DefaultSnapshotSpec() SnapshotSpec { return SnapshotSpec{ServiceA: "1.0.1"} }

func (s SnapshotSpec) Build() *source.Snapshot {
	snap := &source.Snapshot{
		URL: "https://git.example.com/acme.git", Branch: "main", Commit: strings.Repeat("1", 40), ConfigPath: "vectorflow",
		Landscapes: map[string]*v1alpha1.Landscape{},
		Stages:     map[string]*v1alpha1.Stage{},
		Templates:  map[string]*v1alpha1.VectorTemplate{},
		Configs:    map[string]*v1alpha1.VectorPromotionConfig{},
		StageIndex: map[string]source.StageRef{},
		Problems:   s.Problems,
	}
	snap.Templates["acme"] = &v1alpha1.VectorTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorTemplateKind},
		ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: v1alpha1.VectorTemplateSpec{Components: []v1alpha1.ComponentSpec{
			{Name: "registry.example.com/acme/service-a", Version: s.ServiceA},
			{Name: "registry.example.com/acme/frontend", Version: "1.2.0"},
		}},
	}
	stageOverlays := map[string]struct {
		vector string
		images []v1alpha1.VectorComponent
	}{"dev": {s.DevVector, s.DevImages}, "test": {s.TestVector, s.TestImages}, "prod": {s.ProdVector, s.ProdImages}}
	for name, o := range stageOverlays {
		snap.Landscapes[name] = &v1alpha1.Landscape{ObjectMeta: metav1.ObjectMeta{Name: name}}
		key := source.StageKey(name, name)
		if key == s.WithoutStage {
			continue
		}
		overlay := "apps/overlays/" + name
		snap.Stages[key] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.StageSpec{Landscape: name, Path: overlay}}
		snap.StageIndex[key] = source.StageRef{Landscape: name, Name: name, URL: snap.URL, Branch: snap.Branch,
			Commit: snap.Commit, Overlay: overlay, OverlayHash: "hash-" + name,
			Vector: overlays.StageVector{Vector: o.vector, Images: o.images}}
	}
	configs := []*v1alpha1.VectorPromotionConfig{
		NewConfig("latest-to-dev", v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"}, "dev"),
		NewConfig("dev-to-test", v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "dev", Landscape: "dev"}, "test"),
		NewConfig("test-to-prod", v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: "test", Landscape: "test"}, "prod"),
	}
	for _, c := range configs {
		if c.Name != s.WithoutConfig {
			snap.Configs[c.Name] = c
		}
	}
	return snap
}

func NewConfig(name string, src v1alpha1.SourceReference, target string) *v1alpha1.VectorPromotionConfig {
	c := &v1alpha1.VectorPromotionConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.VectorPromotionConfigKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.VectorPromotionConfigSpec{Source: src,
			Target: v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: target, Landscape: target}},
	}
	c.Default()
	return c
}
