package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

func TestAggregateStatus(t *testing.T) {
	m := time.Minute
	tests := []struct {
		name           string
		set            []v1alpha1.VectorPromotion
		previous       v1alpha1.VectorPromotionConfigStatus
		last           []metav1.Condition
		lastSuccessful []metav1.Condition
	}{
		{
			name: "six promotions in every state",
			set: []v1alpha1.VectorPromotion{
				promo(1, false, approvedCond(), succeededCond(m)),
				promo(2, false, approvedCond(), failedCond(2*m)),
				promo(3, false, approvedCond(), succeededCond(3*m)),
				promo(4, true, waitingCond(), supersededCond(4*m)),
				promo(5, false, approvedCond(), runningCond(5*m)),
				promo(6, true, waitingCond()),
			},
			last:           []metav1.Condition{approvedCond(), runningCond(5 * m)},
			lastSuccessful: []metav1.Condition{approvedCond(), succeededCond(3 * m)},
		},
		{
			name: "blocked has acted; ready has not",
			set: []v1alpha1.VectorPromotion{
				promo(1, false, approvedCond(), succeededCond(m)),
				promo(2, false, approvedCond(), blockedCond(2*m)),
				promo(3, false, approvedCond()),
				promo(4, true, waitingCond(), supersededCond(4*m)),
				promo(5, true, approvedCond()),
				promo(6, true, waitingCond()),
			},
			last:           []metav1.Condition{approvedCond(), blockedCond(2 * m)},
			lastSuccessful: []metav1.Condition{approvedCond(), succeededCond(m)},
		},
		{
			name: "nothing qualifies: the previous values stay",
			set: []v1alpha1.VectorPromotion{
				promo(1, true, waitingCond()), promo(2, true, waitingCond(), supersededCond(0)),
				promo(3, true, waitingCond()), promo(4, true, approvedCond()),
				promo(5, true, waitingCond()), promo(6, true, waitingCond()),
			},
			previous: v1alpha1.VectorPromotionConfigStatus{
				LastPromotionConditions:           []metav1.Condition{failedCond(0)},
				LastSuccessfulPromotionConditions: []metav1.Condition{succeededCond(0)},
			},
			last:           []metav1.Condition{failedCond(0)},
			lastSuccessful: []metav1.Condition{succeededCond(0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			permute(len(tt.set), func(order []int) {
				n++
				in := make([]v1alpha1.VectorPromotion, len(order))
				for i, j := range order {
					in[i] = tt.set[j]
				}
				last, lastSuccessful := AggregateStatus(in, tt.previous)
				if diff := cmp.Diff(tt.last, last); diff != "" {
					t.Fatalf("order %v: last (-want +got):\n%s", order, diff)
				}
				if diff := cmp.Diff(tt.lastSuccessful, lastSuccessful); diff != "" {
					t.Fatalf("order %v: lastSuccessful (-want +got):\n%s", order, diff)
				}
			})
			if n != 720 {
				t.Errorf("tried %d permutations, want 720", n)
			}
		})
	}
}
