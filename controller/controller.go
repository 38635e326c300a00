// Package controller is vectorflow's imperative shell: one pass reads the
// config repository and the state branch, lets the reconcilers decide, writes
// the decision to the state branch as one signed compare-and-swap commit, and
// then executes the promotions it started through gitwriter. Its files do
// I/O: read, call the core (reconcilers and its sub-packages, which do none),
// write, execute.
package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-logr/logr"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/forge"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// Options configure a Controller for one config repository.
type Options struct {
	// URL and Branch of the config repository.
	URL, Branch string
	// ConfigPath is the config directory; default source.DefaultConfigPath.
	ConfigPath string
	// StateBranch holds the runtime objects; default DefaultStateBranch.
	StateBranch string
	// Auth gives the credentials for a repository URL.
	Auth func(url string) source.Auth
	// Writer makes every commit (state and promotions), signed.
	Writer *gitwriter.Writer
	// Loader reads snapshots; one is made when nil.
	Loader *source.Loader
	// Progress receives the servers' fetch progress when the Loader is made
	// here (a terminal watching run --once); nil means none.
	Progress io.Writer
	// Limits bound what the Loader made here reads (repofs.Limits).
	Limits repofs.Limits
	// CacheDir holds what a later process may reuse: the fetched objects
	// of the repositories (source.OpenCached), renderings, decoded configs
	// and the state branch's decoded files; "" keeps everything in memory.
	CacheDir string
	// Resolver picks component versions from registries; nil means
	// templates must name exact tags or digests.
	Resolver Resolver
	// Uploader pushes assembled vectors of templates with
	// spec.uploadTarget; nil means they are not uploaded.
	Uploader Uploader
	// Clock is the time decisions are made at; default time.Now.
	Clock func() time.Time
	Log   logr.Logger
	// Metrics records passes, promotions and git latencies; nil records
	// nothing.
	Metrics *Metrics
	// ForgeHTTPClient talks to the forges of pull-request approvals; nil
	// means a client with a 30-second timeout.
	ForgeHTTPClient *http.Client
	// StateSigners are the keys trusted to write the state branch: this
	// controller's own (and those of other controllers of the repository).
	// The Writer's own key is always one. A state commit that no state
	// signer signed may only add approvals and promotion requests, or the
	// pass stops; the check cannot be turned off.
	StateSigners []gitwriter.TrustedKey
	// Events receives the events of every state commit; nil sends none.
	Events EventPublisher
	// HoldWrites makes RunUntilStable push its writes to the config
	// repository once, when the run settles, instead of once a pass: a
	// change that travels through many stages costs one push, and the
	// world sees all of it or none of it. For run --once.
	HoldWrites bool
	// Observe, when set, is called with what each pass read and decided,
	// after the state is written (the Kubernetes mirror, the web view of
	// run); see Observed for the passes that decide nothing.
	Observe func(Observed)
	// Settings identify everything else decisions depend on that the
	// process was started with (the CLI's flags). When set, with a
	// CacheDir, a process that finds the repository exactly as an earlier
	// one with the same Settings left it settled (the same commits, state
	// tip, registry answers and pull requests, and no deadline passed)
	// decides nothing again; "" always decides.
	Settings string
}

// Uploader pushes a vector as an OCI artifact tagged with its version.
type Uploader interface {
	PushVector(ctx context.Context, target, version string, vectorYAML []byte) (digest string, err error)
}

// Controller reconciles one config repository.
type Controller struct {
	opts Options
	// name is the repository as shown in logs, errors and metrics labels:
	// its URL without credentials.
	name string

	mu sync.Mutex
	// results are executions not yet recorded on the state branch.
	results map[string]reconcilers.Result
	// reports are deployer reports not yet applied by a pass, under their
	// own lock: a webhook handing one over never waits for a pass.
	reportsMu sync.Mutex
	reports   reportQueue
	// lineages order the revisions reports name, by landscape branch.
	lineages map[string]*lineage
	// commitStatuses polls the forges of stages whose deployers report
	// through commit statuses (commitstatuses.go).
	commitStatuses commitStatusPoller
	// appTokens keeps GitHub App installation tokens between forge calls.
	appTokens forge.AppTokens
	// stateRepo reads the state branch's history to verify approvals and
	// state commits; trust remembers the verdict of every commit checked.
	stateRepo *source.Repository
	// shared is the loader's repository of the config URL, which fetches
	// the state branch along with the config branch in one request and
	// whose object store the writer shares; nil for a plain directory.
	shared *source.Repository
	// held is the RunUntilStable holding its writes back, if any.
	held  *heldRun
	trust *StateTrust
	// evidence remembers which commit added each approval file.
	evidence evidenceCache
	// uploads are vectors still to push to their template's uploadTarget.
	uploads map[string]upload
	// opened are pull requests opened but not yet recorded on the state
	// branch; renderer renders overlays for their descriptions.
	opened   map[string]v1alpha1.PullRequestStatus
	renderer *render.Renderer
	// unindexed are promotions whose pull request waits for the forge to
	// index the branch pushed for it.
	unindexed map[string]*unindexedBranch
	// imageNames are the image names the render checks parsed: each pass
	// checks every stage naming a vector against the same few names.
	imageNames *render.ImageNames
	// inputs identifies what the last decision was made from; a pass whose
	// inputs are the same, before due, decides nothing.
	inputs    string
	due       time.Time
	configs   int      // in the last snapshot: how far a change may travel (passLimit)
	problems  []string // the configuration problems of that decision
	codec     *reconcilers.Codec
	stateMemo stateMemo // the codec's memory in the cache directory
	// settledBefore says inputs, due and problems are an earlier
	// process's settled pass (importSettled), not yet taken by this one.
	settledBefore bool
	// read is what the decision of inputs read, when it read only Git.
	read *gitRead
	// decisions counts the passes that decided, and loads those that
	// loaded the config branch, for tests.
	decisions, loads int
	// stateFiles are the state branch's files as this controller read
	// them last.
	stateFiles stateFiles
	remotesMu  sync.Mutex
	remotes    map[string]gitwriter.Remote
	// sharedURLs are the repositories whose loader store the writer was
	// offered (shareStageStores).
	sharedURLs map[string]bool

	// watched are the repositories and images the last snapshot depends
	// on; webhooks read it while a pass runs.
	watchMu sync.RWMutex
	watched watchSet
}

type upload struct {
	target string
	vector *v1alpha1.Vector
}

// PassResult says what one pass did.
type PassResult struct {
	// Commit is the state commit the pass made, zero when nothing changed.
	Commit      plumbing.Hash
	Transitions []string
	// Executed are the promotions written to their targets in this pass.
	Executed []string
	// PullRequests are the pull requests opened or closed in this pass.
	PullRequests []string
	// PullRequestsWaiting are the promotions whose pull request waits for
	// the forge to index the branch pushed for it; a pass after
	// RequeueAfter opens it.
	PullRequestsWaiting []string
	// Written are the repositories whose overlays this pass changed: every
	// controller whose stages live there must look again at once.
	Written      []string
	RequeueAfter time.Duration
	// Problems are the configuration problems of the snapshot the pass
	// read, what validate reports: the configs they touch are not
	// reconciled until they are fixed.
	Problems []string
}

// Changed reports whether the pass wrote anything.
func (r PassResult) Changed() bool {
	return !r.Commit.IsZero() || len(r.Executed) > 0 || len(r.PullRequests) > 0
}

// New returns a Controller with o's defaults filled in.
func New(o Options) (*Controller, error) {
	if o.URL == "" || o.Branch == "" {
		return nil, errors.New("controller: the config repository URL and branch are required")
	}
	if o.Writer == nil {
		return nil, errors.New("controller: a gitwriter.Writer is required")
	}
	if o.ConfigPath == "" {
		o.ConfigPath = source.DefaultConfigPath
	}
	if o.StateBranch == "" {
		o.StateBranch = DefaultStateBranch
	}
	if o.Auth == nil {
		o.Auth = func(string) source.Auth { return source.Auth{} }
	}
	// One Renderer for the config directory and the overlays: what it
	// remembers of a commit's tree serves both, under the same Limits.
	renderer := render.NewRenderer(render.Options{Limits: o.Limits, CacheDir: o.CacheDir})
	if o.Loader == nil {
		o.Loader = source.NewLoader(source.Options{ConfigPath: o.ConfigPath, Auth: o.Auth, Progress: o.Progress, Limits: o.Limits, CacheDir: o.CacheDir, Renderer: renderer,
			SaveInBackground: true, ReadOnlySnapshots: true})
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	// The controller must trust its own state commits, so a writer that
	// does not sign cannot run one unless other keys sign for it.
	signers := o.StateSigners
	if key := o.Writer.SigningKey(); key != "" {
		signers = append([]gitwriter.TrustedKey{{Name: "vectorflow", PublicKey: key}}, signers...)
	}
	trust, err := NewStateTrust(signers)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c := &Controller{opts: o, name: source.RedactURL(o.URL), results: map[string]reconcilers.Result{}, trust: trust,
		uploads: map[string]upload{}, remotes: map[string]gitwriter.Remote{}, codec: reconcilers.NewSharingCodec(), lineages: map[string]*lineage{},
		opened: map[string]v1alpha1.PullRequestStatus{}, renderer: renderer, imageNames: render.NewImageNames(),
		stateMemo: newStateMemo(o, trust.keys)}
	c.shareFetches()
	return c, nil
}

// maxConflicts bounds how often one pass re-reads after another writer won
// the compare-and-swap on the state branch.
const maxConflicts = 8

// Pass reads, decides, writes the state and executes started promotions.
// A rejected compare-and-swap (another controller or an approver wrote)
// makes it re-read and re-decide.
func (c *Controller) Pass(ctx context.Context) (res PassResult, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := c.opts.Clock()
	defer func() { c.opts.Metrics.observePass(c.name, c.opts.Clock().Sub(start), err) }()
	for attempt := 1; ; attempt++ {
		res, err = c.pass(ctx)
		if errors.Is(err, gitwriter.ErrConflict) && attempt < maxConflicts {
			c.opts.Log.V(1).Info("state branch moved; re-reading", "attempt", attempt)
			continue
		}
		return res, err
	}
}

func (c *Controller) pass(ctx context.Context) (_ PassResult, err error) {
	// The pass's renderings (the loader's, and each promotion's render
	// check) reach the disk cache in one write when it ends.
	defer c.overlayRenderer().DeferCacheWrites()()
	// Deployer reports this pass takes go back to the queue unless the
	// state commit recording them is made.
	reports := c.takeDeploymentReports()
	recorded := false
	defer func() {
		if !recorded && len(reports) > 0 {
			c.requeueReports(reports)
		}
	}()
	start := c.opts.Clock()
	// What an earlier process remembered serves the state's decode; it is
	// read beside the load, which does not use it.
	imported := c.importStateMemo()
	// In a running run the load's fetch brings the state branch along,
	// and it is read and decoded while the load resolves the snapshot,
	// which neither reads nor changes what the decode uses: a promotion
	// pass at 10,000 stages takes 0.97x the time. A process's first pass
	// and a held run's passes read it after the load, as the two then
	// walk large parts of the store side by side: run --once promoting
	// measured 2-12 % slower with them overlapped.
	beside := c.held == nil && c.loads > 0
	var read stateRead
	var reading chan struct{}
	snap, err := c.load(ctx, func() {
		if !beside {
			return
		}
		reading = make(chan struct{})
		go func() {
			defer close(reading)
			imported()
			read = c.readDecodedState(ctx)
		}()
	})
	c.opts.Metrics.observeFetch(c.name, start, c.opts.Clock(), err)
	if reading != nil {
		<-reading
	} else {
		imported()
		if err == nil {
			read = c.readDecodedState(ctx)
		}
	}
	if err != nil {
		return PassResult{}, fmt.Errorf("read config repository: %w", err)
	}
	c.configs = len(snap.Configs)
	c.watchMu.Lock()
	c.watched = watchedBy(snap)
	c.watchMu.Unlock()
	c.pollCommitStatusesInBackground(snap)
	c.shareStageStores(snap)
	if read.err != nil {
		return PassResult{}, fmt.Errorf("read state branch %s: %w", c.opts.StateBranch, read.err)
	}
	tip, files, state := read.tip, read.files, read.state
	if c.held != nil {
		c.held.passes++
		c.held.read, c.held.config, c.held.state = true, plumbing.NewHash(snap.Commit), tip
	}
	if c.held == nil {
		// A held run's passes decode what has not landed; it writes the
		// memory once, when it settles.
		c.exportStateMemo(false)
	}
	for _, e := range read.skipped {
		c.opts.Log.Info("state file skipped", "error", e.Error())
	}
	reg := resolveComponents(ctx, c.opts.Resolver, snap, state, c.opts.Progress)
	now := c.opts.Clock()
	prFacts := c.pullRequestFacts(ctx, snap, state)
	inputs := inputsKey(snap, tip, reg) + pullRequestKey(prFacts)
	unchanged := inputs == c.inputs && len(c.results) == 0 && len(c.uploads) == 0 && len(c.opened) == 0 && len(reports) == 0 && now.Before(c.due)
	// A pass over what this process decided before says and checks nothing
	// again; one taking an earlier process's decision (settledBefore) does,
	// under this process's keys, as a first pass does.
	if !unchanged || c.settledBefore {
		for _, p := range snap.Problems {
			c.opts.Log.Error(p, "configuration problem")
		}
		if err := c.verifyStateHistory(ctx, snap, tip); err != nil {
			if errors.Is(err, ErrUntrustedState) {
				c.observeRefused(snap, tip)
			}
			return PassResult{}, err
		}
	}
	if unchanged && c.settledBefore {
		c.opts.Metrics.observePromotions(c.name, state)
	}
	c.settledBefore = false
	if unchanged {
		c.observeRead(snap, tip, files, state)
		return PassResult{RequeueAfter: c.due.Sub(now), Problems: c.problems}, nil
	}
	approvals, err := c.countApprovals(ctx, snap, state, tip)
	if err != nil {
		return PassResult{}, err
	}
	requests, err := c.judgeRequests(ctx, snap, files, tip)
	if err != nil {
		return PassResult{}, err
	}
	holds, err := c.judgeHolds(ctx, snap, files, tip)
	if err != nil {
		return PassResult{}, err
	}
	histories, err := targetHistories(ctx, c.opts.Writer, snap, c.remote)
	if err != nil {
		return PassResult{}, err
	}
	facts, err := c.readStageFacts(ctx, snap, state, reports, now)
	if err != nil {
		return PassResult{}, err
	}
	for _, why := range facts.ignored {
		c.opts.Log.Info("deployer report ignored", "why", why)
	}
	c.decisions++
	d := pass.Decide(pass.Inputs{Snapshot: snap, State: state, Approvals: approvals, Results: pass.LandedResults(snap, state, landedHistories(histories), c.results, c.rendersVector(state)),
		Resolved: reg.resolved, RegistryProblems: reg.problems, TargetSequences: sequencesOf(snap, histories),
		PullRequests: prFacts, OpenedPullRequests: c.opened, Requests: requests, Holds: holds,
		StageRenders: facts.renders, RendersOther: facts.rendersOther, Reports: facts.reports, Positions: facts.positions}, now)
	c.opts.Metrics.observePromotions(c.name, d.State)

	res := PassResult{Transitions: d.Transitions, RequeueAfter: d.RequeueAfter, Problems: pass.ConfigurationProblems(snap, d.State)}
	diff, err := c.codec.Changes(d.State, files)
	if err != nil {
		return PassResult{}, err
	}
	for _, p := range d.ConsumedRequests {
		diff[p] = nil // in the commit that records what became of it
	}
	newHolds, err := holdFiles(d.NewHolds)
	if err != nil {
		return PassResult{}, err
	}
	for p, b := range newHolds {
		if _, exists := files[p]; !exists { // a record is never rewritten
			diff[p] = b
		}
	}
	starts := d.Start
	var along map[string]reconcilers.Result // executed with the state commit
	if len(diff) > 0 {
		pushStart := c.opts.Clock()
		commit, executed, err := c.writeStateAlong(ctx, snap, d.State, starts, tip, diff, StateMessage(d.Transitions))
		if err == nil && commit.IsZero() {
			commit, err = c.opts.Writer.CompareAndSwap(ctx, c.stateTarget(), tip, diff, StateMessage(d.Transitions))
		}
		c.opts.Metrics.observePush(c.name, pushStart, c.opts.Clock(), err)
		if err != nil {
			return PassResult{}, fmt.Errorf("write state branch %s: %w", c.opts.StateBranch, err)
		}
		if executed != nil {
			along, starts = executed, nil
		}
		res.Commit = commit
		for _, t := range d.Transitions {
			c.opts.Log.Info("transition", "change", t)
		}
		if c.held != nil {
			c.held.events = append(c.held.events, reconcilers.Events(state, d.State))
		} else {
			c.publishEvents(state, d.State)
		}
	}
	// The reports are recorded (or changed nothing); those on revisions the
	// branch does not hold yet wait for a later pass.
	recorded = true
	if len(facts.later) > 0 {
		c.requeueReports(facts.later)
	}
	c.observeDecided(ctx, snap, d.State, tip, files, res.Commit, diff)
	// The results are on the state branch now (or were not needed).
	c.results = map[string]reconcilers.Result{}
	c.opened = map[string]v1alpha1.PullRequestStatus{}
	c.queueUploads(snap, state, d.State)
	if c.held == nil {
		c.upload(ctx) // a held run uploads once its state commits land
	}
	if c.held != nil && c.startsElsewhere(snap, d.State, d.Start) {
		// The state commit that starts a promotion lands before the
		// promotion's commit in another repository, never after it; one
		// into another branch of this repository lands before the next
		// pass fetches that branch.
		if err := c.flushHeld(ctx); err != nil {
			return PassResult{}, fmt.Errorf("push the held writes before writing another repository: %w", err)
		}
	}
	results, execErr := c.execute(ctx, snap, d.State, starts)
	for name, r := range along {
		results[name] = r
	}
	written := map[string]bool{}
	for _, name := range keys.Sorted(results) {
		c.results[name] = results[name]
		res.Executed = append(res.Executed, name)
		if results[name].Outcome == reconcilers.OutcomeSucceeded {
			t := d.State.Promotions[name].Spec.Target
			written[snap.StageIndex[source.StageKey(t.Landscape, t.Name)].URL] = true
		}
	}
	res.Written = keys.Sorted(written)
	var retryIn time.Duration
	if c.held != nil && len(d.PullRequestActions) > 0 {
		// A forge sees only what was pushed.
		if err := c.flushHeld(ctx); err != nil {
			return PassResult{}, fmt.Errorf("push the held writes before acting on pull requests: %w", err)
		}
	}
	res.PullRequests, res.PullRequestsWaiting, retryIn = c.executePullRequests(ctx, snap, d.State, d.PullRequestActions)
	if retryIn > 0 && (res.RequeueAfter == 0 || retryIn < res.RequeueAfter) {
		res.RequeueAfter = retryIn
	}
	c.inputs, c.due, c.problems = inputs, now.Add(requeueOrForever(d.RequeueAfter)), res.Problems
	c.read = c.gitOnlyRead(snap, tip, reg, prFacts, reports)
	// A forge write that failed is planned again only by a fresh decision.
	if res.Changed() || execErr != nil || len(res.PullRequests) < len(d.PullRequestActions) {
		c.inputs = "" // our own writes changed the inputs: look again
	}
	return res, execErr
}

// requeueOrForever is how long an unchanged repository needs no decision:
// until the earliest time-based transition (a deadline, a TTL, an
// updateDelay), or never.
func requeueOrForever(d time.Duration) time.Duration {
	if d <= 0 {
		return 100 * 365 * 24 * time.Hour
	}
	return d
}

// queueUploads remembers the vectors this pass assembled whose template
// names an uploadTarget; they are pushed once the state holds them.
func (c *Controller) queueUploads(snap *source.Snapshot, before, after *reconcilers.State) {
	if c.opts.Uploader == nil {
		return
	}
	for ref, v := range after.Vectors {
		if _, existed := before.Vectors[ref]; existed {
			continue
		}
		if t := snap.Templates[v.Spec.Template]; t != nil && t.Spec.UploadTarget != "" {
			c.uploads[ref] = upload{target: t.Spec.UploadTarget, vector: v}
		}
	}
}

// upload pushes queued vectors; a failure is logged and retried next pass.
func (c *Controller) upload(ctx context.Context) {
	for ref, u := range c.uploads {
		data, err := yaml.Marshal(u.vector)
		if err == nil {
			var digest string
			digest, err = c.opts.Uploader.PushVector(ctx, u.target, u.vector.Spec.Version, data)
			if err == nil {
				c.opts.Log.Info("uploaded vector", "vector", ref, "target", u.target, "digest", digest)
				delete(c.uploads, ref)
				continue
			}
		}
		c.opts.Log.Error(err, "vector upload failed; retrying on the next pass", "vector", ref, "target", u.target)
	}
}

// RunUntilStable runs passes until one changes nothing and leaves no pull
// request waiting for its forge, so a change propagates through every stage
// it reaches (dev, then test, ...) in one call, however deep the chain. It
// stops after maxPasses passes more than the repository's configs may need
// (passLimit).
func (c *Controller) RunUntilStable(ctx context.Context, maxPasses int) ([]PassResult, error) {
	// What the loads read is kept for the next process whatever the
	// outcome: it describes commits, which never change.
	defer c.opts.Loader.SaveCaches()
	c.mu.Lock()
	if res, ok := c.settledAsBefore(ctx); ok {
		c.mu.Unlock()
		return []PassResult{res}, nil
	}
	held := c.hold()
	c.mu.Unlock()
	for attempt := 1; ; attempt++ {
		all, err := c.runUntilStable(ctx, maxPasses, held)
		c.mu.Lock()
		if err == nil {
			err = c.flushHeld(ctx)
		}
		if err == nil {
			c.releaseHeld()
			c.exportStateMemo(true) // what a restart reads: the settled state
			c.exportSettled()
			c.mu.Unlock()
			return all, nil
		}
		if !held {
			c.mu.Unlock()
			return all, err
		}
		if errors.Is(err, gitwriter.ErrConflict) && c.held != nil && attempt < maxConflicts {
			// Another writer moved a branch: the held writes were
			// dropped (flushHeld), and the run starts again from a fetch.
			c.opts.Log.V(1).Info("a branch moved while the run held its writes; running again", "attempt", attempt, "why", err.Error())
			c.mu.Unlock()
			continue
		}
		// Only the passes whose writes were pushed happened.
		landed := 0
		if c.held != nil {
			landed = min(c.held.landed, len(all))
		}
		c.dropHeld(ctx)
		c.mu.Unlock()
		return all[:landed], err
	}
}

// runUntilStable is RunUntilStable's passes; held says their writes are
// held back, for the caller to flush.
func (c *Controller) runUntilStable(ctx context.Context, maxPasses int, held bool) ([]PassResult, error) {
	var all []PassResult
	for i := 0; i < c.passLimit(maxPasses); i++ {
		run := c.heldNow()
		res, err := c.Pass(ctx)
		if err != nil {
			return all, err
		}
		if held && c.heldNow() != run {
			// A flush in the pass found a branch moved: the writes of the
			// passes before were dropped, and the run started over.
			all = nil
		}
		all = append(all, res)
		if !res.Changed() && len(c.pendingResults()) == 0 {
			if len(res.PullRequestsWaiting) == 0 {
				return all, nil
			}
			// Only the forge is behind: look again when it may have caught up.
			timer := time.NewTimer(res.RequeueAfter)
			select {
			case <-ctx.Done():
				timer.Stop()
				return all, ctx.Err()
			case <-timer.C:
			}
		}
	}
	return all, fmt.Errorf("repository %s did not settle after %d passes", c.name, len(all))
}

// Name is the config repository as it may be shown: its URL without
// credentials.
func (c *Controller) Name() string { return c.name }

func (c *Controller) pendingResults() map[string]reconcilers.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results
}

func (c *Controller) stateTarget() gitwriter.Target {
	return gitwriter.Target{Remote: c.remote(c.opts.URL), Branch: c.opts.StateBranch}
}

// remote pairs url with its credentials, derived once per URL the same way
// the loader derives them.
func (c *Controller) remote(url string) gitwriter.Remote {
	c.remotesMu.Lock()
	defer c.remotesMu.Unlock()
	if r, ok := c.remotes[url]; ok {
		return r
	}
	r := WriterRemote(url, c.opts.Auth(url))
	c.remotes[url] = r
	return r
}

// execute writes each started promotion's vector into its target overlay.
// Promotions for the same branch are written concurrently so the writer
// coalesces them into one push. A promotion whose write failed for a reason
// that may pass (the remote unreachable, a race lost too often) has no
// result: it stays InProgress and is retried until its deadline, and its
// error is returned so the caller can say so.
func (c *Controller) execute(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, names []string) (map[string]reconcilers.Result, error) {
	results := make(map[string]reconcilers.Result, len(names))
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		p := state.Promotions[name]
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.executeOne(ctx, snap, state, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("write promotion %s (retried on the next pass): %w", p.Name, err))
				return
			}
			results[p.Name] = r
		}()
	}
	wg.Wait()
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return results, errors.Join(errs...)
}

// executeOne writes one promotion. The error is for a failure that may pass;
// a failure that will not (the overlay is broken or gone, the remote refuses
// the push) is a Failed result naming the cause.
func (c *Controller) executeOne(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, p *v1alpha1.VectorPromotion) (reconcilers.Result, error) {
	return c.executeOneWith(ctx, snap, state, p, func(target gitwriter.Target, change gitwriter.Change) ([]gitwriter.Result, error) {
		return c.opts.Writer.Apply(ctx, target, change)
	})
}

// executeOneWith is executeOne writing the promotion's change with apply.
func (c *Controller) executeOneWith(ctx context.Context, snap *source.Snapshot, state *reconcilers.State, p *v1alpha1.VectorPromotion,
	apply func(gitwriter.Target, gitwriter.Change) ([]gitwriter.Result, error)) (reconcilers.Result, error) {
	log := c.opts.Log.WithValues("promotion", p.Name, "vector", p.Spec.Vector)
	t := p.Spec.Target
	ref, ok := snap.StageIndex[source.StageKey(t.Landscape, t.Name)]
	if !ok {
		return reconcilers.Result{Outcome: reconcilers.OutcomeTargetUnresolved,
			Message: t.Describe() + " does not resolve"}, nil
	}
	vector := state.Vectors[p.Spec.Vector]
	if vector == nil {
		return reconcilers.Result{Outcome: reconcilers.OutcomeFailed,
			Message: fmt.Sprintf("vector %s is not on the state branch; promote a vector vectorflow assembled or recorded", p.Spec.Vector)}, nil
	}
	file, err := kustomizationPath(ref.Tree, ref.Overlay)
	if err != nil {
		return reconcilers.Result{Outcome: reconcilers.OutcomeFailed, Message: err.Error()}, nil
	}
	trailers := gitwriter.Trailers{
		Promotion: p.Name, Config: p.Spec.VectorPromotionConfigName, Sequence: p.Spec.Sequence, Vector: p.Spec.Vector,
		Source: p.Spec.Source.Ref(), Target: t.Ref(), Forced: p.Spec.Forced, Rollback: p.Spec.Rollback,
	}
	trailers.Approvals = approvalTrailers(p)
	change := gitwriter.PromotionChange(file, t.Landscape, t.Name, p.Spec.Vector, vector.Spec.Components, trailers)
	renders := func(tree repofs.Tree) error { return c.checkRenders(tree, ref.Overlay, vector.Spec.Components) }
	change.Check = func(tree *object.Tree) error { return renders(repofs.GitTree(tree)) }
	target := gitwriter.Target{Remote: c.remote(ref.URL), Branch: ref.Branch}
	if err := c.guardRemovals(ctx, p, snap.Configs[p.Spec.VectorPromotionConfigName], ref, target, activeInventory(state, t), renders, &change); err != nil {
		return reconcilers.Result{}, err
	}
	results, err := apply(target, change)
	var removal *protectedRemovalError
	if errors.As(err, &removal) {
		log.Info("the promotion removes protected objects and waits for approval", "removed", removal.Error())
		return reconcilers.Result{Outcome: reconcilers.OutcomeNeedsApproval, Removed: removal.removed, Message: removal.Error()}, nil
	}
	if r, refused := refusedByHistory(err); refused {
		log.Info("the target's history refuses the promotion", "reason", r.Reason, "message", r.Message)
		return r, nil
	}
	var editErr *gitwriter.EditError
	var remoteErr *gitwriter.RemoteError
	var checkErr *gitwriter.CheckError
	switch {
	case errors.As(err, &checkErr):
		log.Error(err, "promotion failed")
		return checkFailure(checkErr), nil
	case errors.As(err, &editErr), errors.As(err, &remoteErr) && remoteErr.Op == "push":
		log.Error(err, "promotion failed")
		return reconcilers.Result{Outcome: reconcilers.OutcomeFailed, Message: err.Error()}, nil
	case err != nil:
		return reconcilers.Result{}, err
	case len(results) != 1:
		return reconcilers.Result{}, fmt.Errorf("the writer returned %d results for one change", len(results))
	}
	log.Info("promoted", "target", t.Ref(), "commit", results[0].Commit.String(),
		"existing", results[0].Existing, "alreadyApplied", results[0].AlreadyApplied)
	return reconcilers.Result{Outcome: reconcilers.OutcomeSucceeded, Commit: results[0].Commit.String()}, nil
}

// kustomizationPath is the overlay's kustomization file, as kustomize looks
// for it.
func kustomizationPath(tree repofs.Tree, dir string) (string, error) {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if _, err := fs.Stat(tree, p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("overlay %s has no kustomization.yaml", dir)
}

// StateMessage is the state commit message: a subject counting the changes
// and one line per transition.
func StateMessage(transitions []string) string {
	if len(transitions) == 0 {
		return "vectorflow: refresh status\n"
	}
	var b strings.Builder
	subject := transitions[0]
	if len(transitions) > 1 {
		subject = fmt.Sprintf("%s (+%d more)", transitions[0], len(transitions)-1)
	}
	fmt.Fprintf(&b, "vectorflow: %s\n\n", subject)
	for _, t := range transitions {
		b.WriteString(t + "\n")
	}
	return b.String()
}

// sortedKeys is the order the shell walks maps in, so that passes, logs and
// commits are the same for the same input.
