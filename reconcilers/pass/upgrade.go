package pass

import (
	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// activeVectorOf is the vector a stage runs for the safe-upgrade rules:
// the one its deployer reported active, or, until it reports one (or
// without spec.deployment), the one its overlay names. It is the one
// place that choice is made.
func activeVectorOf(st *v1alpha1.StageStatus) string {
	if st == nil {
		return ""
	}
	if st.ActiveVector != "" {
		return st.ActiveVector
	}
	return st.Vector
}

// stonesByTemplate are every template's stepping stones by component, over
// its base chain; a template whose chain does not resolve has none here
// (its assembly fails and says why).
func stonesByTemplate(snap *source.Snapshot) map[string]map[string][]string {
	templates := make(map[string]v1alpha1.VectorTemplate, len(snap.Templates))
	for name, t := range snap.Templates {
		templates[name] = *t
	}
	out := map[string]map[string][]string{}
	for name := range templates {
		components, err := reconcilers.ResolveComponents(name, templates)
		if err != nil {
			continue
		}
		for _, c := range components {
			if len(c.SteppingStones) == 0 {
				continue
			}
			if out[name] == nil {
				out[name] = map[string][]string{}
			}
			out[name][c.Name] = c.SteppingStones
		}
	}
	return out
}

// upgradeInput is what the safe-upgrade rules know about cfg's target.
func (d *Decision) upgradeInput(cfg *v1alpha1.VectorPromotionConfig, stones map[string]map[string][]string, holds map[string]*reconcilers.StageHold) reconcilers.UpgradeInput {
	t := cfg.Spec.Target
	key := reconcilers.StageKey(t.Landscape, t.Name)
	u := reconcilers.UpgradeInput{Stones: stones, Vectors: d.State.Vectors, Hold: holds[key]}
	if st := d.State.Stages[key]; st != nil {
		u.ActiveVector = activeVectorOf(&st.Status)
		if v := d.State.Vectors[u.ActiveVector]; v != nil {
			u.Active = v.Spec.Components
		}
	}
	return u
}

// requestOptions are what a promotion request asks for beyond the source's
// current vector.
func requestOptions(r reconcilers.PromotionRequest) reconcilers.PromoteOptions {
	return reconcilers.PromoteOptions{Vector: r.PromoteVector, Forced: r.Force, Rollback: r.Rollback}
}
