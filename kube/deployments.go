package kube

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// The deployers' kinds vectorflow reads, at the versions it understands.
var (
	KustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: v1alpha1.DeploymentKindKustomization}
	ApplicationGVK   = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: v1alpha1.DeploymentKindApplication}
)

// KustomizationReport is what a Flux Kustomization's status says: Ready
// True is its lastAppliedRevision applied and healthy; Ready False a
// failure and Ready Unknown progress, both of lastAttemptedRevision. A
// status older than the object's spec (observedGeneration behind) says
// nothing yet, nor does one without a revision.
func KustomizationReport(obj *unstructured.Unstructured) (deployments.Report, bool) {
	ready, ok := readyCondition(obj)
	if !ok || ready.ObservedGeneration != obj.GetGeneration() && ready.ObservedGeneration != 0 {
		return deployments.Report{}, false
	}
	revision := "lastAttemptedRevision"
	outcome := deployments.Progressing
	switch ready.Status {
	case metav1.ConditionTrue:
		revision, outcome = "lastAppliedRevision", deployments.Healthy
	case metav1.ConditionFalse:
		outcome = deployments.Failed
	}
	raw, _, _ := unstructured.NestedString(obj.Object, "status", revision)
	commit := fluxCommit(raw)
	if commit == "" {
		return deployments.Report{}, false
	}
	return deployments.Report{
		Deployment: deploymentOf(obj, v1alpha1.DeploymentKindKustomization),
		Revision:   commit, Outcome: outcome, Reason: ready.Reason, Message: ready.Message,
		At: ready.LastTransitionTime.Time, Channel: deployments.ChannelCluster,
	}, true
}

// ApplicationReport is what an Argo CD Application's status says about
// status.sync.revision: Healthy when it is Synced and its health Healthy,
// Failed when its health is Degraded or its last sync failed, else
// Progressing.
func ApplicationReport(obj *unstructured.Unstructured, now time.Time) (deployments.Report, bool) {
	commit, _, _ := unstructured.NestedString(obj.Object, "status", "sync", "revision")
	if !isCommit(commit) {
		return deployments.Report{}, false
	}
	sync, _, _ := unstructured.NestedString(obj.Object, "status", "sync", "status")
	health, _, _ := unstructured.NestedString(obj.Object, "status", "health", "status")
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "operationState", "phase")
	message, _, _ := unstructured.NestedString(obj.Object, "status", "health", "message")
	outcome := deployments.Progressing
	switch {
	case health == "Degraded" || phase == "Failed" || phase == "Error":
		outcome = deployments.Failed
		if message == "" {
			message, _, _ = unstructured.NestedString(obj.Object, "status", "operationState", "message")
		}
	case sync == "Synced" && health == "Healthy":
		outcome = deployments.Healthy
	}
	at := now
	if s, ok, _ := unstructured.NestedString(obj.Object, "status", "reconciledAt"); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			at = t
		}
	}
	return deployments.Report{
		Deployment: deploymentOf(obj, v1alpha1.DeploymentKindApplication),
		Revision:   commit, Outcome: outcome, Reason: sync + "/" + health, Message: message,
		At: at, Channel: deployments.ChannelCluster,
	}, true
}

// fluxCommit is the commit of a Flux revision: "main@sha1:<hex>" (Flux 2.1
// and later) or "main/<hex>" (before).
func fluxCommit(revision string) string {
	if i := strings.LastIndex(revision, ":"); i >= 0 {
		revision = revision[i+1:]
	} else if i := strings.LastIndexAny(revision, "/@"); i >= 0 {
		revision = revision[i+1:]
	}
	if !isCommit(revision) {
		return ""
	}
	return revision
}

func isCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func readyCondition(obj *unstructured.Unstructured) (metav1.Condition, bool) {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		var c metav1.Condition
		c.Type = "Ready"
		status, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(status)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		// int64 from the API server's decoder, float64 from plain JSON.
		switch g := m["observedGeneration"].(type) {
		case int64:
			c.ObservedGeneration = g
		case float64:
			c.ObservedGeneration = int64(g)
		}
		if s, ok := m["lastTransitionTime"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				c.LastTransitionTime = metav1.NewTime(t)
			}
		}
		return c, true
	}
	return metav1.Condition{}, false
}

func deploymentOf(obj *unstructured.Unstructured, kind string) v1alpha1.DeploymentReference {
	return v1alpha1.DeploymentReference{Kind: kind, Name: obj.GetName(), Namespace: obj.GetNamespace()}
}

// reportSink takes the reports: the Runner, which hands them to every
// controller.
type reportSink interface {
	ReportDeployment(deployments.Report) int
}

// watchDeployments watches Flux Kustomizations and Argo CD Applications in
// every namespace, through the manager's informers, and hands each change
// of revision or outcome to sink. A kind whose CRD is not installed is not
// watched (said once in the log).
func watchDeployments(mgr manager.Manager, sink reportSink, log logr.Logger) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		w := &deploymentWatch{sink: sink, log: log, last: map[string]string{}}
		for _, gvk := range []schema.GroupVersionKind{KustomizationGVK, ApplicationGVK} {
			if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				// Not watching a deployer is no reason to stop reconciling:
				// the webhook channels still report.
				if meta.IsNoMatchError(err) {
					log.Info("not watching: the CRD is not installed", "kind", gvk.String())
				} else {
					log.Error(err, "not watching: cannot look the kind up", "kind", gvk.String())
				}
				continue
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			inf, err := mgr.GetCache().GetInformer(ctx, obj)
			if err != nil {
				return fmt.Errorf("watch %s: %w", gvk, err)
			}
			handle := func(o any) {
				if u, ok := o.(*unstructured.Unstructured); ok {
					w.observe(gvk.Kind, u)
				}
			}
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    handle,
				UpdateFunc: func(_, o any) { handle(o) },
			}); err != nil {
				return err
			}
			log.Info("watching deployers' status", "kind", gvk.String())
		}
		<-ctx.Done()
		return nil
	}))
}

type deploymentWatch struct {
	sink reportSink
	log  logr.Logger
	mu   sync.Mutex
	last map[string]string // deployment -> revision and outcome last handed on
}

func (w *deploymentWatch) observe(kind string, u *unstructured.Unstructured) {
	var r deployments.Report
	var ok bool
	if kind == v1alpha1.DeploymentKindKustomization {
		r, ok = KustomizationReport(u)
	} else {
		r, ok = ApplicationReport(u, time.Now())
	}
	if !ok {
		return
	}
	key := kind + "/" + u.GetNamespace() + "/" + u.GetName()
	seen := r.Revision + " " + string(r.Outcome)
	w.mu.Lock()
	same := w.last[key] == seen
	w.last[key] = seen
	w.mu.Unlock()
	if same {
		return
	}
	n := w.sink.ReportDeployment(r)
	w.log.V(1).Info("deployer report", "deployment", key, "revision", r.Revision, "outcome", r.Outcome, "controllers", n)
}
