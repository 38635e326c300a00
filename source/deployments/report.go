// Package deployments is what deployers (Flux, Argo CD, commit statuses on a
// forge) say about a stage's revision, normalized. It decides nothing: which
// stage a report concerns and what becomes active is the core's to work out.
package deployments

import (
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// Outcome is what a deployer observed at a revision.
type Outcome string

const (
	// Healthy: the revision was applied and its health checks passed.
	Healthy Outcome = "Healthy"
	// Failed: applying the revision or its health checks failed.
	Failed Outcome = "Failed"
	// Progressing: the revision is being applied; it says nothing yet.
	Progressing Outcome = "Progressing"
)

// Channels a report arrives through.
const (
	ChannelFlux         = "flux"
	ChannelArgoCD       = "argocd"
	ChannelCommitStatus = "commit-status"
	ChannelCluster      = "cluster"
)

// Report is one deployer's observation of one revision of a stage's
// repository.
type Report struct {
	// Deployment names the deployer object (kind, name, namespace) as a
	// Stage's spec.deployment does.
	Deployment v1alpha1.DeploymentReference
	// Revision is the full commit id the deployer applied.
	Revision string
	Outcome  Outcome
	// Reason and Message are the deployer's own words (e.g. Flux's
	// HealthCheckFailed and its message).
	Reason  string
	Message string
	// At is when the deployer observed it (the event's timestamp).
	At time.Time
	// Channel is how the report arrived: flux, argocd, commit-status, cluster.
	Channel string
}
