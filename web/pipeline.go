package web

import (
	"net/url"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Pipeline is one repository's promotion graph: templates and stages as
// nodes, laid out in columns by topological depth (a template, or a stage
// nothing promotes into, is at depth 0; a stage is one deeper than its
// deepest source), and configs as the edges into each node.
type Pipeline struct {
	Repo       *Snapshot
	Banners    []Banner
	Columns    []Column
	Landscapes []string
	Stages     int
	Waiting    int
}

// Column is the nodes at one depth.
type Column struct {
	Depth int
	Nodes []Node
}

// Node is a template or a stage.
type Node struct {
	// URL is a stage's page; empty for a template.
	URL                        string
	Kind, Name, Landscape, Key string
	// Vector is what the overlay names (the target), Since how long;
	// ActiveVector is what the deployer reported running, ActiveFor how long.
	Vector, Since             string
	ActiveVector, ActiveSince string
	// Conditions are the stage's own (health, holds) that are not as they
	// should be.
	Conditions []Condition
	Edges      []Edge
	// Hue tells the node's landscape at a glance: the landscape's place
	// among the repository's landscapes, modulo the stylesheet's hues.
	Hue int
	// Drifted: a config into the node has Drift=True, so the node names
	// another vector than its source offers.
	Drifted bool
	// OnCycle marks a node on a cycle of configs, which the configs'
	// ConfigConflict condition explains; it is drawn after every column.
	OnCycle bool
}

// Edge is a config promoting into a node.
type Edge struct {
	Config, From, FromKey string
	SourceVector          string
	RequireApproval       bool
	// Drift is the config's Drift condition: True while the target names
	// another vector than the source offers.
	Drift *Condition
	// Ready is the config's Ready condition when it is not True.
	NotReady *Condition
	// Candidates are the config's open promotions, newest first, at most
	// maxCandidates; More counts the rest, listed at MoreURL.
	Candidates []PromotionRow
	More       int
	MoreURL    string
}

// landscapeHues is how many landscape colours view.css defines (.h0 ...).
const landscapeHues = 6

// maxCandidates bounds the candidates a pipeline edge lists, so a config
// with many waiting promotions keeps the page small; the rest are a link.
const maxCandidates = 3

// BuildPipeline lays out snap's graph as of now.
func BuildPipeline(snap *Snapshot, now time.Time) Pipeline {
	p := Pipeline{Repo: snap, Banners: snap.banners()}
	if snap.Config == nil {
		return p
	}
	state := snap.state()
	nodes := map[string]*Node{}
	for name := range snap.Config.Templates {
		key := "VectorTemplate/" + name
		n := &Node{Kind: v1alpha1.VectorTemplateKind, Name: name, Key: key}
		if t := state.Templates[name]; t != nil {
			n.Vector = t.Status.LatestVector
		}
		nodes[key] = n
	}
	landscapes := map[string]bool{}
	for key, st := range snap.Config.Stages {
		n := &Node{URL: stageURL(snap.ID, key), Kind: v1alpha1.StageKind, Name: st.Name, Landscape: st.Spec.Landscape, Key: key}
		landscapes[st.Spec.Landscape] = true
		if s := state.Stages[key]; s != nil {
			n.Vector, n.Since = s.Status.Vector, age(now, s.Status.VectorSince)
			n.ActiveVector, n.ActiveSince = s.Status.ActiveVector, age(now, s.Status.ActiveSince)
			for _, c := range conditions(s.Status.Conditions) {
				if !c.Good {
					n.Conditions = append(n.Conditions, c)
				}
			}
		} else {
			// Only a pass, which renders the overlay, says what it runs.
			n.Conditions = []Condition{{Type: "Recorded", Status: string(metav1.ConditionFalse), Reason: "NotRecorded",
				Message: "no pass has recorded this stage yet: what its overlay runs is known once one renders it"}}
		}
		nodes[key] = n
		p.Stages++
	}
	open := map[string][]PromotionRow{}
	for _, pr := range sortedPromotions(state) {
		if row := promotionRow(snap.ID, pr); row.Open {
			open[row.Config] = append(open[row.Config], row)
			p.Waiting++
		}
	}
	parents := map[string][]string{}
	for _, name := range keys.Sorted(snap.Config.Configs) {
		cfg := snap.Config.Configs[name]
		to := source.StageKey(cfg.Spec.Target.Landscape, cfg.Spec.Target.Name)
		n := nodes[to]
		if n == nil {
			continue // the config's Ready condition names the missing target
		}
		from := "VectorTemplate/" + cfg.Spec.Source.Name
		if cfg.Spec.Source.Kind == v1alpha1.StageKind {
			from = source.StageKey(cfg.Spec.Source.Landscape, cfg.Spec.Source.Name)
		}
		e := Edge{Config: name, From: cfg.Spec.Source.Ref(), RequireApproval: reconcilers.RequireApproval(&cfg.Spec), Candidates: open[name]}
		if n := len(e.Candidates); n > maxCandidates {
			e.Candidates, e.More = e.Candidates[:maxCandidates], n-maxCandidates
			e.MoreURL = "/r/" + url.PathEscape(snap.ID) + "/promotions?config=" + url.QueryEscape(name)
		}
		if nodes[from] != nil {
			e.FromKey = from
			parents[to] = append(parents[to], from)
		}
		if st := state.Configs[name]; st != nil {
			e.SourceVector = st.Status.SourceVector
			e.Drift = conditionOf(st.Status.Conditions, v1alpha1.DriftCondition)
			n.Drifted = n.Drifted || (e.Drift != nil && !e.Drift.Good)
			if c := conditionOf(st.Status.Conditions, v1alpha1.ReadyCondition); c != nil && !c.Good {
				e.NotReady = c
			}
		}
		n.Edges = append(n.Edges, e)
	}
	depth, cycle := depths(nodes, parents)
	maxDepth := 0
	for _, d := range depth {
		maxDepth = max(maxDepth, d)
	}
	cols := make([]Column, maxDepth+1)
	for i := range cols {
		cols[i].Depth = i
	}
	var onCycle []Node
	for key, n := range nodes {
		if cycle[key] {
			n.OnCycle = true
			onCycle = append(onCycle, *n)
			continue
		}
		cols[depth[key]].Nodes = append(cols[depth[key]].Nodes, *n)
	}
	if len(onCycle) > 0 {
		cols = append(cols, Column{Depth: len(cols), Nodes: onCycle})
	}
	p.Landscapes = keys.Sorted(landscapes)
	hue := map[string]int{}
	for i, l := range p.Landscapes {
		hue[l] = i % landscapeHues
	}
	for i := range cols {
		for j := range cols[i].Nodes {
			cols[i].Nodes[j].Hue = hue[cols[i].Nodes[j].Landscape]
		}
		sortNodes(cols[i].Nodes)
	}
	p.Columns = cols
	return p
}

// conditionOf is the condition of type typ for display; nil without one.
func conditionOf(conds []metav1.Condition, typ string) *Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return nil
	}
	return &conditions([]metav1.Condition{*c})[0]
}

// depths is each node's topological depth (Kahn's algorithm over the
// configs); nodes left over sit on a cycle.
func depths(nodes map[string]*Node, parents map[string][]string) (map[string]int, map[string]bool) {
	children := map[string][]string{}
	indegree := map[string]int{}
	for child, ps := range parents {
		for _, p := range ps {
			children[p] = append(children[p], child)
			indegree[child]++
		}
	}
	depth := map[string]int{}
	var queue []string
	for key := range nodes {
		if indegree[key] == 0 {
			queue = append(queue, key)
			depth[key] = 0
		}
	}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		for _, c := range children[key] {
			depth[c] = max(depth[c], depth[key]+1)
			if indegree[c]--; indegree[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	cycle := map[string]bool{}
	for key := range nodes {
		if indegree[key] > 0 {
			cycle[key] = true
		}
	}
	return depth, cycle
}

func sortNodes(ns []Node) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Kind != ns[j].Kind {
			return ns[i].Kind == v1alpha1.VectorTemplateKind
		}
		if ns[i].Landscape != ns[j].Landscape {
			return ns[i].Landscape < ns[j].Landscape
		}
		return ns[i].Name < ns[j].Name
	})
}
