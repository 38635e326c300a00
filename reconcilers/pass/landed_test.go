package pass

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/overlays"
)

func TestLandedResults(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	dev := v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: "dev", Landscape: "dev"}
	cfg := &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "latest-to-dev"},
		Spec: v1alpha1.VectorPromotionConfigSpec{Source: v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"}, Target: dev}}
	running := func(seq int64, vector string) *v1alpha1.VectorPromotion {
		p := reconcilers.NewPromotion(cfg, vector, seq, now)
		started, _, err := reconcilers.Start(p, now)
		if err != nil {
			t.Fatal(err)
		}
		return &started
	}
	snapshot := func(overlay string) *source.Snapshot {
		return &source.Snapshot{Configs: map[string]*v1alpha1.VectorPromotionConfig{"latest-to-dev": cfg},
			StageIndex: map[string]source.StageRef{"dev/dev": {Landscape: "dev", Name: "dev", Vector: overlays.StageVector{Vector: overlay}}}}
	}
	commit := "1111111111111111111111111111111111111111"
	landed := landedHistory{"latest-to-dev-2": {{Vector: "acme:2", Commit: commit}}}
	succeeded := map[string]reconcilers.Result{"latest-to-dev-2": {Outcome: reconcilers.OutcomeSucceeded, Commit: commit}}
	tests := []struct {
		name      string
		snap      *source.Snapshot
		promotion *v1alpha1.VectorPromotion
		history   landedHistory
		results   map[string]reconcilers.Result
		// renders is what checking the overlay's build finds.
		renders error
		want    map[string]reconcilers.Result
	}{
		{name: "its commit is on the target and the overlay names its vector", snap: snapshot("acme:2"),
			promotion: running(2, "acme:2"), history: landed, want: succeeded},
		// A hand-made commit with the promotion's trailers and vector
		// annotation, whose images still run the old version.
		{name: "its trailers and annotation, but the overlay does not run its vector", snap: snapshot("acme:2"),
			promotion: running(2, "acme:2"), history: landed,
			renders: &render.NoEffectError{Problems: []string{"component frontend renders nowhere at 1.2.0"}}},
		{name: "no commit of it on the target: executed again", snap: snapshot("acme:2"),
			promotion: running(2, "acme:2"), history: landedHistory{}},
		{name: "the overlay no longer names its vector: executed again", snap: snapshot("acme:3"),
			promotion: running(2, "acme:2"), history: landed},
		{name: "a commit of the same name with another vector is not its work", snap: snapshot("acme:2"),
			promotion: running(2, "acme:9"), history: landed},
		{name: "an execution result of this process wins", snap: snapshot("acme:2"),
			promotion: running(2, "acme:2"), history: landed,
			results: map[string]reconcilers.Result{"latest-to-dev-2": {Outcome: reconcilers.OutcomeFailed, Message: "refused"}},
			want:    map[string]reconcilers.Result{"latest-to-dev-2": {Outcome: reconcilers.OutcomeFailed, Message: "refused"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := reconcilers.NewState()
			state.Promotions[tt.promotion.Name] = tt.promotion
			renders := func(p *v1alpha1.VectorPromotion, ref source.StageRef) error {
				if p.Name != tt.promotion.Name || ref.Name != "dev" {
					t.Errorf("render check of %s in %s/%s", p.Name, ref.Landscape, ref.Name)
				}
				return tt.renders
			}
			got := LandedResults(tt.snap, state, map[string]PromotionHistory{"latest-to-dev": tt.history}, tt.results, renders)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}

// landedHistory is a target's history as plain data: each promotion's
// commits, newest first.
type landedHistory map[string][]LandedCommit

func (l landedHistory) Landed(promotion string) []LandedCommit { return l[promotion] }
