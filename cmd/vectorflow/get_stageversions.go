package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// The listings of `vectorflow get stageversions` and `get usages`: the
// StageVersions a stage keeps (ADR-0013) and what holds them.

// isStageVersionKind reports whether get lists kind here.
func isStageVersionKind(kind string) bool {
	switch kind {
	case "stageversions", "stageversion", "usages", "usage", "stageversionusages":
		return true
	}
	return false
}

// stageVersionListing lists StageVersions (of one stage, when stage is set:
// `<landscape>/<name>` or a name) or usages: the objects as stored, the
// table, and the state file of each row (for VERIFIED).
func stageVersionListing(kind string, s *reconcilers.State, stage string) (any, *table, []string, error) {
	switch kind {
	case "usages", "usage", "stageversionusages":
		if stage != "" {
			return nil, nil, nil, fmt.Errorf("--stage lists the StageVersions of a stage; get usages lists every usage")
		}
		list, t := usagesTable(s)
		paths := make([]string, len(list))
		for i, u := range list {
			paths[i] = reconcilers.UsagePath(u.Name)
		}
		return list, t, paths, nil
	}
	list, t := stageVersionsTable(s, stage)
	paths := make([]string, len(list))
	for i, sv := range list {
		paths[i] = reconcilers.StageVersionPath(sv.Spec.Landscape, sv.Spec.Stage, sv.Name)
	}
	return list, t, paths, nil
}

// stageVersionsTable lists StageVersions by stage, newest first, with
// whether each is ready and which usages hold it.
func stageVersionsTable(s *reconcilers.State, stage string) ([]v1alpha1.StageVersion, *table) {
	holders := usageHolders(s)
	var list []v1alpha1.StageVersion
	for _, sv := range s.StageVersions {
		key := reconcilers.StageKey(sv.Spec.Landscape, sv.Spec.Stage)
		if stage != "" && stage != key && stage != sv.Spec.Stage {
			continue
		}
		list = append(list, *sv)
	}
	slices.SortFunc(list, func(a, b v1alpha1.StageVersion) int {
		ka, kb := reconcilers.StageKey(a.Spec.Landscape, a.Spec.Stage), reconcilers.StageKey(b.Spec.Landscape, b.Spec.Stage)
		if c := strings.Compare(ka, kb); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Time.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	t := &table{header: []string{"NAME", "STAGE", "VECTOR", "READY", "REASON", "REVISION", "USED BY", "DIGEST", "OBJECTS", "MESSAGE"}}
	for _, sv := range list {
		ready, reason, msg := conditionColumns(sv.Status.Conditions, v1alpha1.ReadyCondition)
		t.add(sv.Name, reconcilers.StageKey(sv.Spec.Landscape, sv.Spec.Stage), sv.Spec.Vector, ready, reason,
			orDash(reconcilers.ShortRevision(sv.Status.Revision)), orDash(strings.Join(holders[sv.Name], ",")),
			orDash(v1alpha1.ShortDigest(sv.Spec.RenderDigest)), fmt.Sprint(len(sv.Spec.Inventory)), msg)
	}
	return list, t
}

// usagesTable lists every usage, the stages' own and the declared ones,
// with the StageVersions they reference and their conditions.
func usagesTable(s *reconcilers.State) ([]v1alpha1.StageVersionUsage, *table) {
	list := make([]v1alpha1.StageVersionUsage, 0, len(s.Usages))
	for _, name := range sortedNames(s.Usages) {
		list = append(list, *s.Usages[name])
	}
	t := &table{header: []string{"NAME", "REASON", "REFERENCES", "STAGEVERSIONREADY", "NOTFOUND", "MESSAGE"}}
	for _, u := range list {
		ready, _, msg := conditionColumns(u.Status.Conditions, v1alpha1.StageVersionReadyCondition)
		notFound := "-"
		if c := meta.FindStatusCondition(u.Status.Conditions, v1alpha1.StageVersionNotFoundCondition); c != nil {
			notFound = string(c.Status)
		}
		t.add(u.Name, u.Spec.Reason, usageReference(u.Spec), ready, notFound, msg)
	}
	return list, t
}

func usageReference(spec v1alpha1.StageVersionUsageSpec) string {
	switch {
	case spec.StageVersionRef != nil:
		return spec.StageVersionRef.Name
	case spec.StageVersionSelector != nil:
		var parts []string
		for _, k := range sortedNames(spec.StageVersionSelector.MatchLabels) {
			parts = append(parts, k+"="+spec.StageVersionSelector.MatchLabels[k])
		}
		return strings.Join(parts, ",")
	}
	return "-"
}

// usageHolders names, per StageVersion, the usages that reference it.
func usageHolders(s *reconcilers.State) map[string][]string {
	out := map[string][]string{}
	for _, name := range sortedNames(s.Usages) {
		u := s.Usages[name]
		for _, sv := range reconcilers.Referenced(s, u) {
			out[sv.Name] = append(out[sv.Name], displayUsage(u))
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// displayUsage is a stage's own usage by its reason (target, active), a
// declared one by its name.
func displayUsage(u *v1alpha1.StageVersionUsage) string {
	if reconcilers.IsOwnUsage(u.Name) {
		return u.Spec.Reason
	}
	return u.Name
}

// conditionColumns are a condition's status, reason and message, or
// Unknown and dashes when it is not set.
func conditionColumns(conds []metav1.Condition, typ string) (status, reason, message string) {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "Unknown", "-", ""
	}
	return string(c.Status), c.Reason, c.Message
}

// activeColumn is what get stages shows as ACTIVE: the active vector, and
// why nothing is when the stage's deployer has not reported it healthy.
func activeColumn(st *v1alpha1.Stage) string {
	c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ActiveCondition)
	switch {
	case c != nil && c.Status == metav1.ConditionFalse && st.Status.ActiveVector != "":
		return st.Status.ActiveVector + " (" + c.Reason + ")"
	case c != nil && c.Status == metav1.ConditionFalse:
		return "- (" + c.Reason + ")"
	}
	return orDash(st.Status.ActiveVector)
}
