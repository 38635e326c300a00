package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// Labels and annotations on every mirrored object.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "vectorflow"
	// RepositoryLabel is a hash of the config repository's normalized URL
	// (a URL is no label value); RepositoryAnnotation is the URL.
	RepositoryLabel      = "vectorflow.dev/repository"
	RepositoryAnnotation = "vectorflow.dev/repository-url"
	// NameAnnotation is the object's name in the state branch when it is
	// no Kubernetes name ("acme:2026.12.01" is the Vector acme.2026.12.01).
	NameAnnotation = "vectorflow.dev/name"
)

// ReadOnlyReason is the reason of the Event that says a change made to the
// mirror was put back.
const ReadOnlyReason = "ReadOnlyMirror"

// mirroredKinds are the kinds the mirror writes, each with whether it has a
// status subresource.
var mirroredKinds = []struct {
	newObject func() client.Object
	status    bool
}{
	{func() client.Object { return &v1alpha1.Landscape{} }, true},
	{func() client.Object { return &v1alpha1.Stage{} }, true},
	{func() client.Object { return &v1alpha1.VectorTemplate{} }, true},
	{func() client.Object { return &v1alpha1.Vector{} }, false},
	{func() client.Object { return &v1alpha1.VectorPromotionConfig{} }, true},
	{func() client.Object { return &v1alpha1.VectorPromotion{} }, true},
	{func() client.Object { return &v1alpha1.StageVersion{} }, true},
	{func() client.Object { return &v1alpha1.StageVersionUsage{} }, true},
}

// Mirror keeps the custom resources of one namespace equal to the state
// branches this replica reconciles. Passes hand it what they decided
// (Observe); a change made in the cluster is put back from the last
// observation, with an Event saying why. Git stays the source of truth:
// nothing read from the cluster ever reaches the state branch.
type Mirror struct {
	namespace string

	mu sync.Mutex
	// desired are the objects of every observed repository, by kind and
	// name; repos what each repository desires, for dropping them.
	desired map[mirrorKey]client.Object
	repos   map[string]map[mirrorKey]bool
	// applied is the resource version this replica last wrote, by key: a
	// newer one is somebody else's change.
	applied map[mirrorKey]string
	changed chan event.GenericEvent
	kinds   map[string]bool // kinds with a status subresource
}

type mirrorKey struct{ kind, name string }

// NewMirror returns a Mirror into namespace; Observe may be called before
// it runs.
func NewMirror(namespace string) *Mirror {
	m := &Mirror{namespace: namespace, desired: map[mirrorKey]client.Object{}, repos: map[string]map[mirrorKey]bool{},
		applied: map[mirrorKey]string{}, changed: make(chan event.GenericEvent, 1024), kinds: map[string]bool{}}
	for _, k := range mirroredKinds {
		m.kinds[kindOf(k.newObject())] = k.status
	}
	return m
}

// Namespace is where the mirror writes.
func (m *Mirror) Namespace() string { return m.namespace }

// Observe replaces what repository o.Repository desires in the cluster.
func (m *Mirror) Observe(o controller.Observed) {
	objs := MirrorObjects(o, m.namespace)
	keys := map[mirrorKey]bool{}
	m.mu.Lock()
	var touched []client.Object
	for _, obj := range objs {
		k := mirrorKey{kindOf(obj), obj.GetName()}
		if prev, ok := m.desired[k]; ok && prev.GetAnnotations()[RepositoryAnnotation] != o.Repository {
			continue // another repository's object of that name came first; see MirrorObjects
		}
		keys[k] = true
		if prev, ok := m.desired[k]; !ok || !equality.Semantic.DeepEqual(prev, obj) {
			m.desired[k] = obj
			touched = append(touched, obj)
		}
	}
	for k := range m.repos[o.Repository] {
		if !keys[k] {
			gone := m.desired[k]
			delete(m.desired, k)
			touched = append(touched, gone)
		}
	}
	m.repos[o.Repository] = keys
	m.mu.Unlock()
	for _, obj := range touched {
		select {
		case m.changed <- event.GenericEvent{Object: obj}:
		default: // full: the periodic resync catches up
		}
	}
}

// MirrorObjects are the custom resources a repository's pass shows: its
// Landscapes, Stages, VectorTemplates and VectorPromotionConfigs with the
// status the state branch holds, and the state's Vectors and
// VectorPromotions. Names that are no Kubernetes name are made into one,
// the original kept in NameAnnotation.
func MirrorObjects(o controller.Observed, namespace string) []client.Object {
	var out []client.Object
	add := func(obj client.Object, name string) {
		meta := obj.(metav1.Object)
		kubeName := kubernetesName(name)
		meta.SetName(kubeName)
		meta.SetNamespace(namespace)
		meta.SetResourceVersion("")
		meta.SetUID("")
		meta.SetGeneration(0)
		meta.SetCreationTimestamp(metav1.Time{})
		meta.SetManagedFields(nil)
		meta.SetLabels(map[string]string{ManagedByLabel: managedBy, RepositoryLabel: repositoryHash(o.Repository)})
		ann := map[string]string{RepositoryAnnotation: o.Repository}
		if kubeName != name {
			ann[NameAnnotation] = name
		}
		meta.SetAnnotations(ann)
		out = append(out, obj)
	}
	snap, state := o.Snapshot, o.State
	for _, name := range keys.Sorted(snap.Landscapes) {
		add(snap.Landscapes[name].DeepCopy(), name)
	}
	stageNames := map[string]int{}
	for _, s := range snap.Stages {
		stageNames[s.Name]++
	}
	for _, key := range keys.Sorted(snap.Stages) {
		s := snap.Stages[key].DeepCopy()
		if st := state.Stages[key]; st != nil {
			s.Status = *st.Status.DeepCopy()
		}
		name := s.Name
		if stageNames[name] > 1 { // one name in two landscapes
			name = s.Spec.Landscape + "." + s.Name
		}
		add(s, name)
	}
	for _, name := range keys.Sorted(snap.Templates) {
		t := snap.Templates[name].DeepCopy()
		if st := state.Templates[name]; st != nil {
			t.Status = *st.Status.DeepCopy()
		}
		add(t, name)
	}
	for _, name := range keys.Sorted(snap.Configs) {
		c := snap.Configs[name].DeepCopy()
		if st := state.Configs[name]; st != nil {
			c.Status = *st.Status.DeepCopy()
		}
		add(c, name)
	}
	for _, ref := range keys.Sorted(state.Vectors) {
		add(state.Vectors[ref].DeepCopy(), ref)
	}
	for _, name := range keys.Sorted(state.Promotions) {
		p := state.Promotions[name].DeepCopy()
		p.Status.State = reconcilers.DeriveState(p)
		add(p, name)
	}
	for _, name := range keys.Sorted(state.StageVersions) {
		add(state.StageVersions[name].DeepCopy(), name)
	}
	for _, name := range keys.Sorted(state.Usages) {
		add(state.Usages[name].DeepCopy(), name)
	}
	for _, obj := range out {
		obj.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kindOf(obj)))
	}
	return out
}

// start adds one controller per kind to mgr. owns says whether this
// replica reconciles a repository now (it leads its shard).
func (m *Mirror) start(mgr manager.Manager, owns func(url string) bool, log logr.Logger) error {
	recorder := mgr.GetEventRecorder("vectorflow-mirror")
	// One channel feeds every kind's controller; each takes its own.
	fanout := map[string]chan event.GenericEvent{}
	for _, k := range mirroredKinds {
		obj := k.newObject()
		kind := kindOf(obj)
		ch := make(chan event.GenericEvent, 1024)
		fanout[kind] = ch
		r := &mirrorReconciler{m: m, kind: kind, newObject: k.newObject, status: k.status, client: mgr.GetClient(),
			recorder: recorder, owns: owns, log: log.WithValues("kind", kind)}
		err := ctrl.NewControllerManagedBy(mgr).Named("mirror-" + strings.ToLower(kind)).
			For(obj).
			WatchesRawSource(source.Channel(ch, &handler.EnqueueRequestForObject{})).
			Complete(r)
		if err != nil {
			return fmt.Errorf("start the mirror of %s: %w", kind, err)
		}
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case e := <-m.changed:
				select {
				case fanout[kindOf(e.Object)] <- e:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}))
}

type mirrorReconciler struct {
	m         *Mirror
	kind      string
	newObject func() client.Object
	status    bool
	client    client.Client
	recorder  events.EventRecorder
	owns      func(string) bool
	log       logr.Logger
}

// Reconcile makes one object what the state branch says, or deletes it
// when the state branch no longer has it.
func (r *mirrorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace != r.m.namespace {
		return reconcile.Result{}, nil
	}
	key := mirrorKey{r.kind, req.Name}
	r.m.mu.Lock()
	want := r.m.desired[key]
	observed := map[string]bool{}
	for repo := range r.m.repos {
		observed[repo] = true
	}
	lastApplied := r.m.applied[key]
	r.m.mu.Unlock()

	current := r.newObject()
	err := r.client.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, current)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if want == nil {
		// Only what this replica mirrors, from a repository it has read:
		// never another shard's objects, nor everything before a pass.
		repo := current.GetAnnotations()[RepositoryAnnotation]
		if found && current.GetLabels()[ManagedByLabel] == managedBy && observed[repo] && r.owns(repo) {
			r.log.Info("deleting an object the state branch no longer has", "name", req.Name)
			return reconcile.Result{}, client.IgnoreNotFound(r.client.Delete(ctx, current))
		}
		return reconcile.Result{}, nil
	}
	repo := want.GetAnnotations()[RepositoryAnnotation]
	if !r.owns(repo) {
		return reconcile.Result{}, nil
	}
	desired := want.DeepCopyObject().(client.Object)
	if !found {
		if err := r.client.Create(ctx, desired); err != nil {
			return reconcile.Result{}, err
		}
		if lastApplied != "" {
			r.event(desired, "was deleted in the cluster")
		}
		return reconcile.Result{}, r.writeStatus(ctx, key, want, desired)
	}
	if same(current, want, r.status) {
		return reconcile.Result{}, nil
	}
	if lastApplied != "" && current.GetResourceVersion() != lastApplied {
		r.event(current, "was changed in the cluster")
	}
	desired.SetResourceVersion(current.GetResourceVersion())
	desired.SetLabels(merge(current.GetLabels(), want.GetLabels()))
	desired.SetAnnotations(merge(current.GetAnnotations(), want.GetAnnotations()))
	if err := r.client.Update(ctx, desired); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.writeStatus(ctx, key, want, desired)
}

// writeStatus writes the status of obj, just created or updated, and
// remembers the resource version this replica wrote.
func (r *mirrorReconciler) writeStatus(ctx context.Context, key mirrorKey, want, obj client.Object) error {
	if r.status {
		rv := obj.GetResourceVersion()
		withStatus := want.DeepCopyObject().(client.Object)
		withStatus.SetResourceVersion(rv)
		withStatus.SetLabels(obj.GetLabels())
		withStatus.SetAnnotations(obj.GetAnnotations())
		if err := r.client.Status().Update(ctx, withStatus); err != nil {
			return err
		}
		obj = withStatus
	}
	r.m.mu.Lock()
	r.m.applied[key] = obj.GetResourceVersion()
	r.m.mu.Unlock()
	return nil
}

func (r *mirrorReconciler) event(obj client.Object, what string) {
	note := fmt.Sprintf("%s %s %s; put back: this mirror is read-only, the state branch of %s is the source of truth (approve with vectorflow approve, change configs in Git)",
		r.kind, obj.GetName(), what, obj.GetAnnotations()[RepositoryAnnotation])
	r.log.Info("put a change made in the cluster back", "name", obj.GetName(), "what", what)
	r.recorder.Eventf(obj, nil, "Warning", ReadOnlyReason, "Revert", "%s", note)
}

// same reports whether current shows what want says: spec, status and
// vectorflow's labels and annotations. Other labels (kubectl's, a
// policy engine's) are left alone.
func same(current, want client.Object, status bool) bool {
	for k, v := range want.GetLabels() {
		if current.GetLabels()[k] != v {
			return false
		}
	}
	for k, v := range want.GetAnnotations() {
		if current.GetAnnotations()[k] != v {
			return false
		}
	}
	c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return false
	}
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return false
	}
	fields := []string{"spec"}
	if status {
		fields = append(fields, "status")
	}
	for _, f := range fields {
		if !equality.Semantic.DeepEqual(c[f], w[f]) {
			return false
		}
	}
	return true
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *v1alpha1.Landscape:
		return v1alpha1.LandscapeKind
	case *v1alpha1.Stage:
		return v1alpha1.StageKind
	case *v1alpha1.VectorTemplate:
		return v1alpha1.VectorTemplateKind
	case *v1alpha1.Vector:
		return v1alpha1.VectorKind
	case *v1alpha1.VectorPromotionConfig:
		return v1alpha1.VectorPromotionConfigKind
	case *v1alpha1.VectorPromotion:
		return v1alpha1.VectorPromotionKind
	case *v1alpha1.StageVersion:
		return v1alpha1.StageVersionKind
	case *v1alpha1.StageVersionUsage:
		return v1alpha1.StageVersionUsageKind
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

var notInName = regexp.MustCompile(`[^a-z0-9.-]+`)

// kubernetesName is name when it is a DNS subdomain name, else a
// lowercased, cleaned name with a hash of the original, so two names never
// become one.
func kubernetesName(name string) string {
	clean := strings.Trim(notInName.ReplaceAllString(strings.ToLower(name), "."), ".-")
	if clean == name && len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	if len(clean) > 200 {
		clean = clean[:200]
	}
	return strings.Trim(clean, ".-") + "-" + hex.EncodeToString(sum[:])[:8]
}

func repositoryHash(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:])[:16]
}
