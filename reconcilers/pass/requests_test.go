package pass

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

// TestDecideConsumesRequests: a valid request makes one fresh promotion;
// every request, valid or not, is consumed with a line saying what became
// of it.
func TestDecideConsumesRequests(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	state := passtest.RoundTrip(t, decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0).State)
	req := func(config, vector string) reconcilers.PromotionRequest {
		return reconcilers.PromotionRequest{Kind: reconcilers.PromotionRequestKind, Config: config, Vector: vector}
	}
	requests := []RequestVerdict{
		{Path: "requests/dev-to-test/a.yaml", Request: req("dev-to-test", "acme:v1"), Requester: "alice"},
		{Path: "requests/dev-to-test/b.yaml", Request: req("dev-to-test", ""), Refusal: "the request commit 0123 is not signed"},
		{Path: "requests/dev-to-test/c.yaml", Request: req("dev-to-test", "acme:v0"), Requester: "alice"},
		{Path: "requests/nope/d.yaml", Request: req("nope", ""), Requester: "alice"},
	}
	d := decide(t, Inputs{Snapshot: spec.Build(), State: state, Requests: requests}, t0.Add(time.Minute))
	passtest.WantPromotion(t, d.State, "dev-to-test-2", v1alpha1.PromotionWaiting, "acme:v1")
	if p := d.State.Promotions["dev-to-test-3"]; p != nil {
		t.Errorf("a refused request made %s", p.Name)
	}
	want := []string{"requests/dev-to-test/a.yaml", "requests/dev-to-test/b.yaml", "requests/dev-to-test/c.yaml", "requests/nope/d.yaml"}
	if diff := cmp.Diff(want, d.ConsumedRequests); diff != "" {
		t.Errorf("consumed requests (-want +got):\n%s", diff)
	}
	wantLines := []string{
		"promotion request requests/dev-to-test/a.yaml by alice: created dev-to-test-2",
		"promotion request requests/dev-to-test/b.yaml dropped: the request commit 0123 is not signed",
		"promotion request requests/dev-to-test/c.yaml by alice dropped: promote dev-to-test: the source offers acme:v1 now, not the requested acme:v0; promote again",
		"promotion request requests/nope/d.yaml by alice dropped: promote: no VectorPromotionConfig nope in " + spec.Build().URL + " (list them with vectorflow get configs)",
	}
	for _, line := range wantLines {
		found := false
		for _, tr := range d.Transitions {
			found = found || tr == line
		}
		if !found {
			t.Errorf("no transition %q in %q", line, d.Transitions)
		}
	}
}
