package main

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// The listings of `vectorflow get stageversions` and `get usages`: the
// StageVersions a stage keeps (ADR-0013) and what holds them.

func stageVersionKind() getKind {
	return getKind{
		resource: mustResource(v1alpha1.StageVersionKind),
		columns: []metav1.TableColumnDefinition{column("Stage"), column("Vector"), column("Ready"), column("Reason"),
			column("Revision"), column("Used By"), wideColumn("Digest"), wideColumn("Objects"), wideColumn("Message")},
		filters:  []string{filterStage},
		list:     listStageVersions,
		describe: describeStageVersion,
	}
}

// listStageVersions lists StageVersions by stage, newest first, with
// whether each is ready and which usages hold it.
func listStageVersions(in getInput) []getObject {
	s := in.state
	holders := usageHolders(s)
	list := make([]v1alpha1.StageVersion, 0, len(s.StageVersions))
	for _, sv := range s.StageVersions {
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
	out := make([]getObject, 0, len(list))
	for i := range list {
		sv := &list[i]
		sv.TypeMeta = typeMeta(v1alpha1.StageVersionKind)
		key := reconcilers.StageKey(sv.Spec.Landscape, sv.Spec.Stage)
		ready, reason, msg := conditionColumns(sv.Status.Conditions, v1alpha1.ReadyCondition)
		out = append(out, getObject{name: sv.Name, path: reconcilers.StageVersionPath(sv.Spec.Landscape, sv.Spec.Stage, sv.Name), object: sv,
			cells: []any{key, sv.Spec.Vector, ready, reason, orDash(reconcilers.ShortRevision(sv.Status.Revision)),
				orDash(strings.Join(holders[sv.Name], ",")), orDash(v1alpha1.ShortDigest(sv.Spec.RenderDigest)),
				fmt.Sprint(len(sv.Spec.Inventory)), msg},
			fields:     map[string]string{filterStage: key},
			conditions: sv.Status.Conditions,
		})
	}
	return out
}

func describeStageVersion(o getObject) []describeField {
	sv := o.object.(*v1alpha1.StageVersion)
	inventory := describeField{label: "Inventory", lines: []string{}}
	for _, e := range sv.Spec.Inventory {
		id := e.Kind + " " + e.Name
		if e.Namespace != "" {
			id = e.Kind + " " + e.Namespace + "/" + e.Name
		}
		inventory.lines = append(inventory.lines, id)
	}
	return []describeField{
		{label: "Stage", value: reconcilers.StageKey(sv.Spec.Landscape, sv.Spec.Stage)},
		{label: "Vector", value: sv.Spec.Vector},
		{label: "Commit", value: orDash(sv.Spec.Commit)},
		{label: "Render digest", value: orDash(sv.Spec.RenderDigest)},
		{label: "Revision", value: orDash(sv.Status.Revision)},
		inventory,
	}
}

func stageVersionUsageKind() getKind {
	return getKind{
		resource: mustResource(v1alpha1.StageVersionUsageKind),
		aliases:  []string{"usages", "usage"},
		columns: []metav1.TableColumnDefinition{column("Reason"), column("References"), column("StageVersionReady"),
			column("NotFound"), wideColumn("Message")},
		list: listUsages,
		describe: func(o getObject) []describeField {
			u := o.object.(*v1alpha1.StageVersionUsage)
			return []describeField{{label: "Reason", value: u.Spec.Reason}, {label: "References", value: usageReference(u.Spec)}}
		},
	}
}

// listUsages lists every usage, the stages' own and the declared ones,
// with the StageVersions they reference and their conditions.
func listUsages(in getInput) []getObject {
	s := in.state
	out := make([]getObject, 0, len(s.Usages))
	for _, name := range keys.Sorted(s.Usages) {
		u := s.Usages[name].DeepCopy()
		u.TypeMeta = typeMeta(v1alpha1.StageVersionUsageKind)
		ready, _, msg := conditionColumns(u.Status.Conditions, v1alpha1.StageVersionReadyCondition)
		notFound := "-"
		if c := meta.FindStatusCondition(u.Status.Conditions, v1alpha1.StageVersionNotFoundCondition); c != nil {
			notFound = string(c.Status)
		}
		out = append(out, getObject{name: u.Name, path: reconcilers.UsagePath(u.Name), object: u,
			cells:      []any{u.Spec.Reason, usageReference(u.Spec), ready, notFound, msg},
			conditions: u.Status.Conditions,
		})
	}
	return out
}

func usageReference(spec v1alpha1.StageVersionUsageSpec) string {
	switch {
	case spec.StageVersionRef != nil:
		return spec.StageVersionRef.Name
	case spec.StageVersionSelector != nil:
		var parts []string
		for _, k := range keys.Sorted(spec.StageVersionSelector.MatchLabels) {
			parts = append(parts, k+"="+spec.StageVersionSelector.MatchLabels[k])
		}
		return strings.Join(parts, ",")
	}
	return "-"
}

// usageHolders names, per StageVersion, the usages that reference it.
func usageHolders(s *reconcilers.State) map[string][]string {
	out := map[string][]string{}
	for _, name := range keys.Sorted(s.Usages) {
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
