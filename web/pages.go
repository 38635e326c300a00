package web

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Filter selects promotions; empty fields select all.
type Filter struct {
	Config, Stage, State string
}

// PromotionList is the promotions page.
type PromotionList struct {
	Repo    *Snapshot
	Banners []Banner
	Filter  Filter
	Rows    []PromotionRow
	// Configs, Stages and States are what the filter may choose from.
	Configs, Stages []string
	States          []v1alpha1.PromotionState
}

// BuildPromotionList lists the promotions that pass f, which must be valid
// (see ValidateFilter).
func BuildPromotionList(snap *Snapshot, f Filter) PromotionList {
	l := PromotionList{Repo: snap, Banners: snap.banners(), Filter: f, States: AllStates}
	state := snap.state()
	configs, stages := map[string]bool{}, map[string]bool{}
	if snap.Config != nil {
		for name := range snap.Config.Configs {
			configs[name] = true
		}
		for key := range snap.Config.Stages {
			stages[key] = true
		}
	}
	for _, p := range sortedPromotions(state) {
		row := promotionRow(snap.ID, p)
		configs[row.Config], stages[row.TargetKey] = true, true
		if (f.Config == "" || row.Config == f.Config) && (f.Stage == "" || row.TargetKey == f.Stage) && (f.State == "" || row.State == f.State) {
			l.Rows = append(l.Rows, row)
		}
	}
	l.Configs, l.Stages = keys.Sorted(configs), keys.Sorted(stages)
	return l
}

// ValidateFilter says what is wrong with f for snap, "" when nothing: a
// filter naming what does not exist is a mistake to report, not an empty
// list to show.
func ValidateFilter(snap *Snapshot, f Filter) string {
	l := BuildPromotionList(snap, Filter{})
	if f.Config != "" && !slices.Contains(l.Configs, f.Config) {
		return fmt.Sprintf("config=%q: %s has no VectorPromotionConfig of that name (have: %s)", f.Config, snap.URL, listOrNone(l.Configs))
	}
	if f.Stage != "" && !slices.Contains(l.Stages, f.Stage) {
		return fmt.Sprintf("stage=%q: %s has no Stage of that key; give `landscape/name` (have: %s)", f.Stage, snap.URL, listOrNone(l.Stages))
	}
	if f.State != "" && !slices.Contains(AllStates, v1alpha1.PromotionState(f.State)) {
		names := make([]string, len(AllStates))
		for i, s := range AllStates {
			names[i] = string(s)
		}
		return fmt.Sprintf("state=%q: not a promotion state; use one of %s", f.State, strings.Join(names, ", "))
	}
	return ""
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(" and %d more", len(names)-20)
	}
	return strings.Join(names, ", ")
}

// PromotionPage is one promotion.
type PromotionPage struct {
	Repo    *Snapshot
	Banners []Banner
	Row     PromotionRow
	P       *v1alpha1.VectorPromotion
	// Conditions are Approved and Succeeded, with their reasons.
	Conditions []Condition
	Approvals  []Approval
	// MinApprovals is how many distinct approvers the config wants.
	MinApprovals int
	Approvers    []string
	// ApproveCommand is the exact command that approves it, for an open
	// promotion that needs approval.
	ApproveCommand string
	// Changes and Manifests describe what it would change (open promotions
	// only); DescribeProblem says why they are missing.
	Changes         []ComponentChange
	Manifests       *ManifestChanges
	RenderProblem   string
	DescribeProblem string
	PullRequest     *v1alpha1.PullRequestStatus
}

// Approval is one counted approval.
type Approval struct {
	By, At, Commit string
	// Verified: the controller counted the approval after checking the
	// signature of the commit that added it against the config's
	// approvers, and the trusted keys verify the state branch that says
	// so; without --trust nobody has checked the record.
	Verified bool
}

// ComponentChange is one component the promotion changes.
type ComponentChange struct {
	Name                        string
	OldTag, OldDigest, OldImage string
	NewTag, NewDigest, NewImage string
	Added, Removed              bool
}

// ManifestChanges are the rendered objects the promotion adds, changes and
// removes.
type ManifestChanges struct{ Added, Changed, Removed []string }

// BuildPromotionPage shows promotion name; ok is false when there is none.
// describe is what the promotion changes, or the error computing it; it is
// called only for open promotions.
func BuildPromotionPage(snap *Snapshot, name string, describe func() (pass.PullRequestDescription, error)) (PromotionPage, bool) {
	state := snap.state()
	p := state.Promotions[name]
	if p == nil {
		return PromotionPage{}, false
	}
	pg := PromotionPage{Repo: snap, Banners: snap.banners(), Row: promotionRow(snap.ID, p), P: p,
		Conditions: conditions(p.Status.Conditions), PullRequest: p.Status.PullRequest, MinApprovals: 1}
	verified := snap.Verified && snap.State.Verdict.Trusted
	records := p.Status.Approvals
	if len(records) == 0 && p.Status.Approval != nil {
		records = []v1alpha1.ApprovalRecord{*p.Status.Approval}
	}
	for _, a := range records {
		pg.Approvals = append(pg.Approvals, Approval{By: a.ApprovedBy, At: a.ApprovedAt.UTC().Format(time.RFC3339),
			Commit: a.Commit, Verified: verified})
	}
	if snap.Config != nil {
		if cfg := snap.Config.Configs[p.Spec.VectorPromotionConfigName]; cfg != nil && cfg.Spec.Approval != nil {
			for _, a := range cfg.Spec.Approval.Approvers {
				pg.Approvers = append(pg.Approvers, a.Name)
			}
			if m := cfg.Spec.Approval.MinApprovals; m != nil && *m > 0 {
				pg.MinApprovals = int(*m)
			}
		}
	}
	if !pg.Row.Open {
		return pg, true
	}
	if _, closed := reconcilers.ApprovalClosed(*p); p.Spec.RequireApproval && !closed {
		pg.ApproveCommand = ApproveCommand(snap, p)
	}
	d, err := describe()
	if err != nil {
		pg.DescribeProblem = source.RedactText(err.Error())
		return pg, true
	}
	for _, ch := range reconcilers.DiffComponents(d.From, d.To) {
		c := ComponentChange{Name: ch.Name, Added: ch.Old == nil, Removed: ch.New == nil}
		if ch.Old != nil {
			c.OldTag, c.OldDigest, c.OldImage = ch.Old.Tag, ch.Old.Digest, ch.Old.Image
		}
		if ch.New != nil {
			c.NewTag, c.NewDigest, c.NewImage = ch.New.Tag, ch.New.Digest, ch.New.Image
		}
		pg.Changes = append(pg.Changes, c)
	}
	pg.RenderProblem = source.RedactText(d.RenderProblem)
	if d.RenderProblem == "" {
		pg.Manifests = &ManifestChanges{Added: d.Manifests.Added, Changed: d.Manifests.Changed, Removed: d.Manifests.Removed}
	}
	return pg, true
}

// ApproveCommand is the `vectorflow approve` command that approves p in
// snap's repository, pinned to p's vector so that what the approver saw is
// what they sign; branches and the config path are named when they are not
// approve's defaults.
func ApproveCommand(snap *Snapshot, p *v1alpha1.VectorPromotion) string {
	args := []string{"vectorflow", "approve", shellQuote(p.Name), "--repo", shellQuote(snap.URL)}
	if snap.Branch != "" && snap.Branch != "main" {
		args = append(args, "--branch", shellQuote(snap.Branch))
	}
	if snap.Config != nil && snap.Config.ConfigPath != "" && snap.Config.ConfigPath != source.DefaultConfigPath {
		args = append(args, "--config-path", shellQuote(snap.Config.ConfigPath))
	}
	if snap.StateBranch != "" && snap.StateBranch != controller.DefaultStateBranch {
		args = append(args, "--state-branch", shellQuote(snap.StateBranch))
	}
	args = append(args, "--vector", shellQuote(p.Spec.Vector), "--signing-key", "YOUR_KEY")
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters names and URLs are made of.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@%+=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// StagePage is one stage: what it runs, its history, the versions kept.
type StagePage struct {
	Repo       *Snapshot
	Banners    []Banner
	Node       Node
	Path       string
	Overlay    string
	Conditions []Condition
	History    []controller.AuditEntry
	// HistoryProblem says why the history could not be read.
	HistoryProblem string
	Promotions     []PromotionRow
	Outgoing       []string
	// Versions are the StageVersions kept for rollback, when the state
	// branch holds them.
	Versions []VersionRow
}

// BuildStagePage shows the stage `landscape/name`; ok is false when there
// is none. history is what audit shows for it.
func BuildStagePage(snap *Snapshot, key string, now time.Time, history func() ([]controller.AuditEntry, error)) (StagePage, bool) {
	if snap.Config == nil || snap.Config.Stages[key] == nil {
		return StagePage{}, false
	}
	pipe := BuildPipeline(snap, now)
	pg := StagePage{Repo: snap, Banners: pipe.Banners}
	for _, col := range pipe.Columns {
		for _, n := range col.Nodes {
			if n.Key == key {
				pg.Node = n
			}
			for _, e := range n.Edges {
				if e.FromKey == key {
					pg.Outgoing = append(pg.Outgoing, e.Config+" → "+n.Key)
				}
			}
		}
	}
	st := snap.Config.Stages[key]
	pg.Path = st.Spec.Path
	pg.Overlay = snap.Config.OverlayOf(st.Spec.Landscape, st.Name)
	if s := snap.state().Stages[key]; s != nil {
		pg.Conditions = conditions(s.Status.Conditions)
	}
	for _, p := range sortedPromotions(snap.state()) {
		if row := promotionRow(snap.ID, p); row.TargetKey == key {
			pg.Promotions = append(pg.Promotions, row)
		}
	}
	pg.Versions = stageVersions(snap.State.Files, st.Spec.Landscape, st.Name)
	entries, err := history()
	if err != nil {
		pg.HistoryProblem = source.RedactText(err.Error())
	}
	pg.History = entries
	return pg, true
}

// VectorsPage is every vector with its components and the stages that run
// it.
type VectorsPage struct {
	Repo    *Snapshot
	Banners []Banner
	Vectors []VectorRow
}

// VectorRow is one vector.
type VectorRow struct {
	Ref, Digest string
	Components  []v1alpha1.VectorComponent
	// Target are the stages whose overlays name it, Active those that run it.
	Target, Active []string
	Latest         bool
}

// BuildVectorsPage lists the vectors, newest first.
func BuildVectorsPage(snap *Snapshot) VectorsPage {
	pg := VectorsPage{Repo: snap, Banners: snap.banners()}
	state := snap.state()
	target, active := map[string][]string{}, map[string][]string{}
	for _, key := range keys.Sorted(state.Stages) {
		s := state.Stages[key]
		if s.Status.Vector != "" {
			target[s.Status.Vector] = append(target[s.Status.Vector], key)
		}
		if s.Status.ActiveVector != "" {
			active[s.Status.ActiveVector] = append(active[s.Status.ActiveVector], key)
		}
	}
	latest := map[string]bool{}
	for _, t := range state.Templates {
		latest[t.Status.LatestVector] = true
	}
	list := slices.Collect(maps.Values(state.Vectors))
	sort.Slice(list, func(i, j int) bool {
		ti, errI := reconcilers.ParseVectorVersion(list[i].Spec.Version)
		tj, errJ := reconcilers.ParseVectorVersion(list[j].Spec.Version)
		if errI != nil || errJ != nil || ti.Equal(tj) {
			return list[i].Ref() > list[j].Ref()
		}
		return ti.After(tj)
	})
	for _, v := range list {
		ref := v.Ref()
		pg.Vectors = append(pg.Vectors, VectorRow{Ref: ref, Digest: v.Spec.Digest, Components: v.Spec.Components,
			Target: target[ref], Active: active[ref], Latest: latest[ref]})
	}
	return pg
}
