package demo

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
)

func TestNarrate(t *testing.T) {
	vector := func(version, tag string) *v1alpha1.Vector {
		return &v1alpha1.Vector{Spec: v1alpha1.VectorSpec{Template: "acme", Version: version, Components: []v1alpha1.VectorComponent{
			{Name: "127.0.0.1:5000/acme/frontend", Tag: tag}, {Name: "127.0.0.1:5000/acme/service-a", Digest: "sha256:0123456789abcdef0123"}}}}
	}
	promotion := func(name, config string, seq int64, src v1alpha1.SourceReference, vec string, state v1alpha1.PromotionState, mods ...func(*v1alpha1.VectorPromotion)) *v1alpha1.VectorPromotion {
		p := &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.VectorPromotionSpec{
			VectorPromotionConfigName: config, Sequence: seq, Source: src, Vector: vec,
			Target: v1alpha1.StageReference{Landscape: "test", Name: "test"}}, Status: v1alpha1.VectorPromotionStatus{State: state}}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	fromTemplate := v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"}
	fromDev := v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Landscape: "dev", Name: "dev"}
	state := func(fill func(*reconcilers.State)) *reconcilers.State {
		s := reconcilers.NewState()
		fill(s)
		return s
	}
	succeeded := func(p *v1alpha1.VectorPromotion) {
		p.Status.Commit = "0123456789abcdef0123456789abcdef01234567"
		p.Status.Approval = &v1alpha1.ApprovalRecord{ApprovedBy: "alice"}
	}
	superseded := func(p *v1alpha1.VectorPromotion) {
		p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.PromotionSupersededReason, Message: "superseded by dev-to-test-2 (acme:2)"}}
	}

	tests := []struct {
		name          string
		before, after *reconcilers.State
		want          []string
		promoted      []string
	}{
		{
			name:   "nothing changed",
			before: state(func(s *reconcilers.State) { s.Vectors["acme:1"] = vector("1", "1.0.0") }),
			after:  state(func(s *reconcilers.State) { s.Vectors["acme:1"] = vector("1", "1.0.0") }),
		},
		{
			name:   "a vector read from an overlay and one assembled from the registry",
			before: reconcilers.NewState(),
			after: state(func(s *reconcilers.State) {
				s.Vectors["acme:0"] = vector("0", "1.0.0")
				s.Vectors["acme:1"] = vector("1", "1.2.0")
				s.Stages["dev/dev"] = &v1alpha1.Stage{Status: v1alpha1.StageStatus{Vector: "acme:0"}}
				s.Templates["acme"] = &v1alpha1.VectorTemplate{Status: v1alpha1.VectorTemplateStatus{LatestVector: "acme:1"}}
			}),
			want: []string{
				"Recorded vector acme:0, read from the overlay of Stage dev/dev: frontend 1.0.0, service-a sha256:0123456789ab.",
				"Assembled vector acme:1 from the registry: frontend 1.2.0, service-a sha256:0123456789ab.",
			},
		},
		{
			name:   "created promotions, template-fed first",
			before: reconcilers.NewState(),
			after: state(func(s *reconcilers.State) {
				s.Promotions["dev-to-test-1"] = promotion("dev-to-test-1", "dev-to-test", 1, fromDev, "acme:0", v1alpha1.PromotionWaiting)
				s.Promotions["latest-to-dev-1"] = promotion("latest-to-dev-1", "latest-to-dev", 1, fromTemplate, "acme:1", v1alpha1.PromotionInProgress)
			}),
			want: []string{
				"Created promotion latest-to-dev-1 of acme:1 from VectorTemplate acme to Stage test/test: InProgress, no approval needed.",
				"Created promotion dev-to-test-1 of acme:0 from Stage dev/dev to Stage test/test: Waiting for approval.",
			},
		},
		{
			name: "approved and committed, the older candidate superseded, a finished one removed",
			before: state(func(s *reconcilers.State) {
				s.Promotions["dev-to-test-1"] = promotion("dev-to-test-1", "dev-to-test", 1, fromDev, "acme:0", v1alpha1.PromotionWaiting)
				s.Promotions["dev-to-test-2"] = promotion("dev-to-test-2", "dev-to-test", 2, fromDev, "acme:2", v1alpha1.PromotionWaiting)
				s.Promotions["latest-to-dev-0"] = promotion("latest-to-dev-0", "latest-to-dev", 0, fromTemplate, "acme:0", v1alpha1.PromotionSucceeded)
			}),
			after: state(func(s *reconcilers.State) {
				s.Promotions["dev-to-test-1"] = promotion("dev-to-test-1", "dev-to-test", 1, fromDev, "acme:0", v1alpha1.PromotionSuperseded, superseded)
				s.Promotions["dev-to-test-2"] = promotion("dev-to-test-2", "dev-to-test", 2, fromDev, "acme:2", v1alpha1.PromotionSucceeded, succeeded)
			}),
			want: []string{
				"Promotion dev-to-test-2: the approval by alice is verified against the config's approvers.",
				"Promotion dev-to-test-1 (acme:0) is Superseded by dev-to-test-2 (acme:2).",
				"Promotion dev-to-test-2 committed acme:2 into Stage test/test: commit 0123456789ab.",
				"Promotion latest-to-dev-0 was removed: it finished and outlived its ttlAfterFinished.",
			},
			promoted: []string{"dev-to-test-2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Narrate(tt.before, tt.after)
			if diff := cmp.Diff(tt.want, got.Lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			var promoted []string
			for _, p := range got.Promoted {
				promoted = append(promoted, p.Name)
			}
			if diff := cmp.Diff(tt.promoted, promoted); diff != "" {
				t.Errorf("promoted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrailers(t *testing.T) {
	tests := []struct {
		message string
		want    []string
	}{
		{"promote acme:1 to dev/dev\n\nbody text here\n\nVectorflow-Promotion: latest-to-dev-1\nApproved-by: alice\n",
			[]string{"Vectorflow-Promotion: latest-to-dev-1", "Approved-by: alice"}},
		{"subject only\n", nil},
		{"subject\n\na closing paragraph: not trailers\n", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Trailers(tt.message)); diff != "" {
			t.Errorf("Trailers(%q) (-want +got):\n%s", tt.message, diff)
		}
	}
}

func TestRepository(t *testing.T) {
	keys := Keys{AlicePublicKey: "ssh-ed25519 AAAAnew alice@example.com", ControllerPublicKey: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nxyz\n-----END PGP PUBLIC KEY BLOCK-----\n"}
	quickstart := fstest.MapFS{
		"vectorflow/promotions.yaml":           {Data: []byte("approvers:\n  - name: alice\n    publicKey: ssh-ed25519 AAAAold alice@example.com\n")},
		"vectorflow/template.yaml":             {Data: []byte("old\n")},
		"vectorflow/landscapes.yaml":           {Data: []byte("old\n")},
		"apps/overlays/dev/kustomization.yaml": {Data: []byte("images:\n  - name: registry.example.com/acme/frontend\n")},
	}
	files, err := Repository(quickstart, "127.0.0.1:5000", keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"vectorflow/promotions.yaml":           "approvers:\n  - name: alice\n    publicKey: ssh-ed25519 AAAAnew alice@example.com\n",
		"apps/overlays/dev/kustomization.yaml": "images:\n  - name: 127.0.0.1:5000/acme/frontend\n",
		"vectorflow/template.yaml": `# The demo's VectorTemplate: every component follows a semver range, so each
# new tag in the registry that fits makes a new vector.
apiVersion: vectorflow.dev/v1alpha1
kind: VectorTemplate
metadata:
  name: acme
spec:
  components:
    - name: 127.0.0.1:5000/acme/frontend
      version: ">=1.0.0 <2.0.0"
    - name: 127.0.0.1:5000/acme/service-a
      version: ">=1.0.0 <2.0.0"
    - name: 127.0.0.1:5000/acme/service-b
      version: ">=1.0.0 <2.0.0"
`,
	}
	for p, w := range want {
		if diff := cmp.Diff(w, string(files[p])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
	landscapes := string(files["vectorflow/landscapes.yaml"])
	for _, name := range []string{"dev", "test", "prod"} {
		if !strings.Contains(landscapes, "name: "+name+"\nspec:\n  signers:\n    - name: vectorflow\n      publicKey: |\n        -----BEGIN PGP PUBLIC KEY BLOCK-----\n        xyz\n") {
			t.Errorf("landscape %s does not name the controller's key as signer:\n%s", name, landscapes)
		}
	}

	delete(quickstart, "vectorflow/promotions.yaml")
	if _, err := Repository(quickstart, "127.0.0.1:5000", keys); err == nil {
		t.Error("a quickstart without the example approver was accepted")
	}
}
