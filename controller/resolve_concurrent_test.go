package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/registry"
	"github.com/vectorflow-dev/vectorflow/source/registry/registrytest"
)

// TestSlowRegistriesAreAskedConcurrently: the tag lists of three slow
// registries are fetched at once, so a pass waits about as long as the
// slowest, not the sum; and a terminal is told which registry it waits for.
func TestSlowRegistriesAreAskedConcurrently(t *testing.T) {
	const delay = 1200 * time.Millisecond // above slowRegistryAfter, so progress shows
	tmpl := &v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}
	var images []string
	for _, repo := range []string{"acme/frontend", "acme/service-a", "acme/service-b"} {
		reg := registrytest.Start(t, registrytest.WithTagListDelay(delay))
		reg.PushTags(t, repo, "1.0.0", "1.1.0")
		image := reg.Host() + "/" + repo
		images = append(images, image)
		tmpl.Spec.Components = append(tmpl.Spec.Components, v1alpha1.ComponentSpec{Name: repo, Image: image, Version: ">=1.0.0 <2.0.0"})
	}
	snap := &source.Snapshot{Templates: map[string]*v1alpha1.VectorTemplate{"acme": tmpl}}
	resolver := func() *registry.Resolver { return registry.NewResolver(registry.Options{TagListTTL: -1}) }

	// One after another, as before: the sum of the delays.
	start := time.Now()
	for _, c := range tmpl.Spec.Components {
		if _, err := resolver().Resolve(context.Background(), c.Image, registry.ComponentVersion{Version: c.Version}); err != nil {
			t.Fatal(err)
		}
	}
	sequential := time.Since(start)

	var progress testutil.SyncBuffer
	start = time.Now()
	got := resolveComponents(context.Background(), resolver(), snap, reconcilers.NewState(), &progress)
	concurrent := time.Since(start)
	t.Logf("three registries with %v tag lists: one after another %v, concurrently %v (ratio %.2f)",
		delay, sequential.Round(time.Millisecond), concurrent.Round(time.Millisecond), float64(concurrent)/float64(sequential))

	if len(got.problems) != 0 || len(got.resolved["acme"]) != 3 {
		t.Fatalf("resolved %v, problems %v; want three components resolved", got.resolved, got.problems)
	}
	for _, c := range tmpl.Spec.Components {
		if v := got.resolved["acme"][c.Name]; !strings.HasPrefix(v, "1.1.0@sha256:") {
			t.Errorf("%s resolved to %q, want 1.1.0@sha256:...", c.Name, v)
		}
	}
	if concurrent > 2*delay {
		t.Errorf("three registries slow by %v took %v concurrently (one after another: %v); want under %v", delay, concurrent, sequential, 2*delay)
	}
	for _, image := range images {
		if !strings.Contains(progress.String(), "registry: waiting for "+image+" ...") ||
			!strings.Contains(progress.String(), "registry: "+image+" answered after") {
			t.Errorf("progress does not say it waits for %s and when it answered:\n%s", image, progress.String())
		}
	}
}

// TestFastRegistriesShowNoProgress: a registry that answers within a second
// prints nothing.
func TestFastRegistriesShowNoProgress(t *testing.T) {
	reg := registrytest.Start(t)
	reg.PushTags(t, "acme/frontend", "1.0.0")
	tmpl := &v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: v1alpha1.VectorTemplateSpec{Components: []v1alpha1.ComponentSpec{{Name: "frontend", Image: reg.Host() + "/acme/frontend", Version: "1.x"}}}}
	var progress testutil.SyncBuffer
	got := resolveComponents(context.Background(), registry.NewResolver(registry.Options{}),
		&source.Snapshot{Templates: map[string]*v1alpha1.VectorTemplate{"acme": tmpl}}, reconcilers.NewState(), &progress)
	if len(got.resolved["acme"]) != 1 || progress.String() != "" {
		t.Errorf("resolved %v, progress %q; want one component and no progress", got.resolved, progress.String())
	}
}
