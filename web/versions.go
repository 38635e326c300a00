package web

import (
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// The StageVersions a stage keeps for rollback, read from the state
// branch's files: stageversions/<landscape>/<stage>/<name>.yaml, and the
// usages that keep them, usages/<name>.yaml (ADR-0013). They are read from
// the files rather than the decoded state so the view shows them from the
// first state branch that holds them.
const (
	stageVersionsDir = "stageversions"
	usagesDir        = "usages"
)

// VersionRow is one StageVersion of a stage.
type VersionRow struct {
	Name, Vector, Commit, RenderDigest string
	Objects                            int
	// UsedBy are the reasons of the usages that name it (target, active,
	// or a declared one).
	UsedBy []string
	Ready  *Condition
}

// stageVersions lists the StageVersions of the stage, newest first, with
// the usages that name them; files that do not decode are skipped (the
// controller reports them).
func stageVersions(files map[string][]byte, landscape, stage string) []VersionRow {
	usedBy := map[string][]string{}
	for name, data := range files {
		if !strings.HasPrefix(name, usagesDir+"/") || path.Ext(name) != ".yaml" {
			continue
		}
		var u v1alpha1.StageVersionUsage
		if yaml.Unmarshal(data, &u) != nil || u.Spec.StageVersionRef == nil {
			continue
		}
		usedBy[u.Spec.StageVersionRef.Name] = append(usedBy[u.Spec.StageVersionRef.Name], u.Spec.Reason)
	}
	prefix := path.Join(stageVersionsDir, landscape, stage) + "/"
	var out []VersionRow
	created := map[string]int64{}
	for name, data := range files {
		if !strings.HasPrefix(name, prefix) || path.Ext(name) != ".yaml" || strings.Contains(strings.TrimPrefix(name, prefix), "/") {
			continue
		}
		var sv v1alpha1.StageVersion
		if yaml.Unmarshal(data, &sv) != nil || sv.Spec.Landscape != landscape || sv.Spec.Stage != stage {
			continue
		}
		reasons := usedBy[sv.Name]
		sort.Strings(reasons)
		out = append(out, VersionRow{Name: sv.Name, Vector: sv.Spec.Vector, Commit: sv.Spec.Commit, RenderDigest: sv.Spec.RenderDigest,
			Objects: len(sv.Spec.Inventory), UsedBy: reasons, Ready: conditionOf(sv.Status.Conditions, "Ready")})
		created[sv.Name] = sv.CreationTimestamp.Unix()
	}
	sort.Slice(out, func(i, j int) bool {
		if ci, cj := created[out[i].Name], created[out[j].Name]; ci != cj {
			return ci > cj
		}
		return out[i].Vector > out[j].Vector
	})
	return out
}
