package reconcilers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// StageVersions (ADR-0013): a StageVersion is a stage rendered at a vector.
// One is recorded for the vector a stage's overlay names (when a promotion's
// commit lands, and when vectorflow first sees the stage) and for every
// vector a deployer reports on. Each stage keeps two usages of its own,
// target and active (ObserveStage); users declare others
// (ReconcileUsages); CollectStageVersions deletes what no usage holds,
// beyond the stage's spec.maxRevisions.

// DefaultMaxRevisions is how many StageVersions a stage keeps when its
// spec.maxRevisions is unset.
const DefaultMaxRevisions = 10

// StageRender is what a render of a stage's overlay at one commit showed.
type StageRender struct {
	// Commit of the overlay's repository that was rendered.
	Commit string
	// Digest is the sha256 of the rendered manifests, "sha256:<hex>".
	Digest    string
	Inventory []v1alpha1.InventoryEntry
}

// StageVersionName is the name of the StageVersion of a stage at a vector:
// the stage's name and a hash of landscape, stage and vector. It is the same
// in every pass and on every replica, and a DNS-1123 label, so a usage's
// spec.stageVersionRef can name it.
func StageVersionName(landscape, stage, vector string) string {
	sum := sha256.Sum256([]byte(landscape + "\x00" + stage + "\x00" + vector))
	prefix := stage
	if len(prefix) > 52 {
		prefix = strings.TrimRight(prefix[:52], "-")
	}
	return prefix + "-" + hex.EncodeToString(sum[:5])
}

// MaxRevisions is the stage's spec.maxRevisions, defaulted, and never below
// one: a stage always keeps the version it runs.
func MaxRevisions(spec *v1alpha1.StageSpec) int {
	if spec.MaxRevisions == nil {
		return DefaultMaxRevisions
	}
	return max(1, int(*spec.MaxRevisions))
}

// newStageVersion is a stage's version at vector, not yet reported on.
func newStageVersion(landscape, stage, vector string, r StageRender, ready metav1.Condition, now time.Time) *v1alpha1.StageVersion {
	sv := &v1alpha1.StageVersion{
		ObjectMeta: metav1.ObjectMeta{
			Name:              StageVersionName(landscape, stage, vector),
			CreationTimestamp: Stamp(now),
			Labels:            map[string]string{v1alpha1.StageNameLabel: stage, v1alpha1.VectorLabel: vector},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(),
				Kind: v1alpha1.StageKind, Name: stage}},
		},
		Spec: v1alpha1.StageVersionSpec{Stage: stage, Landscape: landscape, Vector: vector,
			Commit: r.Commit, RenderDigest: r.Digest, Inventory: slices.Clone(r.Inventory)},
	}
	SetCondition(&sv.Status.Conditions, ready, now)
	return sv
}

// StageVersionsOf returns the StageVersions of one stage, oldest first
// (by creation, then name).
func (s *State) StageVersionsOf(landscape, stage string) []*v1alpha1.StageVersion {
	var out []*v1alpha1.StageVersion
	for _, sv := range s.StageVersions {
		if sv.Spec.Landscape == landscape && sv.Spec.Stage == stage {
			out = append(out, sv)
		}
	}
	sortOldestFirst(out)
	return out
}

func sortOldestFirst(versions []*v1alpha1.StageVersion) {
	slices.SortFunc(versions, func(a, b *v1alpha1.StageVersion) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// IsReady reports whether a StageVersion's Ready condition is True.
func IsReady(sv *v1alpha1.StageVersion) bool {
	return meta.IsStatusConditionTrue(sv.Status.Conditions, v1alpha1.ReadyCondition)
}

// CollectStageVersions picks the StageVersions of one stage to delete
// (versions oldest first, as StageVersionsOf returns them): while the stage
// has more than maxRevisions, the oldest one that no usage holds (inUse)
// goes. The newest ready version always stays, so a stage that ever had a
// ready version keeps one to fall back to, even if that leaves more than
// maxRevisions; so do versions in use.
func CollectStageVersions(versions []*v1alpha1.StageVersion, inUse map[string]bool, maxRevisions int) []string {
	excess := len(versions) - max(1, maxRevisions)
	if excess <= 0 {
		return nil
	}
	newestReady := ""
	for _, sv := range versions {
		if IsReady(sv) {
			newestReady = sv.Name
		}
	}
	var del []string
	for _, sv := range versions {
		if excess == 0 {
			break
		}
		if inUse[sv.Name] || sv.Name == newestReady {
			continue
		}
		del = append(del, sv.Name)
		excess--
	}
	return del
}

// describeDeployment is how messages name a stage's deployer:
// "Kustomization flux-system/dev".
func describeDeployment(d *v1alpha1.DeploymentReference) string {
	if d == nil {
		return "its deployer"
	}
	if d.Namespace == "" {
		return d.Kind + " " + d.Name
	}
	return fmt.Sprintf("%s %s/%s", d.Kind, d.Namespace, d.Name)
}

// ShortRevision is a commit as messages show it.
func ShortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
