package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "89abcdef0123456789abcdef0123456789abcdef"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	// Decoded as the API server's client decodes: integers as int64.
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestKustomizationReport(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ks := v1alpha1.DeploymentReference{Kind: "Kustomization", Name: "apps-dev", Namespace: "flux-system"}
	for _, tc := range []struct {
		name   string
		status string
		want   *deployments.Report
	}{
		{"ready: the applied revision is healthy", `
lastAppliedRevision: main@sha1:` + commitA + `
lastAttemptedRevision: main@sha1:` + commitA + `
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:` + commitA + `", observedGeneration: 2, lastTransitionTime: "2026-12-01T10:00:00Z"}`,
			&deployments.Report{Deployment: ks, Revision: commitA, Outcome: deployments.Healthy, Reason: "ReconciliationSucceeded",
				Message: "Applied revision: main@sha1:" + commitA, At: at, Channel: "cluster"}},
		{"not ready: the attempted revision failed, not the applied one", `
lastAppliedRevision: main@sha1:` + commitA + `
lastAttemptedRevision: main@sha1:` + commitB + `
conditions:
- {type: Ready, status: "False", reason: HealthCheckFailed, message: "timeout waiting for: [Deployment/apps/web status: 'InProgress']", observedGeneration: 2, lastTransitionTime: "2026-12-01T10:00:00Z"}`,
			&deployments.Report{Deployment: ks, Revision: commitB, Outcome: deployments.Failed, Reason: "HealthCheckFailed",
				Message: "timeout waiting for: [Deployment/apps/web status: 'InProgress']", At: at, Channel: "cluster"}},
		{"reconciling: progress of the attempted revision", `
lastAttemptedRevision: main/` + commitB + `
conditions:
- {type: Ready, status: "Unknown", reason: Progressing, message: "Reconciliation in progress", observedGeneration: 2, lastTransitionTime: "2026-12-01T10:00:00Z"}`,
			&deployments.Report{Deployment: ks, Revision: commitB, Outcome: deployments.Progressing, Reason: "Progressing",
				Message: "Reconciliation in progress", At: at, Channel: "cluster"}},
		{"a status older than the spec says nothing", `
lastAppliedRevision: main@sha1:` + commitA + `
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, observedGeneration: 1, lastTransitionTime: "2026-12-01T10:00:00Z"}`, nil},
		{"no Ready condition", `lastAppliedRevision: main@sha1:` + commitA, nil},
		{"a revision that is no commit", `
lastAppliedRevision: latest@sha256:` + strings.Repeat("z", 64) + `
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, observedGeneration: 2}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps-dev, namespace: flux-system, generation: 2}\nstatus:\n"+indent(tc.status))
			got, ok := KustomizationReport(u)
			if tc.want == nil {
				if ok {
					t.Errorf("report %+v, want none", got)
				}
				return
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" || !ok {
				t.Errorf("ok=%v (-want +got):\n%s", ok, diff)
			}
		})
	}
}

func TestApplicationReport(t *testing.T) {
	now := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	app := v1alpha1.DeploymentReference{Kind: "Application", Name: "apps-dev", Namespace: "argocd"}
	for _, tc := range []struct {
		name, status string
		want         *deployments.Report
	}{
		{"synced and healthy", `{sync: {status: Synced, revision: ` + commitA + `}, health: {status: Healthy}, reconciledAt: "2026-12-01T10:30:00Z"}`,
			&deployments.Report{Deployment: app, Revision: commitA, Outcome: deployments.Healthy, Reason: "Synced/Healthy",
				At: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC), Channel: "cluster"}},
		{"synced, still progressing", `{sync: {status: Synced, revision: ` + commitA + `}, health: {status: Progressing}}`,
			&deployments.Report{Deployment: app, Revision: commitA, Outcome: deployments.Progressing, Reason: "Synced/Progressing", At: now, Channel: "cluster"}},
		{"out of sync is no health of the revision", `{sync: {status: OutOfSync, revision: ` + commitA + `}, health: {status: Healthy}}`,
			&deployments.Report{Deployment: app, Revision: commitA, Outcome: deployments.Progressing, Reason: "OutOfSync/Healthy", At: now, Channel: "cluster"}},
		{"degraded", `{sync: {status: Synced, revision: ` + commitB + `}, health: {status: Degraded, message: "back-off restarting failed container"}}`,
			&deployments.Report{Deployment: app, Revision: commitB, Outcome: deployments.Failed, Reason: "Synced/Degraded",
				Message: "back-off restarting failed container", At: now, Channel: "cluster"}},
		{"sync failed", `{sync: {status: OutOfSync, revision: ` + commitB + `}, health: {status: Healthy}, operationState: {phase: Failed, message: "one or more objects failed to apply"}}`,
			&deployments.Report{Deployment: app, Revision: commitB, Outcome: deployments.Failed, Reason: "OutOfSync/Healthy",
				Message: "one or more objects failed to apply", At: now, Channel: "cluster"}},
		{"no revision yet", `{sync: {status: Unknown}, health: {status: Missing}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := object(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: apps-dev, namespace: argocd}\nstatus: "+tc.status)
			got, ok := ApplicationReport(u, now)
			if tc.want == nil {
				if ok {
					t.Errorf("report %+v, want none", got)
				}
				return
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" || !ok {
				t.Errorf("ok=%v (-want +got):\n%s", ok, diff)
			}
		})
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}
