package web

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/source"
)

// Snapshot is one read of a config repository: its configs and its state
// branch, checked. Every page is a pure function of a Snapshot and the time.
type Snapshot struct {
	// ID is the repository's path segment in the view's URLs.
	ID                  string
	URL                 string // without credentials
	Branch, StateBranch string
	Config              *source.Snapshot
	// State is the state branch as far as the trusted keys verify it:
	// when the tip does not verify, State.State is the last trusted
	// commit's and State.Refusal says why.
	State controller.VerifiedState
	// Verified is false when no trusted key was given: the state is shown
	// as it is, unchecked, and every page says so.
	Verified bool
	ReadAt   time.Time
	// Problem is why the latest read failed; the pages show the read
	// before it (if any) under it.
	Problem string
}

// state is the snapshot's state, never nil.
func (s *Snapshot) state() *reconcilers.State {
	if s.State.State == nil {
		return reconcilers.NewState()
	}
	return s.State.State
}

// Banner is a warning every page of the repository shows on top.
type Banner struct{ Title, Text string }

// banners are what the reader of any page must know first: what is not
// current, not verified or not valid.
func (s *Snapshot) banners() []Banner {
	var out []Banner
	if s.Problem != "" {
		out = append(out, Banner{"Not current", "The latest read of " + s.URL + " failed: " + s.Problem})
	}
	if s.Config != nil && !s.Verified {
		out = append(out, Banner{"Unverified", "No trusted key was given (--trust), so the state branch " + s.StateBranch +
			" is shown as it is, unchecked: anyone who can push to it could have written what this page shows."})
	}
	if !s.State.Verdict.Trusted {
		out = append(out, Banner{"State refused", strings.TrimSuffix(s.State.Refusal, ".") + ". The pages show the state as of the last trusted commit " +
			short(s.State.Verdict.LastTrusted) + "."})
	}
	if s.Config != nil && len(s.Config.Problems) > 0 {
		p := s.Config.Problems[0]
		more := ""
		if n := len(s.Config.Problems) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more; run vectorflow validate)", n)
		}
		out = append(out, Banner{"Configuration problem", p.Error() + more})
	}
	// A URL in a message may carry credentials (a landscape's repository
	// given with them): never on a page.
	for i := range out {
		out[i].Text = source.RedactText(out[i].Text)
	}
	return out
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// age is how long ago t was, in the two largest units: "3d 4h", "12m 5s".
func age(now time.Time, t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	d := now.Sub(t.Time)
	if d < 0 {
		d = 0
	}
	d = d.Truncate(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h, m, sec := d/time.Hour, (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// Condition is a condition as the pages show it.
type Condition struct {
	Type, Status, Reason, Message string
	Since                         string
	// Good is whether the condition is as it should be; pages mark the rest.
	Good bool
}

// conditions lists conds for display; negative are the types that are
// good when False (Drift, UpdateDelayed).
func conditions(conds []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		good := c.Status == metav1.ConditionTrue
		switch c.Type {
		case v1alpha1.DriftCondition, v1alpha1.UpdateDelayedCondition, "Stalled", "Reconciling", "Held":
			good = c.Status == metav1.ConditionFalse
		}
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.UTC().Format(time.RFC3339), Good: good})
	}
	return out
}

// openStates are the promotions that still wait or run: an edge's
// candidates.
var openStates = map[v1alpha1.PromotionState]bool{
	v1alpha1.PromotionWaiting: true, v1alpha1.PromotionReady: true,
	v1alpha1.PromotionInProgress: true, v1alpha1.PromotionBlocked: true,
}

// AllStates are the promotion states a filter may name.
var AllStates = []v1alpha1.PromotionState{
	v1alpha1.PromotionWaiting, v1alpha1.PromotionReady, v1alpha1.PromotionInProgress, v1alpha1.PromotionBlocked,
	v1alpha1.PromotionSucceeded, v1alpha1.PromotionFailed, v1alpha1.PromotionSuperseded,
}

// PromotionRow is a promotion in a list.
type PromotionRow struct {
	// URL is the promotion's page, TargetURL its target stage's.
	URL, TargetURL                                  string
	Name, Config, Vector, Source, Target, TargetKey string
	Sequence                                        int64
	State                                           string
	// Class is the state's CSS class.
	Class              string
	Open               bool
	ApprovedBy, Reason string
}

func promotionRow(repoID string, p *v1alpha1.VectorPromotion) PromotionRow {
	state := reconcilers.DeriveState(p)
	key := source.StageKey(p.Spec.Target.Landscape, p.Spec.Target.Name)
	row := PromotionRow{URL: promotionURL(repoID, p.Name), TargetURL: stageURL(repoID, key), Name: p.Name, Config: p.Spec.VectorPromotionConfigName, Vector: p.Spec.Vector,
		Source: p.Spec.Source.Ref(), Target: p.Spec.Target.Ref(), TargetKey: key,
		Sequence: p.Spec.Sequence, State: string(state), Class: "s-" + strings.ToLower(string(state)), Open: openStates[state]}
	var names []string
	for _, a := range p.Status.Approvals {
		names = append(names, a.ApprovedBy)
	}
	if len(names) == 0 && p.Status.Approval != nil {
		names = []string{p.Status.Approval.ApprovedBy}
	}
	row.ApprovedBy = strings.Join(names, ", ")
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SucceededCondition); c != nil && c.Status != metav1.ConditionUnknown {
		row.Reason = c.Reason
	} else if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ApprovedCondition); c != nil {
		row.Reason = c.Reason
	}
	return row
}

// sortedPromotions are the state's promotions by config, newest first.
func sortedPromotions(s *reconcilers.State) []*v1alpha1.VectorPromotion {
	list := slices.Collect(maps.Values(s.Promotions))
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Spec, list[j].Spec
		if a.VectorPromotionConfigName != b.VectorPromotionConfigName {
			return a.VectorPromotionConfigName < b.VectorPromotionConfigName
		}
		if a.Sequence != b.Sequence {
			return a.Sequence > b.Sequence
		}
		return list[i].Name < list[j].Name
	})
	return list
}

// RepositoryIDs names each repository for the view's URLs: the last element
// of its URL without `.git`, made of letters, digits, `-`, `_` and `.`, and
// numbered when two would have the same name.
func RepositoryIDs(urls []string) []string {
	ids := make([]string, len(urls))
	seen := map[string]int{}
	for i, u := range urls {
		u = strings.TrimRight(source.RedactURL(u), "/")
		if j := strings.LastIndexAny(u, "/:"); j >= 0 {
			u = u[j+1:]
		}
		u = strings.TrimSuffix(u, ".git")
		var b strings.Builder
		for _, r := range u {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
				b.WriteRune(r)
			}
		}
		id := strings.Trim(b.String(), ".")
		if id == "" {
			id = "repository"
		}
		base := id
		for n := 2; seen[id] > 0; n++ {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		seen[id]++
		ids[i] = id
	}
	return ids
}

// stageURL links a stage by its `landscape/name` key.
func stageURL(repo, key string) string {
	landscape, name, _ := strings.Cut(key, "/")
	return "/r/" + url.PathEscape(repo) + "/stages/" + url.PathEscape(landscape) + "/" + url.PathEscape(name)
}

func promotionURL(repo, name string) string {
	return "/r/" + url.PathEscape(repo) + "/promotions/" + url.PathEscape(name)
}
