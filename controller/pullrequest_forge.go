package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/source"
)

// pullRequestFacts asks the forge about every recorded pull request that can
// still change a decision: those of unfinished promotions, and open ones of
// finished promotions (to see them closed, or merged anyway). A forge that
// cannot be asked is logged and its promotions simply wait.
func (c *Controller) pullRequestFacts(ctx context.Context, snap *source.Snapshot, state *reconcilers.State) map[string]pass.PullRequestFacts {
	facts := map[string]pass.PullRequestFacts{}
	for _, name := range keys.Sorted(state.Promotions) {
		p := state.Promotions[name]
		pr := p.Status.PullRequest
		policy := pass.PullRequestPolicy(snap, p)
		if pr == nil || policy == nil {
			continue
		}
		waiting := reconcilers.DeriveState(p) == v1alpha1.PromotionWaiting
		if !waiting && reconcilers.IsTerminal(reconcilers.DeriveState(p)) && pr.State != v1alpha1.PullRequestOpen {
			continue
		}
		f, err := c.askForge(ctx, snap, p, policy, waiting)
		if err != nil {
			c.opts.Log.Error(err, "pull request not read; retrying on the next pass", "promotion", name, "pullRequest", pr.Number)
			continue
		}
		facts[name] = f
	}
	return facts
}

func (c *Controller) askForge(ctx context.Context, snap *source.Snapshot, p *v1alpha1.VectorPromotion, policy *v1alpha1.PullRequestApproval, reviews bool) (pass.PullRequestFacts, error) {
	client, repo, err := c.forgeFor(snap, p, policy)
	if err != nil {
		return pass.PullRequestFacts{}, err
	}
	pr, err := client.GetPullRequest(ctx, repo, p.Status.PullRequest.Number)
	if err != nil {
		return pass.PullRequestFacts{}, err
	}
	f := pass.PullRequestFacts{State: pr.State, HeadSHA: pr.HeadSHA, MergedBy: pr.MergedBy}
	if !reviews || pr.State == forge.StateClosed {
		return f, nil
	}
	list, err := client.Reviews(ctx, repo, pr.Number)
	if err != nil {
		return pass.PullRequestFacts{}, err
	}
	// The head SHA passed here is the forge's current one: Gitea's stale
	// flag misses a push that leaves the diff as it was.
	for _, r := range list {
		if forge.CountingApproval(r, pr.HeadSHA, pr.Author) && !r.SubmittedAt.Before(f.ReviewedAt) {
			f.Reviewer, f.ReviewedAt = r.User, r.SubmittedAt.UTC().Truncate(time.Second)
		}
	}
	return f, nil
}

// forgeFor is the forge client of p's config and the repository of p's
// target stage on it. The token is read on every call, so a rotated token
// is picked up without a restart; it never appears in errors.
func (c *Controller) forgeFor(snap *source.Snapshot, p *v1alpha1.VectorPromotion, policy *v1alpha1.PullRequestApproval) (forge.Forge, forge.Repo, error) {
	cfg := p.Spec.VectorPromotionConfigName
	t := p.Spec.Target
	ref, ok := snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
	if !ok {
		return nil, forge.Repo{}, fmt.Errorf("VectorPromotionConfig %s: target Stage %s in Landscape %s does not resolve", cfg, t.Name, t.Landscape)
	}
	repo, err := forge.RepoFromURL(ref.URL)
	if err != nil {
		return nil, forge.Repo{}, fmt.Errorf("VectorPromotionConfig %s: target repository: %w", cfg, err)
	}
	cred, err := pullRequestCredentials(cfg, policy)
	if err != nil {
		return nil, forge.Repo{}, err
	}
	cred.AppTokens = &c.appTokens
	client, err := forge.NewWithCredentials(policy.Forge, policy.APIURL, cred, c.opts.ForgeHTTPClient)
	if err != nil {
		return nil, forge.Repo{}, fmt.Errorf("VectorPromotionConfig %s: spec.approval.pullRequest: %w", cfg, err)
	}
	return client, repo, nil
}

func forgeToken(cfg string, policy *v1alpha1.PullRequestApproval) (string, error) {
	field := "VectorPromotionConfig " + cfg + ": spec.approval.pullRequest"
	switch {
	case policy.TokenEnv != "":
		if v := strings.TrimSpace(os.Getenv(policy.TokenEnv)); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%s.tokenEnv: the environment variable %s of the controller is empty: set it to a forge access token", field, policy.TokenEnv)
	case policy.TokenFile != "":
		b, err := os.ReadFile(policy.TokenFile)
		if err != nil {
			return "", fmt.Errorf("%s.tokenFile: %w", field, err)
		}
		if v := strings.TrimSpace(string(b)); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%s.tokenFile: %s is empty: put a forge access token in it", field, policy.TokenFile)
	}
	return "", fmt.Errorf("%s: set tokenEnv or tokenFile", field)
}

// executePullRequests makes the forge writes a decision asked for. A
// failure is logged and the action is planned again on the next pass; both
// kinds are idempotent. It returns what was done, the promotions whose pull
// request waits for the forge to index its branch, and when to try those
// again (0 when none waits).
func (c *Controller) executePullRequests(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, actions []pass.PullRequestAction) (done, waiting []string, retryIn time.Duration) {
	// A wait ends when its pull request is no longer asked for.
	for name := range c.unindexed {
		if !slices.ContainsFunc(actions, func(a pass.PullRequestAction) bool { return a.Kind == pass.OpenPullRequest && a.Promotion == name }) {
			delete(c.unindexed, name)
		}
	}
	for _, a := range actions {
		p := state.Promotions[a.Promotion]
		if p == nil {
			continue
		}
		policy := pass.PullRequestPolicy(snap, p)
		if policy == nil {
			continue
		}
		log := c.opts.Log.WithValues("promotion", p.Name, "vector", p.Spec.Vector)
		switch a.Kind {
		case pass.OpenPullRequest:
			pr, err := c.openPullRequest(ctx, snap, state, p, policy)
			if delay, ok := c.awaitBranchIndex(p.Name, err); ok {
				log.Info("the forge does not know the promotion branch yet; opening the pull request on a pass soon", "retryIn", delay.String())
				waiting = append(waiting, p.Name)
				if retryIn == 0 || delay < retryIn {
					retryIn = delay
				}
				continue
			}
			if err != nil {
				log.Error(err, "pull request not opened; retrying on the next pass")
				continue
			}
			c.opened[p.Name] = pr
			log.Info("opened pull request", "number", pr.Number, "url", pr.URL)
			done = append(done, fmt.Sprintf("%s: pull request #%d", p.Name, pr.Number))
		case pass.ClosePullRequest:
			client, repo, err := c.forgeFor(snap, p, policy)
			if err == nil {
				err = client.Close(ctx, repo, a.Number, a.Comment)
			}
			if err != nil {
				log.Error(err, "pull request not closed; retrying on the next pass", "number", a.Number)
				continue
			}
			log.Info("closed pull request", "number", a.Number)
			done = append(done, fmt.Sprintf("%s: closed pull request #%d", p.Name, a.Number))
		}
	}
	return done, waiting, retryIn
}

// openPullRequest pushes p's promotion commit, unapproved, on top of the
// target branch to vectorflow/promote/<config>-<sequence> and opens the pull
// request from it (or finds the open one: opening is idempotent by branch).
func (c *Controller) openPullRequest(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, p *v1alpha1.VectorPromotion, policy *v1alpha1.PullRequestApproval) (v1alpha1.PullRequestStatus, error) {
	t := p.Spec.Target
	ref, ok := snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
	if !ok {
		return v1alpha1.PullRequestStatus{}, fmt.Errorf("target Stage %s in Landscape %s does not resolve", t.Name, t.Landscape)
	}
	vector := state.Vectors[p.Spec.Vector]
	if vector == nil {
		return v1alpha1.PullRequestStatus{}, fmt.Errorf("vector %s is not on the state branch", p.Spec.Vector)
	}
	file, err := kustomizationPath(ref.Tree, ref.Overlay)
	if err != nil {
		return v1alpha1.PullRequestStatus{}, err
	}
	client, repo, err := c.forgeFor(snap, p, policy)
	if err != nil {
		return v1alpha1.PullRequestStatus{}, err
	}
	trailers := gitwriter.Trailers{Promotion: p.Name, Config: p.Spec.VectorPromotionConfigName, Sequence: p.Spec.Sequence, Vector: p.Spec.Vector,
		Source: p.Spec.Source.Ref(), Target: t.Ref(), Forced: p.Spec.Forced, Rollback: p.Spec.Rollback}
	change := gitwriter.PromotionChange(file, t.Landscape, t.Name, p.Spec.Vector, vector.Spec.Components, trailers)
	change.Check = c.renderCheck(ref.Overlay, vector.Spec.Components)
	branch := gitwriter.PromoteBranchPrefix + p.Name
	pushed, err := c.opts.Writer.PushBranch(ctx, c.remote(ref.URL), ref.Branch, branch, change)
	if err != nil {
		return v1alpha1.PullRequestStatus{}, fmt.Errorf("push %s: %w", branch, err)
	}
	body, err := c.pullRequestBody(ref, p, vector, policy)
	if err != nil {
		return v1alpha1.PullRequestStatus{}, err
	}
	req := forge.NewPullRequest{Head: branch, Base: ref.Branch, Labels: policy.Labels, Body: body,
		Title: fmt.Sprintf("Promote %s to %s/%s", p.Spec.Vector, t.Landscape, t.Name)}
	pr, err := client.OpenPullRequest(ctx, repo, req)
	if err != nil {
		return v1alpha1.PullRequestStatus{}, err
	}
	// The head recorded is the promotion commit pushed, which a counting
	// review must be given on, whatever the forge reports meanwhile.
	return v1alpha1.PullRequestStatus{Number: pr.Number, URL: pr.URL, Branch: branch, HeadSHA: pushed.Commit.String(), State: v1alpha1.PullRequestOpen}, nil
}

// branchIndexGrace is how long a forge may take to index a promotion branch
// just pushed: Gitea indexes pushes asynchronously and meanwhile answers
// that the branch does not exist. Within it the pull request waits for a
// pass soon after, instead of holding this one; after it, the answer is an
// error, and the next pass starts over.
const branchIndexGrace = 20 * time.Second

// branchIndexBackoff spaces the passes that try again: soon after the push
// first, less often while the forge stays behind.
var branchIndexBackoff = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Cap: 4 * time.Second, Steps: 5}

// unindexedBranch is a promotion whose branch the forge did not know when
// its pull request was opened: since when, and the waits left.
type unindexedBranch struct {
	since   time.Time
	backoff wait.Backoff
}

// awaitBranchIndex judges err, what opening promotion's pull request
// answered: when the forge did not know the branch, within branchIndexGrace
// of its first such answer, the pull request waits for a pass after the
// delay returned. Any other answer, or one past the grace, ends the wait
// (the caller reports err).
func (c *Controller) awaitBranchIndex(promotion string, err error) (time.Duration, bool) {
	var apiErr *forge.APIError
	if !errors.As(err, &apiErr) || (apiErr.Status != http.StatusNotFound && apiErr.Status != http.StatusUnprocessableEntity) {
		delete(c.unindexed, promotion)
		return 0, false
	}
	now := c.opts.Clock()
	u := c.unindexed[promotion]
	if u == nil {
		if c.unindexed == nil {
			c.unindexed = map[string]*unindexedBranch{}
		}
		u = &unindexedBranch{since: now, backoff: branchIndexBackoff}
		c.unindexed[promotion] = u
	}
	if now.Sub(u.since) > branchIndexGrace {
		delete(c.unindexed, promotion)
		return 0, false
	}
	return u.backoff.Step(), true
}

// pullRequestKey identifies the forge facts, so a pass whose only news is a
// review or a merge is not skipped as unchanged.
func pullRequestKey(facts map[string]pass.PullRequestFacts) string {
	if len(facts) == 0 {
		return ""
	}
	h := sha256.New()
	for _, name := range keys.Sorted(facts) {
		f := facts[name]
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00", name, f.State, f.HeadSHA, f.MergedBy, f.Reviewer, f.ReviewedAt.Unix())
	}
	return hex.EncodeToString(h.Sum(nil))
}
