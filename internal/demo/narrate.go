package demo

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

// Narration is what changed between two readings of the state branch, told
// in short sentences, and the promotions that wrote a commit.
type Narration struct {
	Lines    []string
	Promoted []*v1alpha1.VectorPromotion
}

// Narrate tells what changed from before to after: vectors assembled,
// promotions created, approved, committed, superseded, failed or removed.
func Narrate(before, after *reconcilers.State) Narration {
	var n Narration
	for _, ref := range keys.Sorted(after.Vectors) {
		if before.Vectors[ref] != nil {
			continue
		}
		v := after.Vectors[ref]
		if stages := runningStages(after, ref); len(stages) > 0 && !isLatest(after, v) {
			n.Lines = append(n.Lines, fmt.Sprintf("Recorded vector %s, read from the overlay of %s: %s.",
				ref, strings.Join(stages, " and "), components(v)))
			continue
		}
		n.Lines = append(n.Lines, fmt.Sprintf("Assembled vector %s from the registry: %s.", ref, components(v)))
	}
	var created, approved, finished []string
	for _, p := range promotionsInOrder(after) {
		old := before.Promotions[p.Name]
		switch {
		case old == nil:
			created = append(created, fmt.Sprintf("Created promotion %s of %s from %s to %s: %s.",
				p.Name, p.Spec.Vector, describeSource(p.Spec.Source), describeTarget(p.Spec.Target), describeState(p.Status.State)))
		case old.Status.Approval == nil && p.Status.Approval != nil:
			approved = append(approved, fmt.Sprintf("Promotion %s: the approval by %s is verified against the config's approvers.",
				p.Name, p.Status.Approval.ApprovedBy))
		}
		if old != nil && old.Status.State == p.Status.State {
			continue
		}
		switch p.Status.State {
		case v1alpha1.PromotionSucceeded:
			n.Promoted = append(n.Promoted, p)
			finished = append(finished, fmt.Sprintf("Promotion %s committed %s into %s: commit %s.",
				p.Name, p.Spec.Vector, describeTarget(p.Spec.Target), v1alpha1.ShortCommit(p.Status.Commit)))
		case v1alpha1.PromotionSuperseded:
			by := "a newer promotion to " + describeTarget(p.Spec.Target)
			if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c != nil {
				if rest, ok := strings.CutPrefix(c.Message, "superseded by "); ok {
					by = rest
				}
			}
			finished = append(finished, fmt.Sprintf("Promotion %s (%s) is Superseded by %s.", p.Name, p.Spec.Vector, by))
		case v1alpha1.PromotionFailed:
			msg := ""
			if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c != nil {
				msg = ": " + c.Message
			}
			finished = append(finished, fmt.Sprintf("Promotion %s failed%s.", p.Name, msg))
		default:
			if old != nil {
				finished = append(finished, fmt.Sprintf("Promotion %s is now %s.", p.Name, p.Status.State))
			}
		}
	}
	n.Lines = append(n.Lines, approved...)
	n.Lines = append(n.Lines, finished...)
	n.Lines = append(n.Lines, created...)
	for _, name := range keys.Sorted(before.Promotions) {
		if after.Promotions[name] == nil {
			n.Lines = append(n.Lines, fmt.Sprintf("Promotion %s was removed: it finished and outlived its ttlAfterFinished.", name))
		}
	}
	return n
}

// Trailers are the trailer lines of a commit message: the last paragraph,
// when every line of it is `Key: value`.
func Trailers(message string) []string {
	paragraphs := strings.Split(strings.TrimSpace(message), "\n\n")
	last := paragraphs[len(paragraphs)-1]
	if len(paragraphs) < 2 {
		return nil
	}
	lines := strings.Split(last, "\n")
	for _, l := range lines {
		if k, _, ok := strings.Cut(l, ": "); !ok || k == "" || strings.Contains(k, " ") {
			return nil
		}
	}
	return lines
}

// runningStages are the stages whose overlay names vector ref.
func runningStages(s *reconcilers.State, ref string) []string {
	var out []string
	for _, key := range keys.Sorted(s.Stages) {
		if s.Stages[key].Status.Vector == ref {
			out = append(out, "Stage "+key)
		}
	}
	return out
}

// isLatest reports whether v is its template's newest assembled vector.
func isLatest(s *reconcilers.State, v *v1alpha1.Vector) bool {
	t := s.Templates[v.Spec.Template]
	return t != nil && t.Status.LatestVector == v.Ref()
}

// promotionsInOrder sorts by the order a change flows (configs fed by a
// template first), then by sequence.
func promotionsInOrder(s *reconcilers.State) []*v1alpha1.VectorPromotion {
	list := make([]*v1alpha1.VectorPromotion, 0, len(s.Promotions))
	for _, p := range s.Promotions {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Spec, list[j].Spec
		if ak, bk := a.Source.Kind == v1alpha1.StageKind, b.Source.Kind == v1alpha1.StageKind; ak != bk {
			return !ak
		}
		if a.VectorPromotionConfigName != b.VectorPromotionConfigName {
			return a.VectorPromotionConfigName < b.VectorPromotionConfigName
		}
		return a.Sequence < b.Sequence
	})
	return list
}

func components(v *v1alpha1.Vector) string {
	parts := make([]string, 0, len(v.Spec.Components))
	for _, c := range v.Spec.Components {
		version := c.Tag
		if version == "" {
			version = v1alpha1.ShortDigest(c.Digest)
		}
		parts = append(parts, path.Base(c.Name)+" "+version)
	}
	return strings.Join(parts, ", ")
}

func describeSource(s v1alpha1.SourceReference) string {
	if s.Kind == v1alpha1.StageKind {
		return fmt.Sprintf("Stage %s/%s", s.Landscape, s.Name)
	}
	return s.Kind + " " + s.Name
}

func describeTarget(t v1alpha1.StageReference) string {
	return fmt.Sprintf("Stage %s/%s", t.Landscape, t.Name)
}

func describeState(s v1alpha1.PromotionState) string {
	switch s {
	case v1alpha1.PromotionWaiting:
		return "Waiting for approval"
	case v1alpha1.PromotionReady, v1alpha1.PromotionInProgress:
		return string(s) + ", no approval needed"
	}
	return string(s)
}
