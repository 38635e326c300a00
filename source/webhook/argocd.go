package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// argoApplication is the body of the vectorflow notification template
// (examples/argocd/notifications.yaml): the fields of the Argo CD
// Application it concerns, at the paths the Application has them.
type argoApplication struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Status struct {
		Sync struct {
			Status   string `json:"status"`
			Revision string `json:"revision"`
		} `json:"sync"`
		Health struct {
			Status  string `json:"status"`
			Message string `json:"message"`
			// LastTransitionTime is when the health status last changed
			// (Argo CD 2.14 and 3.x; older ones omit it); a health-only refresh leaves
			// reconciledAt as it was.
			LastTransitionTime string `json:"lastTransitionTime"`
		} `json:"health"`
		ReconciledAt string `json:"reconciledAt"`
	} `json:"status"`
}

// Argo CD's sync and health statuses the outcome is read from.
const (
	argoSynced   = "Synced"
	argoHealthy  = "Healthy"
	argoDegraded = "Degraded"
	argoMissing  = "Missing"
)

// parseArgoCD reads the body the vectorflow notification template renders
// from an Application. The outcome is about status.sync.revision only when
// the Application is Synced, since only then is that revision what runs:
//   - Synced and Healthy: Healthy;
//   - Synced and Degraded or Missing: Failed, with the health status as the
//     reason and the health message;
//   - anything else (OutOfSync, Progressing, Suspended, Unknown): Progressing.
//     An OutOfSync Application's health is that of the revision still
//     running, not of status.sync.revision, so it blames no revision.
func parseArgoCD(_ http.Header, body []byte) (parsed, error) {
	var app argoApplication
	if err := json.Unmarshal(body, &app); err != nil {
		return parsed{}, fmt.Errorf("argocd notification: body is not the JSON of vectorflow's notification template: %w", err)
	}
	if err := app.check(); err != nil {
		return parsed{}, fmt.Errorf("argocd notification: %w", err)
	}
	ref := app.Metadata.Namespace + "/" + app.Metadata.Name
	at, err := app.observedAt()
	if err != nil {
		return parsed{}, fmt.Errorf("argocd notification of Application %s: %w", ref, err)
	}
	sync, health := app.Status.Sync.Status, app.Status.Health.Status
	r := &deployments.Report{
		Deployment: v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindApplication, Name: app.Metadata.Name, Namespace: app.Metadata.Namespace},
		Revision:   strings.ToLower(app.Status.Sync.Revision),
		Message:    truncateMessage(app.Status.Health.Message),
		At:         at.UTC(),
		Channel:    deployments.ChannelArgoCD,
	}
	switch {
	case sync == argoSynced && health == argoHealthy:
		r.Outcome, r.Reason = deployments.Healthy, health
	case sync == argoSynced && (health == argoDegraded || health == argoMissing):
		r.Outcome, r.Reason = deployments.Failed, health
	case sync != argoSynced:
		r.Outcome, r.Reason = deployments.Progressing, sync
	default:
		r.Outcome, r.Reason = deployments.Progressing, health
	}
	if r.Message == "" {
		r.Message = fmt.Sprintf("Argo CD Application %s: sync status %s, health %s", ref, sync, health)
	}
	return parsed{verdict: deliver, event: Event{Provider: ProviderArgoCD, Kind: KindDeployment, Deployment: r}}, nil
}

// observedAt is when Argo CD saw what the report says: the later of its
// last comparison and the last change of the health status, so a Degraded
// that follows a Healthy without a new comparison is still the newer report.
func (app argoApplication) observedAt() (time.Time, error) {
	at, err := time.Parse(time.RFC3339, app.Status.ReconciledAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("status.reconciledAt %q is not an RFC 3339 time", app.Status.ReconciledAt)
	}
	if lt := app.Status.Health.LastTransitionTime; lt != "" {
		changed, err := time.Parse(time.RFC3339, lt)
		if err != nil {
			return time.Time{}, fmt.Errorf("status.health.lastTransitionTime %q is not an RFC 3339 time", lt)
		}
		if changed.After(at) {
			at = changed
		}
	}
	return at, nil
}

const singleSourceHint = "; vectorflow follows Applications with one git source (a multi-source Application has status.sync.revisions instead)"

// check names every field the template should have filled and did not.
func (app argoApplication) check() error {
	var missing []string
	for _, f := range []struct{ path, value string }{
		{"metadata.name", app.Metadata.Name},
		{"metadata.namespace", app.Metadata.Namespace},
		{"status.sync.status", app.Status.Sync.Status},
		{"status.sync.revision", app.Status.Sync.Revision},
		{"status.health.status", app.Status.Health.Status},
		{"status.reconciledAt", app.Status.ReconciledAt},
	} {
		if f.value == "" {
			missing = append(missing, f.path)
		}
	}
	if len(missing) > 0 {
		hint := ""
		if app.Status.Sync.Revision == "" {
			hint = singleSourceHint
		}
		return fmt.Errorf("%s missing; the body must be the one vectorflow's notification template renders%s", strings.Join(missing, ", "), hint)
	}
	if rev := app.Status.Sync.Revision; !isFullCommit(rev) {
		return fmt.Errorf("status.sync.revision %q is not a full git commit (40 hex digits)%s", rev, singleSourceHint)
	}
	return nil
}
