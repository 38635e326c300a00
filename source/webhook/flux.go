package webhook

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/source/deployments"
)

// fluxKustomizationGroup is the API group of the Flux Kustomization, the
// only object whose events say what runs from a stage's overlay.
const fluxKustomizationGroup = "kustomize.toolkit.fluxcd.io"

// fluxOutcomes maps the reasons kustomize-controller gives its events (the
// reason of its Ready condition) to what they say about the event's revision.
// ReconciliationSucceeded is sent only when Ready is True: after the apply,
// and, for a Kustomization with spec.wait or spec.healthChecks, after the
// health checks passed; without them "applied" is all Flux knows.
//
// Other reasons (Progressing with the apply's change set, HealthCheckCanceled
// when a newer revision arrives, source access errors without a revision) are
// ignored: they say nothing final about a revision, and Flux stamps its events
// to the second, so a Progressing event that overtakes a ReconciliationSucceeded
// of the same second could not be ordered after it.
var fluxOutcomes = map[string]deployments.Outcome{
	"ReconciliationSucceeded": deployments.Healthy,
	"HealthCheckFailed":       deployments.Failed,
	"ReconciliationFailed":    deployments.Failed,
	"DependencyNotReady":      deployments.Failed,
	"BuildFailed":             deployments.Failed, // kustomize build of the revision failed
	"PruneFailed":             deployments.Failed,
	"ArtifactFailed":          deployments.Failed, // the revision's artifact could not be fetched
}

// maxReportMessage bounds the deployer message a report carries into the
// state branch (Flux allows 39,000 characters); the rest is cut.
const maxReportMessage = 2048

// parseFlux reads an event forwarded by Flux's notification-controller (a
// Provider of type generic-hmac): the event JSON as Flux's
// event/v1beta1 API defines it, with the metadata keys stripped of the
// involved object's API group (metadata.revision).
func parseFlux(_ http.Header, body []byte) (parsed, error) {
	var e eventv1.Event
	if err := json.Unmarshal(body, &e); err != nil {
		return parsed{}, fmt.Errorf("flux event: body is not a Flux event (event.toolkit.fluxcd.io/v1beta1): %w", err)
	}
	obj := e.InvolvedObject
	if obj.Kind == "" || obj.Name == "" || obj.Namespace == "" {
		return parsed{}, fmt.Errorf("flux event: involvedObject needs kind, name and namespace (got kind %q, name %q, namespace %q)", obj.Kind, obj.Name, obj.Namespace)
	}
	ref := obj.Kind + " " + obj.Namespace + "/" + obj.Name
	if group := groupOf(obj.APIVersion); obj.Kind != v1alpha1.DeploymentKindKustomization || (group != "" && group != fluxKustomizationGroup) {
		return ignored("Flux event of %s %s: only %s Kustomizations deploy a stage's overlay; remove it from the Alert's eventSources", obj.APIVersion, ref, fluxKustomizationGroup)
	}
	outcome, ok := fluxOutcomes[e.Reason]
	if !ok {
		return ignored("Flux event of %s with reason %q: not an outcome vectorflow acts on (ReconciliationSucceeded, HealthCheckFailed, ReconciliationFailed, ...)", ref, e.Reason)
	}
	commit, err := fluxCommit(e.Metadata)
	if err != nil {
		return parsed{}, fmt.Errorf("flux event of %s with reason %s: %w", ref, e.Reason, err)
	}
	if e.Timestamp.IsZero() {
		return parsed{}, fmt.Errorf("flux event of %s with reason %s: timestamp is missing", ref, e.Reason)
	}
	return parsed{verdict: deliver, event: Event{
		Provider: ProviderFlux,
		Kind:     KindDeployment,
		Deployment: &deployments.Report{
			Deployment: v1alpha1.DeploymentReference{Kind: v1alpha1.DeploymentKindKustomization, Name: obj.Name, Namespace: obj.Namespace},
			Revision:   commit,
			Outcome:    outcome,
			Reason:     e.Reason,
			Message:    truncateMessage(e.Message),
			At:         e.Timestamp.UTC(),
			Channel:    deployments.ChannelFlux,
		},
	}}, nil
}

// fluxCommit returns the git commit of the event's revision. A Kustomization
// whose source is an OCIRepository has a revision naming the artifact's
// digest; its originRevision, when the artifact was pushed with one, names
// the commit it was built from.
func fluxCommit(meta map[string]string) (string, error) {
	rev, origin := fluxMetadata(meta, eventv1.MetaRevisionKey), fluxMetadata(meta, eventv1.MetaOriginRevisionKey)
	if rev == "" && origin == "" {
		return "", fmt.Errorf("metadata.revision is missing; vectorflow needs the commit Flux applied")
	}
	commit, err := commitOfFluxRevision(rev)
	if err == nil {
		return commit, nil
	}
	if origin != "" {
		if c, originErr := commitOfFluxRevision(origin); originErr == nil {
			return c, nil
		}
		return "", fmt.Errorf("neither metadata.revision %q nor metadata.originRevision %q names a full git commit (<branch>@sha1:<40 hex digits>)", rev, origin)
	}
	return "", fmt.Errorf("metadata.revision: %w", err)
}

// fluxMetadata reads a metadata key as notification-controller forwards it
// (stripped of the API group), or as kustomize-controller records it, for a
// sender that forwards the event as it was recorded.
func fluxMetadata(meta map[string]string, key string) string {
	if v, ok := meta[key]; ok {
		return v
	}
	return meta[fluxKustomizationGroup+"/"+key]
}

// commitOfFluxRevision reads the forms Flux has written a git revision in:
// "<ref>@sha1:<commit>" (Flux 2.0 and later), "sha1:<commit>" (a detached
// commit), and "<branch>/<commit>" (before Flux 2.0). Only a full commit id
// names one commit for certain.
func commitOfFluxRevision(rev string) (string, error) {
	var hash string
	switch {
	case strings.Contains(rev, "@"):
		_, digest, _ := cutLast(rev, "@")
		algo, h, _ := strings.Cut(digest, ":")
		if algo != "sha1" {
			return "", fmt.Errorf("%q is not a git commit (%s digest; an OCI artifact names sha256): vectorflow needs <branch>@sha1:<40 hex digits>", rev, algo)
		}
		hash = h
	case strings.HasPrefix(rev, "sha1:"):
		hash = strings.TrimPrefix(rev, "sha1:")
	case strings.Contains(rev, "/"):
		_, hash, _ = cutLast(rev, "/")
	default:
		hash = rev
	}
	if !isFullCommit(hash) {
		return "", fmt.Errorf("%q does not name a full git commit (want <branch>@sha1:<40 hex digits>)", rev)
	}
	return strings.ToLower(hash), nil
}

func isFullCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion // unparseable: compared as is, so it never matches
	}
	return gv.Group
}

// truncateMessage cuts a deployer's message at maxReportMessage bytes,
// on a character boundary, and says it was cut.
func truncateMessage(msg string) string {
	if len(msg) <= maxReportMessage {
		return msg
	}
	cut := maxReportMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + " …(truncated)"
}
