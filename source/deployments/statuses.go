package deployments

import (
	"fmt"
	"path"
	"strings"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
)

// CommitStatusContext is the glob a commit status's context must match to
// speak for deployment d: spec.deployment.commitStatus.context, or what the
// deployer posts by default. Flux's notification-controller posts
// "<kind>/<name>/<first part of the Provider's uid>", lowercased
// (kustomization/apps/0c9c2e41), one context per Provider and so per
// cluster; Argo CD's notification catalog posts
// "continuous-delivery/<application>". "" when there is no default.
func CommitStatusContext(d v1alpha1.DeploymentReference) string {
	if d.CommitStatus != nil && d.CommitStatus.Context != "" {
		return d.CommitStatus.Context
	}
	switch d.Kind {
	case v1alpha1.DeploymentKindKustomization:
		return strings.ToLower("kustomization/" + d.Name + "/*")
	case v1alpha1.DeploymentKindApplication:
		return "continuous-delivery/" + d.Name
	}
	return ""
}

// FromCommitStatuses is what the statuses of commit revision say about
// deployment d: the newest status whose context matches
// CommitStatusContext(d) decides (by time, then by id), success as Healthy, failure and error as
// Failed, pending as Progressing. ok is false when no status matches.
func FromCommitStatuses(d v1alpha1.DeploymentReference, revision string, statuses []forge.CommitStatus) (r Report, ok bool, err error) {
	pattern := CommitStatusContext(d)
	if pattern == "" {
		return Report{}, false, fmt.Errorf("stage deployment %s %s: set spec.deployment.commitStatus.context: there is no default commit-status context for kind %q", d.Kind, d.Name, d.Kind)
	}
	var newest *forge.CommitStatus
	for i := range statuses {
		s := &statuses[i]
		match, err := path.Match(pattern, s.Context)
		if err != nil {
			return Report{}, false, fmt.Errorf("stage deployment %s %s: spec.deployment.commitStatus.context %q: %w", d.Kind, d.Name, pattern, err)
		}
		if match && (newest == nil || newer(*s, *newest)) {
			newest = s
		}
	}
	if newest == nil {
		return Report{}, false, nil
	}
	r = Report{
		Deployment: d,
		Revision:   revision,
		Outcome:    outcomeOf(newest.State),
		Reason:     reasonOf(newest.State),
		Message:    newest.Context + ": " + newest.Description,
		At:         newest.At,
		Channel:    ChannelCommitStatus,
	}
	if newest.TargetURL != "" {
		r.Message += " (" + newest.TargetURL + ")"
	}
	return r, true, nil
}

// newer orders statuses by time, then (forges keep seconds only, and Flux
// may post pending and success within one) by the forge's id, which grows
// with every status set; on a tie the one listed first stays.
func newer(a, b forge.CommitStatus) bool {
	if !a.At.Equal(b.At) {
		return a.At.After(b.At)
	}
	return a.ID > b.ID
}

func outcomeOf(state string) Outcome {
	switch state {
	case forge.CommitStatusSuccess:
		return Healthy
	case forge.CommitStatusFailure, forge.CommitStatusError:
		return Failed
	default:
		return Progressing
	}
}

// reasonOf names the status's state as a reason: the deployer's own reason
// is not in a commit status (Flux writes it, lowercased and split, into the
// description, which the message carries).
func reasonOf(state string) string {
	switch state {
	case forge.CommitStatusSuccess:
		return "CommitStatusSuccess"
	case forge.CommitStatusFailure:
		return "CommitStatusFailure"
	case forge.CommitStatusError:
		return "CommitStatusError"
	default:
		return "CommitStatusPending"
	}
}
