package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/testutil"
	"github.com/vectorflow-dev/vectorflow/internal/testutil/kubetest"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// TestCluster runs the Kubernetes parts against a real kube-apiserver and
// etcd, with Flux's and Argo CD's published CRDs installed.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	env := kubetest.Start(t, kubetest.Options{CRDPaths: []string{filepath.Join("testdata", "crds")}})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("config applies with server-side dry run", func(t *testing.T) { testConfigDryRun(t, c) })
	t.Run("the mirror shows the state and puts a hand edit back", func(t *testing.T) { testMirror(t, env, c) })
	t.Run("Flux Kustomization and Argo CD Application status make reports", func(t *testing.T) { testDeployerWatch(t, env, c) })
}

// testConfigDryRun builds config/ and config/samples with kustomize and
// applies every object server-side, dry run: the API server validates
// them against its schemas (the CRDs' too) and admission, and stores
// nothing but the Namespace, which the rest needs to exist.
func testConfigDryRun(t *testing.T, c client.Client) {
	root := kubetest.RepoRoot(t)
	ctx := context.Background()
	var objs []*unstructured.Unstructured
	for _, dir := range []string{"config", "config/samples"} {
		objs = append(objs, decodeAll(t, testutil.KustomizeBuild(t, filepath.Join(root, dir)))...)
	}
	kinds := map[string]int{}
	for _, obj := range objs {
		kinds[obj.GetKind()]++
		if obj.GetKind() == "Namespace" {
			if err := c.Create(ctx, obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create namespace %s: %v", obj.GetName(), err)
			}
		}
		err := c.Patch(ctx, obj, client.Apply, client.DryRunAll, client.FieldOwner("vectorflow-test"), client.ForceOwnership)
		if err != nil {
			t.Errorf("server-side dry run of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	for kind, n := range map[string]int{"CustomResourceDefinition": 8, "Namespace": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1,
		"ClusterRole": 1, "ClusterRoleBinding": 1, "Deployment": 1, "Service": 1, "Secret": 3, "ConfigMap": 1} {
		if kinds[kind] != n {
			t.Errorf("config has %d %s, want %d (all: %v)", kinds[kind], kind, n, kinds)
		}
	}
}

func decodeAll(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// startManager runs Run with no repositories of its own (the mirror gets
// its observations from the test), until the test ends.
func startManager(t *testing.T, env *kubetest.Env, o Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o.Shards, o.ShardID, o.Log = 1, -1, bufferLogger(t)
	go func() { done <- Run(ctx, env.Config, o, controller.NewRunner(time.Minute, o.Log)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// mirrorFixture is what a pass of a small repository read and decided: a
// landscape, two stages, a template, a config and one promotion of one
// vector.
func mirrorFixture(repo string) controller.Observed {
	since := metav1.NewTime(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	snap := &source.Snapshot{URL: repo,
		Landscapes: map[string]*v1alpha1.Landscape{"apps": {ObjectMeta: metav1.ObjectMeta{Name: "apps"}}},
		Stages: map[string]*v1alpha1.Stage{
			"apps/dev":  {ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: v1alpha1.StageSpec{Landscape: "apps", Path: "apps/overlays/dev"}},
			"apps/test": {ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: v1alpha1.StageSpec{Landscape: "apps", Path: "apps/overlays/test"}},
		},
		Templates: map[string]*v1alpha1.VectorTemplate{"acme": {ObjectMeta: metav1.ObjectMeta{Name: "acme"},
			Spec: v1alpha1.VectorTemplateSpec{Components: []v1alpha1.ComponentSpec{{Name: "registry.example.com/acme/web", Version: "1.0.0"}}}}},
		Configs: map[string]*v1alpha1.VectorPromotionConfig{"dev-to-test": {ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test"},
			Spec: v1alpha1.VectorPromotionConfigSpec{Source: v1alpha1.SourceReference{Kind: "Stage", Name: "dev", Landscape: "apps"},
				Target: v1alpha1.StageReference{Kind: "Stage", Name: "test", Landscape: "apps"}}}},
	}
	state := reconcilers.NewState()
	state.Vectors["acme:2026.12.01"] = &v1alpha1.Vector{ObjectMeta: metav1.ObjectMeta{Name: "acme-2026.12.01"},
		Spec: v1alpha1.VectorSpec{Template: "acme", Version: "2026.12.01", Digest: "sha256:" + commitB + commitA[:24],
			Components: []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/web", Tag: "1.0.0"}}}}
	state.Stages["apps/dev"] = &v1alpha1.Stage{Status: v1alpha1.StageStatus{Vector: "acme:2026.12.01", VectorSince: &since}}
	state.Configs["dev-to-test"] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{Sequence: 1, SourceVector: "acme:2026.12.01"}}
	state.Promotions["dev-to-test-1"] = &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test-1"},
		Spec: v1alpha1.VectorPromotionSpec{VectorPromotionConfigName: "dev-to-test", Vector: "acme:2026.12.01", Sequence: 1, RequireApproval: true,
			Source: v1alpha1.SourceReference{Kind: "Stage", Name: "dev", Landscape: "apps"},
			Target: v1alpha1.StageReference{Kind: "Stage", Name: "test", Landscape: "apps"}},
		Status: v1alpha1.VectorPromotionStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.WaitingForApprovalReason, Message: "waiting for an approval", LastTransitionTime: since}}}}
	return controller.Observed{Repository: repo, Snapshot: snap, State: state}
}

// testMirror: the mirror writes what a pass observed, `kubectl get`'s
// columns show it, and a change made in the cluster (spec, status,
// deletion) is put back with a Warning Event; a promotion the state no
// longer has goes.
func testMirror(t *testing.T, env *kubetest.Env, c client.Client) {
	ctx := context.Background()
	ns := "mirror"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	m := NewMirror(ns)
	repo := "https://git.example.com/acme/platform.git"
	observed := mirrorFixture(repo)
	m.Observe(observed)
	startManager(t, env, Options{Mirror: m, MirrorNamespace: ns})

	promotion := &v1alpha1.VectorPromotion{}
	key := client.ObjectKey{Namespace: ns, Name: "dev-to-test-1"}
	eventually(t, "the promotion mirrored with its state", func() bool {
		return c.Get(ctx, key, promotion) == nil && promotion.Status.State == v1alpha1.PromotionWaiting
	})
	if got := promotion.Annotations[RepositoryAnnotation]; got != repo {
		t.Errorf("the promotion's %s is %q, want %q", RepositoryAnnotation, got, repo)
	}
	var stages v1alpha1.StageList
	var vectors v1alpha1.VectorList
	var configs v1alpha1.VectorPromotionConfigList
	eventually(t, "stages, vectors and configs mirrored", func() bool {
		return c.List(ctx, &stages, client.InNamespace(ns)) == nil && len(stages.Items) == 2 &&
			c.List(ctx, &vectors, client.InNamespace(ns)) == nil && len(vectors.Items) == 1 &&
			c.List(ctx, &configs, client.InNamespace(ns)) == nil && len(configs.Items) == 1 && configs.Items[0].Status.Sequence == 1
	})
	if v := vectors.Items[0]; v.Annotations[NameAnnotation] != "acme:2026.12.01" || v.Spec.Version != "2026.12.01" {
		t.Errorf("vector %s: annotations %v, version %q; want the state's name acme:2026.12.01 kept", v.Name, v.Annotations, v.Spec.Version)
	}
	for _, s := range stages.Items {
		if s.Name == "dev" && s.Status.Vector != "acme:2026.12.01" {
			t.Errorf("stage dev shows vector %q, want acme:2026.12.01", s.Status.Vector)
		}
	}

	// A hand edit of the spec: put back, with an Event.
	edited := promotion.DeepCopy()
	edited.Spec.Vector = "acme:2099.01.01"
	if err := c.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edited spec put back", func() bool {
		return c.Get(ctx, key, promotion) == nil && promotion.Spec.Vector == "acme:2026.12.01"
	})
	// A hand approval in the status: approvals are signed commits, never
	// a status written in the cluster.
	edited = promotion.DeepCopy()
	edited.Status.State = v1alpha1.PromotionSucceeded
	if err := c.Status().Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edited status put back", func() bool {
		return c.Get(ctx, key, promotion) == nil && promotion.Status.State == v1alpha1.PromotionWaiting
	})
	if err := c.Delete(ctx, promotion); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted promotion put back", func() bool {
		p := &v1alpha1.VectorPromotion{}
		return c.Get(ctx, key, p) == nil && p.UID != promotion.UID
	})
	eventually(t, "Warning events saying why", func() bool {
		var events eventsv1.EventList
		if c.List(ctx, &events, client.InNamespace(ns)) != nil {
			return false
		}
		n := 0
		for _, e := range events.Items {
			if e.Reason == ReadOnlyReason && e.Type == corev1.EventTypeWarning && e.Regarding.Name == "dev-to-test-1" {
				n++
			}
		}
		return n >= 2
	})

	// The state branch moves on: the promotion is cleaned up there.
	next := mirrorFixture(repo)
	delete(next.State.Promotions, "dev-to-test-1")
	m.Observe(next)
	eventually(t, "the cleaned-up promotion deleted", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, key, &v1alpha1.VectorPromotion{}))
	})
}

type recordingSink struct {
	mu      sync.Mutex
	reports []deployments.Report
}

func (s *recordingSink) ReportDeployment(r deployments.Report) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports = append(s.reports, r)
	return 1
}

func (s *recordingSink) all() []deployments.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]deployments.Report(nil), s.reports...)
}

// testDeployerWatch creates a Flux Kustomization (the published CRD) and
// writes its status as kustomize-controller does: the watch reports the
// applied revision healthy, once, and a failed new revision after it. Then
// an Argo CD Application, synced and healthy.
func testDeployerWatch(t *testing.T, env *kubetest.Env, c client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "flux-system"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	log := bufferLogger(t)
	mgr, err := manager.New(env.Config, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recordingSink{}
	if err := watchDeployments(mgr, sink, log); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(KustomizationGVK)
	ks.SetName("apps-dev")
	ks.SetNamespace(ns)
	ks.Object["spec"] = map[string]any{"interval": "10m", "path": "./apps/overlays/dev", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "platform"}}
	if err := c.Create(ctx, ks); err != nil {
		t.Fatalf("create a Kustomization: %v", err)
	}
	setStatus := func(status map[string]any) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(ks), ks); err != nil {
			t.Fatal(err)
		}
		ks.Object["status"] = status
		if err := c.Status().Update(ctx, ks); err != nil {
			t.Fatalf("write the Kustomization's status: %v", err)
		}
	}
	ready := func(status, reason, message string) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message,
			"observedGeneration": ks.GetGeneration(), "lastTransitionTime": "2026-12-01T10:00:00Z"}
	}
	setStatus(map[string]any{"lastAppliedRevision": "main@sha1:" + commitA, "lastAttemptedRevision": "main@sha1:" + commitA,
		"observedGeneration": ks.GetGeneration(),
		"conditions":         []any{ready("True", "ReconciliationSucceeded", "Applied revision: main@sha1:"+commitA)}})
	eventually(t, "a Healthy report of the applied revision", func() bool { return len(sink.all()) == 1 })
	// The same status again (a resync, another field): no second report.
	setStatus(map[string]any{"lastAppliedRevision": "main@sha1:" + commitA, "lastAttemptedRevision": "main@sha1:" + commitA,
		"observedGeneration": ks.GetGeneration(), "lastHandledReconcileAt": "2026-12-01T10:05:00Z",
		"conditions": []any{ready("True", "ReconciliationSucceeded", "Applied revision: main@sha1:"+commitA)}})
	setStatus(map[string]any{"lastAppliedRevision": "main@sha1:" + commitA, "lastAttemptedRevision": "main@sha1:" + commitB,
		"observedGeneration": ks.GetGeneration(),
		"conditions":         []any{ready("False", "HealthCheckFailed", "timeout waiting for: [Deployment/apps/web]")}})
	eventually(t, "a Failed report of the attempted revision", func() bool { return len(sink.all()) >= 2 })
	got := sink.all()[:2]
	ref := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps-dev", Namespace: ns}
	want := []deployments.Report{
		{Deployment: ref, Revision: commitA, Outcome: deployments.Healthy, Reason: "ReconciliationSucceeded",
			Message: "Applied revision: main@sha1:" + commitA, At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Channel: "cluster"},
		{Deployment: ref, Revision: commitB, Outcome: deployments.Failed, Reason: "HealthCheckFailed",
			Message: "timeout waiting for: [Deployment/apps/web]", At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Channel: "cluster"},
	}
	if len(got) != len(want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}

	// Argo CD's Application has no status subresource: its controller
	// writes status with the object.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}); err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(ApplicationGVK)
	app.SetName("apps-test")
	app.SetNamespace("argocd")
	app.Object["spec"] = map[string]any{"project": "default",
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "apps"},
		"source":      map[string]any{"repoURL": "https://git.example.com/acme/platform.git", "path": "apps/overlays/test", "targetRevision": "main"}}
	app.Object["status"] = map[string]any{"sync": map[string]any{"status": "Synced", "revision": commitB},
		"health": map[string]any{"status": "Healthy"}, "reconciledAt": "2026-12-01T10:30:00Z"}
	if err := c.Create(ctx, app); err != nil {
		t.Fatalf("create an Application: %v", err)
	}
	eventually(t, "a Healthy report of the Application's revision", func() bool { return len(sink.all()) >= 3 })
	want = append(want, deployments.Report{Deployment: v1alpha1.DeploymentReference{Kind: "Application", Name: "apps-test", Namespace: "argocd"},
		Revision: commitB, Outcome: deployments.Healthy, Reason: "Synced/Healthy", At: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC), Channel: "cluster"})
	got = sink.all()
	if len(got) != len(want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Revision != want[i].Revision || got[i].Outcome != want[i].Outcome || got[i].Deployment != want[i].Deployment ||
			got[i].Reason != want[i].Reason || !got[i].At.Equal(want[i].At) || got[i].Channel != want[i].Channel {
			t.Errorf("report %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// bufferLogger logs into a buffer shown when the test fails: the
// managers' goroutines may log after the test ended, which t.Log forbids.
func bufferLogger(t *testing.T) logr.Logger {
	var mu sync.Mutex
	var buf strings.Builder
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() {
			t.Logf("log:\n%s", buf.String())
		}
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&buf, "%s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
	}, funcr.Options{Verbosity: 1})
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30s waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
