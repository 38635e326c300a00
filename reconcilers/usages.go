package reconcilers

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
)

// conditionReason is the grammar of a condition's reason (metav1.Condition):
// a deployer's reason that is not one is replaced, never written as is.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// OwnUsageName is the name of a stage's own usage, reason target or active:
// `<landscape>.<stage>.<reason>`. Declared usages have DNS-1123 label names,
// which hold no dot, so the two never collide.
func OwnUsageName(landscape, stage, reason string) string {
	return landscape + "." + stage + "." + reason
}

// IsOwnUsage reports whether a usage is one a stage keeps itself (its name
// holds a dot, which a declared usage's cannot).
func IsOwnUsage(name string) bool { return strings.Contains(name, ".") }

// usageSelection is which StageVersions a usage references.
type usageSelection struct {
	ref      string
	selector labels.Set
	// problem is a selector that cannot select: it references nothing.
	problem string
}

// selectionOf reads a usage's reference. A selector is matchLabels,
// compared as exact strings: the vector label's value is a vector
// reference, `<template>:<version>`, which Kubernetes label-value syntax
// (and so its selector parser) refuses.
func selectionOf(u *v1alpha1.StageVersionUsage) usageSelection {
	switch sel := u.Spec.StageVersionSelector; {
	case u.Spec.StageVersionRef != nil:
		return usageSelection{ref: u.Spec.StageVersionRef.Name}
	case sel != nil && len(sel.MatchExpressions) > 0:
		return usageSelection{problem: "spec.stageVersionSelector.matchExpressions is not supported; use matchLabels"}
	case sel != nil && len(sel.MatchLabels) == 0:
		// Validation refuses it; were one to get here, it must not hold
		// every version there is.
		return usageSelection{problem: "the selector is empty"}
	case sel != nil:
		return usageSelection{selector: labels.Set(sel.MatchLabels)}
	}
	return usageSelection{problem: "neither spec.stageVersionRef nor spec.stageVersionSelector is set"}
}

// referenced lists the StageVersions sel references, by name.
func (sel usageSelection) referenced(s *State) []*v1alpha1.StageVersion {
	if sel.ref != "" {
		if sv := s.StageVersions[sel.ref]; sv != nil {
			return []*v1alpha1.StageVersion{sv}
		}
		return nil
	}
	if sel.selector == nil {
		return nil
	}
	var out []*v1alpha1.StageVersion
	for _, name := range keys.Sorted(s.StageVersions) {
		sv := s.StageVersions[name]
		if matchesLabels(sel.selector, sv.Labels) {
			out = append(out, sv)
		}
	}
	return out
}

// ReconcileUsages brings the declared usages (from the config repository,
// by name) into s, drops the declared ones that are gone (when prune is
// set: the snapshot is complete), and sets every usage's conditions, the
// stages' own included: StageVersionReady is True when every StageVersion
// the usage references exists and is Ready; StageVersionNotFound is present,
// and True, only while it references none.
func ReconcileUsages(s *State, declared map[string]*v1alpha1.StageVersionUsage, prune bool, now time.Time) []string {
	var notes []string
	for _, name := range keys.Sorted(declared) {
		d := declared[name]
		want := &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: d.Labels, Annotations: d.Annotations},
			Spec: *d.Spec.DeepCopy()}
		switch u := s.Usages[name]; {
		case u == nil:
			notes = append(notes, fmt.Sprintf("usage %s: declared (%s)", name, d.Spec.Reason))
		case reflect.DeepEqual(u.ObjectMeta, want.ObjectMeta) && reflect.DeepEqual(u.Spec, want.Spec):
			continue // as declared; it may be the state's that the decision read
		default:
			want.Status = *u.Status.DeepCopy()
		}
		s.Usages[name] = want
	}
	if prune {
		gone := keys.SortedWhere(s.Usages, func(name string) bool {
			_, ok := declared[name]
			return !ok && !IsOwnUsage(name)
		})
		for _, name := range gone {
			delete(s.Usages, name)
			notes = append(notes, fmt.Sprintf("usage %s: removed from the repository", name))
		}
	}
	// Each usage's conditions depend on the StageVersions alone, so they
	// are set in any order; only the few notes are put in name order (two
	// sorts of 20,000 names a decision at 10,000 stages otherwise).
	// The conditions are tried on a scratch copy: a usage may be the
	// state's that the decision read, and few change.
	var changed []string
	var scratch []metav1.Condition
	for name, u := range s.Usages {
		tried := *u // setUsageConditions writes only the conditions, the scratch ones
		scratch = append(scratch[:0], u.Status.Conditions...)
		tried.Status.Conditions = scratch
		set := setUsageConditions(&tried, selectionOf(u).referenced(s), now)
		scratch = tried.Status.Conditions
		if !set {
			continue
		}
		own := u.DeepCopy()
		own.Status.Conditions = slices.Clone(scratch)
		s.Usages[name] = own
		// A stage's own usages say what they hold when they move
		// (ObserveStage); their conditions follow without a note.
		if !IsOwnUsage(name) {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	for _, name := range changed {
		if c := meta.FindStatusCondition(s.Usages[name].Status.Conditions, v1alpha1.StageVersionReadyCondition); c != nil {
			notes = append(notes, fmt.Sprintf("usage %s: %s %s", name, v1alpha1.StageVersionReadyCondition, c.Status))
		}
	}
	return notes
}

func setUsageConditions(u *v1alpha1.StageVersionUsage, refs []*v1alpha1.StageVersion, now time.Time) bool {
	sel := selectionOf(u)
	if len(refs) == 0 {
		msg := "no StageVersion named " + sel.ref
		switch {
		case sel.problem != "":
			msg = "the usage references no StageVersion: " + sel.problem
		case sel.selector != nil:
			msg = "no StageVersion matches the selector " + sel.selector.String()
		}
		a := SetCondition(&u.Status.Conditions, metav1.Condition{Type: v1alpha1.StageVersionReadyCondition,
			Status: metav1.ConditionFalse, Reason: v1alpha1.StageVersionNotFoundReason, Message: msg}, now)
		b := SetCondition(&u.Status.Conditions, metav1.Condition{Type: v1alpha1.StageVersionNotFoundCondition,
			Status: metav1.ConditionTrue, Reason: v1alpha1.StageVersionNotFoundReason, Message: msg}, now)
		return a || b
	}
	changed := removeCondition(&u.Status.Conditions, v1alpha1.StageVersionNotFoundCondition)
	var notReady []string
	for _, sv := range refs {
		if !IsReady(sv) {
			notReady = append(notReady, sv.Name)
		}
	}
	c := metav1.Condition{Type: v1alpha1.StageVersionReadyCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.StageVersionReadyReason}
	switch {
	case len(notReady) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.StageVersionNotReadyReason
		c.Message = fmt.Sprintf("%d of %d referenced StageVersions not yet deployed and healthy: %s",
			len(notReady), len(refs), strings.Join(notReady, ", "))
	case len(refs) == 1:
		c.Message = fmt.Sprintf("StageVersion %s (vector %s) is deployed and healthy", refs[0].Name, refs[0].Spec.Vector)
	default:
		c.Message = fmt.Sprintf("all %d referenced StageVersions are deployed and healthy", len(refs))
	}
	return SetCondition(&u.Status.Conditions, c, now) || changed
}

func matchesLabels(want labels.Set, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Referenced lists the StageVersions a usage references, by name.
func Referenced(s *State, u *v1alpha1.StageVersionUsage) []*v1alpha1.StageVersion {
	return selectionOf(u).referenced(s)
}

// InUse names every StageVersion some usage references.
func InUse(s *State) map[string]bool {
	inUse := make(map[string]bool, len(s.Usages))
	for _, u := range s.Usages {
		for _, sv := range selectionOf(u).referenced(s) {
			inUse[sv.Name] = true
		}
	}
	return inUse
}

// CollectGarbage deletes, per stage, the StageVersions CollectStageVersions
// picks, and (when prune is set) the own usages and the unused versions of
// stages that are gone (stages lists those that exist, by StageKey, with
// their maxRevisions). Run it after the usages are updated.
func CollectGarbage(s *State, stages map[string]int, prune bool) []string {
	var notes []string
	if prune {
		for name := range s.Usages {
			if key, own := ownUsageStage(name); own {
				if _, exists := stages[key]; !exists {
					delete(s.Usages, name)
				}
			}
		}
	}
	inUse := InUse(s)
	byStage := make(map[string][]*v1alpha1.StageVersion, len(stages))
	for _, sv := range s.StageVersions {
		k := StageKey(sv.Spec.Landscape, sv.Spec.Stage)
		byStage[k] = append(byStage[k], sv)
	}
	// Each stage's versions are collected on their own, in any order; the
	// notes of the few stages that lose one go in the order of their keys.
	notesOf := map[string][]string{}
	for key, versions := range byStage {
		sortOldestFirst(versions)
		maxRevisions, exists := stages[key]
		if !exists {
			if !prune {
				continue
			}
			for _, sv := range versions {
				if !inUse[sv.Name] {
					delete(s.StageVersions, sv.Name)
					notesOf[key] = append(notesOf[key], fmt.Sprintf("stage %s: deleted StageVersion %s with its stage", key, sv.Name))
				}
			}
			continue
		}
		for _, name := range CollectStageVersions(versions, inUse, maxRevisions) {
			notesOf[key] = append(notesOf[key], fmt.Sprintf("stage %s: deleted StageVersion %s (vector %s): unused, beyond maxRevisions %d",
				key, name, s.StageVersions[name].Spec.Vector, maxRevisions))
			delete(s.StageVersions, name)
		}
	}
	for _, key := range keys.Sorted(notesOf) {
		notes = append(notes, notesOf[key]...)
	}
	return notes
}

// ownUsageStage is the StageKey of the stage that keeps an own usage.
func ownUsageStage(name string) (string, bool) {
	landscape, rest, ok := strings.Cut(name, ".")
	if !ok {
		return "", false
	}
	stage, reason, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(reason, ".") {
		return "", false
	}
	return StageKey(landscape, stage), true
}
