package web

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
)

var fixtureNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// pipelineSnapshot is a repository of chains parallel pipelines of steps
// stages each: a template feeds stage c<i>-s0 of every chain, and stage
// c<i>-s<j> (landscape l<j>) feeds c<i>-s<j+1>. Stage sources need
// approval; every config into a stage has one waiting promotion of the
// template's newest vector, which the first stage of each chain runs.
func pipelineSnapshot(chains, steps int) *Snapshot {
	cfg := &source.Snapshot{URL: "https://git.example.com/acme.git", Branch: "main", Commit: "c0ffee",
		Landscapes: map[string]*v1alpha1.Landscape{}, Stages: map[string]*v1alpha1.Stage{},
		Templates: map[string]*v1alpha1.VectorTemplate{"acme": {ObjectMeta: metav1.ObjectMeta{Name: "acme"}}},
		Configs:   map[string]*v1alpha1.VectorPromotionConfig{}, StageIndex: map[string]source.StageRef{}}
	state := reconcilers.NewState()
	old, cur := "acme:2026.11.30-100000000Z", "acme:2026.12.1-100000000Z"
	for i, ref := range []string{old, cur} {
		tmpl, version, _ := v1alpha1.ParseVectorRef(ref)
		state.Vectors[ref] = &v1alpha1.Vector{Spec: v1alpha1.VectorSpec{Template: tmpl, Version: version, Digest: fmt.Sprintf("sha256:%064d", i),
			Components: []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/api", Tag: fmt.Sprintf("1.0.%d", i), Digest: fmt.Sprintf("sha256:%064d", i+10)}}}}
	}
	state.Templates["acme"] = &v1alpha1.VectorTemplate{Status: v1alpha1.VectorTemplateStatus{LatestVector: cur}}
	since := metav1.NewTime(fixtureNow.Add(-26 * time.Hour))
	required := true
	for j := 0; j < steps; j++ {
		l := fmt.Sprintf("l%d", j)
		cfg.Landscapes[l] = &v1alpha1.Landscape{ObjectMeta: metav1.ObjectMeta{Name: l}}
	}
	for i := 0; i < chains; i++ {
		for j := 0; j < steps; j++ {
			name, l := fmt.Sprintf("c%d-s%d", i, j), fmt.Sprintf("l%d", j)
			key := source.StageKey(l, name)
			cfg.Stages[key] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.StageSpec{Landscape: l, Path: "apps/" + name}}
			vector := old
			if j == 0 {
				vector = cur
			}
			state.Stages[key] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.StageSpec{Landscape: l},
				Status: v1alpha1.StageStatus{Vector: vector, VectorSince: &since, ActiveVector: vector, ActiveSince: &since}}
			cfg.StageIndex[key] = source.StageRef{Landscape: l, Name: name, Overlay: "apps/" + name}
			src := v1alpha1.SourceReference{Kind: v1alpha1.VectorTemplateKind, Name: "acme"}
			config := fmt.Sprintf("latest-to-c%d", i)
			if j > 0 {
				src = v1alpha1.SourceReference{Kind: v1alpha1.StageKind, Name: fmt.Sprintf("c%d-s%d", i, j-1), Landscape: fmt.Sprintf("l%d", j-1)}
				config = fmt.Sprintf("c%d-s%d-to-s%d", i, j-1, j)
			}
			spec := v1alpha1.VectorPromotionConfigSpec{Source: src, Target: v1alpha1.StageReference{Kind: v1alpha1.StageKind, Name: name, Landscape: l}}
			if j > 0 {
				spec.Approval = &v1alpha1.ApprovalPolicy{Required: &required, Approvers: []v1alpha1.Approver{{Name: "alice", PublicKey: "ssh-ed25519 AAAA"}}}
			}
			cfg.Configs[config] = &v1alpha1.VectorPromotionConfig{ObjectMeta: metav1.ObjectMeta{Name: config}, Spec: spec}
			drift := metav1.ConditionFalse
			if j == 1 {
				drift = metav1.ConditionTrue
			}
			state.Configs[config] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{Sequence: 2, SourceVector: cur,
				Conditions: []metav1.Condition{{Type: v1alpha1.DriftCondition, Status: drift, Reason: v1alpha1.PromotionOfferedReason,
					Message: "test names " + old + ", the source offers " + cur, LastTransitionTime: since}}}}
			if j == 1 {
				p := &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: config + "-2"}, Spec: v1alpha1.VectorPromotionSpec{
					VectorPromotionConfigName: config, Source: src, Target: spec.Target, Vector: cur, RequireApproval: true, Sequence: 2},
					Status: v1alpha1.VectorPromotionStatus{State: v1alpha1.PromotionWaiting, Conditions: []metav1.Condition{
						{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.WaitingForApprovalReason,
							Message: "waiting for an approval <b>by alice</b>", LastTransitionTime: since}}}}
				state.Promotions[p.Name] = p
				done := p.DeepCopy()
				done.Name, done.Spec.Sequence, done.Spec.Vector = config+"-1", 1, old
				done.Status = v1alpha1.VectorPromotionStatus{State: v1alpha1.PromotionSucceeded,
					Approval:  &v1alpha1.ApprovalRecord{ApprovedBy: "alice", ApprovedAt: since, Commit: "abcdef0123456789"},
					Approvals: []v1alpha1.ApprovalRecord{{ApprovedBy: "alice", ApprovedAt: since, Commit: "abcdef0123456789"}},
					Conditions: []metav1.Condition{
						{Type: v1alpha1.ApprovedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ApprovedReason, LastTransitionTime: since},
						{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.PromotionSucceededReason, LastTransitionTime: since}}}
				state.Promotions[done.Name] = done
			}
		}
	}
	return &Snapshot{ID: "acme", URL: cfg.URL, Branch: "main", StateBranch: controller.DefaultStateBranch, Config: cfg, Verified: true,
		State: controller.VerifiedState{State: state, Files: versionFiles(old, cur), Verdict: trust.CommitVerdict{Trusted: true}}, ReadAt: fixtureNow}
}

// versionFiles are the StageVersions of stage c0-s1 at both vectors, the
// newer one the target, and one of c0-s2, as the state branch holds them.
func versionFiles(old, cur string) map[string][]byte {
	files := map[string][]byte{}
	add := func(p string, obj any) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			panic(err)
		}
		files[p] = b
	}
	for i, v := range []string{old, cur} {
		name := fmt.Sprintf("c0-s1-%d", i)
		add("stageversions/l1/c0-s1/"+name+".yaml", &v1alpha1.StageVersion{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(fixtureNow.Add(time.Duration(i) * time.Hour))},
			Spec: v1alpha1.StageVersionSpec{Stage: "c0-s1", Landscape: "l1", Vector: v, Commit: fmt.Sprintf("%040d", i), RenderDigest: fmt.Sprintf("sha256:%064d", i),
				Inventory: []v1alpha1.InventoryEntry{{Group: "apps", Kind: "Deployment", Namespace: "acme", Name: "api"}}},
			Status: v1alpha1.StageVersionStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DeployedHealthy"}}}})
	}
	add("stageversions/l2/c0-s2/c0-s2-0.yaml", &v1alpha1.StageVersion{ObjectMeta: metav1.ObjectMeta{Name: "c0-s2-0"},
		Spec: v1alpha1.StageVersionSpec{Stage: "c0-s2", Landscape: "l2", Vector: "acme:1999.1.1-000000000Z"}})
	add("usages/c0-s1-target.yaml", &v1alpha1.StageVersionUsage{ObjectMeta: metav1.ObjectMeta{Name: "c0-s1-target"},
		Spec: v1alpha1.StageVersionUsageSpec{Reason: "target", StageVersionRef: &v1alpha1.LocalObjectReference{Name: "c0-s1-1"}}})
	return files
}

// fakeRepository serves a fixed snapshot; its history and descriptions are
// canned, as the reader's come from git and kustomize.
type fakeRepository struct {
	snap     *Snapshot
	history  []controller.AuditEntry
	describe pass.PullRequestDescription
}

func (f *fakeRepository) Snapshot() *Snapshot { return f.snap }

func (f *fakeRepository) Audit(_ context.Context, stage string) ([]controller.AuditEntry, error) {
	if f.snap.Config.Stages[stage] == nil {
		return nil, errors.New("no such stage")
	}
	return f.history, nil
}

func (f *fakeRepository) Describe(_ context.Context, promotion string) (pass.PullRequestDescription, error) {
	if f.snap.State.State.Promotions[promotion] == nil {
		return pass.PullRequestDescription{}, errors.New("no such promotion")
	}
	return f.describe, nil
}

func newFakeRepository(chains, steps int) *fakeRepository {
	return &fakeRepository{
		snap: pipelineSnapshot(chains, steps),
		history: []controller.AuditEntry{
			{Commit: "1111111111111111111111111111111111111111", Stage: "l1/c0-s1", Time: "2026-11-30T10:00:00Z", Promotion: "c0-s0-to-s1-1",
				Sequence: 1, Vector: "acme:2026.11.30-100000000Z", ApprovedBy: "alice", Signer: "vectorflow", SignatureVerified: true,
				ApprovalVerified: true, Verified: true},
			{Commit: "2222222222222222222222222222222222222222", Stage: "l1/c0-s1", Time: "2026-11-29T10:00:00Z", Subject: "hand edit <script>",
				Reason: controller.ReasonUnsigned},
		},
		describe: pass.PullRequestDescription{
			From:      []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/api", Tag: "1.0.0", Digest: "sha256:" + fmt.Sprintf("%064d", 10)}},
			To:        []v1alpha1.VectorComponent{{Name: "registry.example.com/acme/api", Tag: "1.0.1", Digest: "sha256:" + fmt.Sprintf("%064d", 11)}},
			Manifests: pass.ManifestChanges{Changed: []string{"Deployment acme/api"}},
		},
	}
}
