package pass

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
)

// TestStateRoundTrip encodes a state holding every kind of object and
// decodes it again: nothing is lost, and encoding the decoded state gives
// the same bytes (a steady state makes no commit).
func TestStateRoundTrip(t *testing.T) {
	s := richState(t)
	files, err := reconcilers.EncodeState(s.Clone())
	if err != nil {
		t.Fatal(err)
	}
	got, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Status-only kinds get their apiVersion and kind on the way out.
	if diff := cmp.Diff(s, got, cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
		t.Errorf("decode(encode(state)) (-want +got):\n%s", diff)
	}
	again, err := reconcilers.EncodeState(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, again); diff != "" {
		t.Errorf("encoding the decoded state changed the files (-first +second):\n%s", diff)
	}
	for name, data := range files {
		if !strings.Contains(string(data), "apiVersion: vectorflow.dev/v1alpha1\n") || !strings.Contains(string(data), "kind: ") {
			t.Errorf("%s does not name its apiVersion and kind:\n%s", name, data)
		}
	}
}

func TestStateFilePaths(t *testing.T) {
	s := reconcilers.NewState()
	s.Vectors["acme:2026.11.29-100000000Z"] = &v1alpha1.Vector{ObjectMeta: metav1.ObjectMeta{Name: "acme-2026.11.29-100000000z"},
		Spec: v1alpha1.VectorSpec{Template: "acme", Version: "2026.11.29-100000000Z"}}
	s.Promotions["dev-to-test-3"] = &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test-3"},
		Spec: v1alpha1.VectorPromotionSpec{VectorPromotionConfigName: "dev-to-test", Sequence: 3}}
	s.Configs["dev-to-test"] = &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: "dev-to-test"}}
	s.Templates["acme"] = &v1alpha1.VectorTemplate{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}
	s.Stages["test/eu-1"] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: "eu-1"}, Spec: v1alpha1.StageSpec{Landscape: "test"}}
	s.Approvals[reconcilers.LegacyApprovalPath("dev-to-test-3")] = &reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind, Promotion: "dev-to-test-3"}
	files, err := reconcilers.EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"approvals/dev-to-test-3.yaml",
		"configs/dev-to-test.yaml",
		"promotions/dev-to-test/dev-to-test-3.yaml",
		"stages/test/eu-1.yaml",
		"templates/acme.yaml",
		"vectors/acme/2026.11.29-100000000Z.yaml",
	}
	if diff := cmp.Diff(want, keys.Sorted(files)); diff != "" {
		t.Errorf("state files (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ got, want string }{
		{reconcilers.VectorPath("acme", "2026.11.29-100000000Z"), "vectors/acme/2026.11.29-100000000Z.yaml"},
		{reconcilers.PromotionPath("dev-to-test", "dev-to-test-3"), "promotions/dev-to-test/dev-to-test-3.yaml"},
		{reconcilers.LegacyApprovalPath("dev-to-test-3"), "approvals/dev-to-test-3.yaml"},
		{reconcilers.ApprovalDir("dev-to-test-3"), "approvals/dev-to-test-3"},
	} {
		if tc.got != tc.want {
			t.Errorf("path %q, want %q", tc.got, tc.want)
		}
	}
}

func TestStateDiff(t *testing.T) {
	y := func(s string) []byte { return []byte(s + "\n") }
	tests := []struct {
		name          string
		before, after map[string][]byte
		want          map[string][]byte
	}{
		{
			name:   "nothing changed",
			before: map[string][]byte{"configs/a.yaml": y("a"), "approvals/a-1.yaml": y("ok")},
			after:  map[string][]byte{"configs/a.yaml": y("a")},
			want:   map[string][]byte{},
		},
		{
			name:   "changed and new files are written, unchanged ones are not",
			before: map[string][]byte{"configs/a.yaml": y("a"), "configs/b.yaml": y("b")},
			after:  map[string][]byte{"configs/a.yaml": y("a2"), "configs/b.yaml": y("b"), "promotions/a/a-1.yaml": y("p")},
			want:   map[string][]byte{"configs/a.yaml": y("a2"), "promotions/a/a-1.yaml": y("p")},
		},
		{
			name:   "deleted files are removed with nil",
			before: map[string][]byte{"promotions/a/a-1.yaml": y("p"), "stages/dev/dev.yaml": y("s")},
			after:  map[string][]byte{"stages/dev/dev.yaml": y("s")},
			want:   map[string][]byte{"promotions/a/a-1.yaml": nil},
		},
		{
			name:   "approval files are never written, rewritten or removed",
			before: map[string][]byte{"approvals/a-1.yaml": y("signed"), "approvals/a-2.yaml": y("signed")},
			after:  map[string][]byte{"approvals/a-1.yaml": y("rewritten"), "approvals/a-3.yaml": y("forged")},
			want:   map[string][]byte{},
		},
		{
			name:   "promotion requests are never written or removed by the diff",
			before: map[string][]byte{"requests/a/1.yaml": y("request")},
			after:  map[string][]byte{"requests/a/2.yaml": y("request")},
			want:   map[string][]byte{},
		},
		{
			name:   "files that are not state objects are left alone",
			before: map[string][]byte{"README.md": y("hello"), "vectors/acme/v1.yaml": y("v")},
			after:  map[string][]byte{"vectors/acme/v1.yaml": y("v")},
			want:   map[string][]byte{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reconcilers.StateDiff(tt.before, tt.after)
			// nil (remove) and empty content (write an empty file) must
			// not be confused.
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("StateDiff (-want +got):\n%s", diff)
			}
			for p, data := range got {
				if (tt.want[p] == nil) != (data == nil) {
					t.Errorf("%s: removal %v, want %v", p, data == nil, tt.want[p] == nil)
				}
			}
		})
	}
}

// TestDecodeStateSkipsMalformedFiles: one bad file is reported by name and
// every other object still decodes.
func TestDecodeStateSkipsMalformedFiles(t *testing.T) {
	files, err := reconcilers.EncodeState(richState(t))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := reconcilers.DecodeState(files)
	files["promotions/dev-to-test/dev-to-test-9.yaml"] = []byte("apiVersion: [unclosed\n")
	files["vectors/acme/bad.yaml"] = []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nspec:\n  colour: blue\n")
	files["approvals/nobody.yaml"] = []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Approval\npromotion: \"\"\napprovedAt: null\n")
	files["README.md"] = []byte("not a state object, ignored\n")
	got, errs := reconcilers.DecodeState(files)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	for _, bad := range []string{"promotions/dev-to-test/dev-to-test-9.yaml", "vectors/acme/bad.yaml"} {
		found := false
		for _, m := range msgs {
			found = found || strings.Contains(m, bad)
		}
		if !found {
			t.Errorf("errors %q do not name %s", msgs, bad)
		}
	}
	if len(errs) != 2 {
		t.Errorf("%d errors, want 2: %q", len(errs), msgs)
	}
	// A bad approval file is anyone's to add: it is kept with its problem,
	// to be refused on its own, and is no error of the state branch.
	if a := got.Approvals["approvals/nobody.yaml"]; a == nil || !strings.Contains(a.Problem, "not an Approval naming a promotion") {
		t.Errorf("approvals/nobody.yaml decoded to %+v, want it kept with its problem", a)
	}
	delete(got.Approvals, "approvals/nobody.yaml")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the good files decode differently next to bad ones (-want +got):\n%s", diff)
	}
}

// richState is a state after a few passes over the quickstart's shape:
// vectors (assembled and recorded), promotions in several states, config,
// template and stage statuses, and an approval.
func richState(t *testing.T) *reconcilers.State {
	t.Helper()
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	spec.DevImages = []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/frontend", Image: "ghcr.io/acme/frontend", Tag: "1.2.0"}}
	d := decide(t, Inputs{Snapshot: spec.Build(), State: reconcilers.NewState()}, t0)
	d = decide(t, Inputs{Snapshot: spec.Build(), State: d.State,
		Approvals: map[string]ApprovalCount{"dev-to-test-1": {Needed: 1, Grants: []v1alpha1.ApprovalRecord{
			{ApprovedBy: "alice", ApprovedAt: metav1.NewTime(t0.Add(time.Second)), Commit: strings.Repeat("a", 40)}}}},
		Results: map[string]reconcilers.Result{"latest-to-dev-1": {Outcome: reconcilers.OutcomeSucceeded, Commit: strings.Repeat("c", 40)}},
	}, t0.Add(time.Minute))
	d.State.Approvals["approvals/dev-to-test-1/0123456789abcdef-20260101T000000Z-00000000.yaml"] = &reconcilers.Approval{APIVersion: v1alpha1.GroupVersion.String(), Kind: reconcilers.ApprovalKind,
		Promotion: "dev-to-test-1", Vector: "acme:v1", ApprovedBy: "Alice <alice@example.com>", ApprovedAt: metav1.NewTime(t0.Add(time.Second))}
	if len(d.State.Vectors) < 2 || len(d.State.Promotions) < 2 || len(d.State.Stages) != 3 {
		t.Fatalf("the rich state is not rich: %d vectors, %d promotions, %d stages", len(d.State.Vectors), len(d.State.Promotions), len(d.State.Stages))
	}
	return d.State
}
