package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/gitwriter"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/render"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/repofs"
)

// ReaderOptions say which repository a Reader reads and whom it believes.
type ReaderOptions struct {
	// ID is the repository's path segment in the view's URLs.
	ID                                   string
	URL, Branch, ConfigPath, StateBranch string
	Auth                                 func(url string) source.Auth
	// Trust are the state signers: the controllers' public keys. Without
	// any, the state is shown unverified, with a banner saying so.
	Trust []gitwriter.TrustedKey
	// Limits bound what one read takes from the repositories.
	Limits repofs.Limits
	// CacheDir holds the fetched objects on disk (source.OpenCached); ""
	// keeps them in memory.
	CacheDir string
	// OnChange is called after a read that found the config branch or the
	// state branch moved.
	OnChange func(id string)
	// FedWithin, when set, says a controller in this process feeds the
	// reader its reads of the repository (Observe) at least this often
	// while it reconciles it. The reader then reads the branches itself
	// only after this long without a feed (a replica that does not
	// reconcile the repository, a controller that stopped), so it never
	// loads the repository a second time beside the controller, not even
	// while the controller's first pass runs.
	FedWithin time.Duration
	Log       logr.Logger
}

// Reader keeps the latest read of one config repository and its state
// branch, and answers the questions that need git or kustomize: a stage's
// history and what a promotion would change. It never writes.
type Reader struct {
	o        ReaderOptions
	loader   *source.Loader
	renderer *render.Renderer
	trust    *controller.StateTrust

	current sync.Map // "snap" → *Snapshot, read without the lock by handlers

	// mu serialises the git and kustomize work: StateTrust and the
	// repositories are not safe for concurrent use, and one view must not
	// take every core of the machine it shares with the controller.
	mu        sync.Mutex
	stateRepo *source.Repository
	repos     map[string]*source.Repository
	audits    map[string][]controller.AuditEntry
	describes map[string]pass.PullRequestDescription

	// codec decodes the fed state files; it remembers each file, so a
	// feed costs the decoding of the files that changed. It only ever
	// decodes, so what it gives is what the files' bytes decode to.
	codec *reconcilers.Codec

	// feedMu guards the latest feed not shown yet and when a feed last
	// came; fed wakes Run to show it.
	feedMu   sync.Mutex
	feed     *controller.Observed
	lastFeed time.Time
	fed      chan struct{}
}

// NewReader prepares a reader; Refresh reads.
func NewReader(o ReaderOptions) (*Reader, error) {
	if o.StateBranch == "" {
		o.StateBranch = controller.DefaultStateBranch
	}
	if o.Auth == nil {
		o.Auth = func(string) source.Auth { return source.Auth{} }
	}
	r := &Reader{o: o, renderer: render.NewRenderer(render.Options{}), repos: map[string]*source.Repository{}, fed: make(chan struct{}, 1),
		codec: reconcilers.NewCodec()}
	r.loader = source.NewLoader(source.Options{ConfigPath: o.ConfigPath, Auth: o.Auth, Renderer: r.renderer, Limits: o.Limits, CacheDir: o.CacheDir})
	if len(o.Trust) > 0 {
		t, err := controller.NewStateTrust(o.Trust)
		if err != nil {
			return nil, err
		}
		r.trust = t
	}
	// The loader's fetch of the config branch brings the state branch
	// along, as the controller's does: one ref advertisement for both, so
	// the state shown is never newer than the config shown beside it.
	repo, err := r.loader.Repository(o.URL)
	if err != nil {
		return nil, err
	}
	repo.FetchAlso(o.StateBranch)
	r.stateRepo = repo
	return r, nil
}

// Snapshot is the latest read, or one that holds only the problem of the
// first read when that failed.
func (r *Reader) Snapshot() *Snapshot {
	if s, ok := r.current.Load("snap"); ok {
		return s.(*Snapshot)
	}
	return &Snapshot{ID: r.o.ID, URL: source.RedactURL(r.o.URL), Branch: r.o.Branch, StateBranch: r.o.StateBranch,
		Problem: "not read yet"}
}

// Run refreshes every interval until ctx ends. A fed reader (FedWithin)
// shows each feed as it comes instead, and refreshes only while no feed
// came for FedWithin.
func (r *Reader) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	if r.o.FedWithin > 0 && r.o.CacheDir != "" {
		// The feeds' state files decode as the controller's do: what it
		// remembered of them spares the first feed decoding every file
		// (2.1 s against 0.2 s at 10,000 stages), beside its first pass.
		r.mu.Lock()
		controller.ImportStateMemo(r.codec, controller.StateMemoFile(r.o.CacheDir, r.o.URL, r.o.StateBranch), time.Now())
		r.mu.Unlock()
	}
	r.feedMu.Lock()
	r.lastFeed = time.Now() // the controller's first pass is under way
	r.feedMu.Unlock()
	for {
		if r.o.FedWithin <= 0 || r.starved() {
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				r.o.Log.Error(err, "web view: read failed; showing the last good read", "repository", source.RedactURL(r.o.URL))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.fed:
			if err := r.showFeed(ctx); err != nil && ctx.Err() == nil {
				r.o.Log.Error(err, "web view: read of the state branch failed; showing the last good read", "repository", source.RedactURL(r.o.URL))
			}
			continue
		case <-t.C:
		}
	}
}

// starved says no feed came for FedWithin.
func (r *Reader) starved() bool {
	r.feedMu.Lock()
	defer r.feedMu.Unlock()
	return time.Since(r.lastFeed) >= r.o.FedWithin
}

// Observe is a controller's pass over the repository (controller.Options
// Observe calls it, in the controller's goroutine): the reader shows what
// the pass read instead of reading it again. It only keeps the feed and
// returns; Run shows it. A pass that could not tell the state branch is no
// feed: the reader reads itself when no other comes.
func (r *Reader) Observe(o controller.Observed) {
	if o.Snapshot == nil || o.StateBranch == nil {
		return
	}
	r.feedMu.Lock()
	r.lastFeed = time.Now()
	shown := r.Snapshot()
	// A commit's verdict never changes, and the one shown was judged
	// under the reader's keys: the same commits are what is shown already.
	if r.feed == nil && shown.Problem == "" && shown.Config != nil && shown.Config.Commit == o.Snapshot.Commit && shown.State.Tip == o.StateBranch.Tip {
		r.feedMu.Unlock()
		return
	}
	r.feed = &o
	r.feedMu.Unlock()
	select {
	case r.fed <- struct{}{}:
	default: // Run has a wake-up pending; it takes the latest feed
	}
}

// showFeed publishes the latest feed, its state files decoded as a read of
// the state branch decodes them. A state the feed does not vouch for under
// the reader's own keys (refused by the controller, or judged against other
// keys) is read and judged here, as Refresh does, beside the feed's config:
// nothing a forger wrote is shown as true.
func (r *Reader) showFeed(ctx context.Context) error {
	r.feedMu.Lock()
	o := r.feed
	r.feed = nil
	r.feedMu.Unlock()
	if o == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fed := o.StateBranch
	var s *Snapshot
	var err error
	switch {
	case fed.Files != nil && (r.trust == nil || fed.Verdict.Trusted && fed.Signers == r.trust.Keys()):
		s = &Snapshot{ID: r.o.ID, URL: source.RedactURL(r.o.URL), Branch: r.o.Branch, StateBranch: r.o.StateBranch,
			Config: o.Snapshot, ReadAt: time.Now(), Verified: r.trust != nil}
		state, errs := r.codec.Decode(fed.Files)
		if len(errs) > 0 && r.trust != nil {
			// As a verified read of the branch fails (ReadVerifiedState).
			err = fmt.Errorf("state branch %s of %s: %w", r.o.StateBranch, source.RedactURL(r.o.URL), errors.Join(errs...))
			break
		}
		verdict := fed.Verdict
		if r.trust == nil {
			verdict = trust.CommitVerdict{Trusted: true} // unverified, as Refresh shows it without keys
		}
		s.State = controller.VerifiedState{Tip: fed.Tip, Files: fed.Files, State: state, Verdict: verdict}
	default:
		s, err = r.read(ctx)
	}
	r.publish(s, err)
	return err
}

// Refresh reads the config branch and the state branch, checks the state's
// history against the trusted keys, and publishes the read when either
// branch moved. A state that does not verify is shown as of its last
// trusted commit, as audit reads it, so nothing a forger wrote is shown as
// true; the refusal is shown beside it.
func (r *Reader) Refresh(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap, err := r.read(ctx)
	r.publish(snap, err)
	return err
}

// publish shows a read, or the failure of one above the last read shown,
// and tells OnChange when what is shown changed. The caller holds mu.
func (r *Reader) publish(snap *Snapshot, err error) {
	prev := r.Snapshot()
	if err != nil {
		// Keep what was shown, with the problem on top.
		failed := *prev
		failed.Problem = source.RedactText(err.Error())
		r.current.Store("snap", &failed)
		if prev.Problem != failed.Problem && r.o.OnChange != nil {
			r.o.OnChange(r.o.ID)
		}
		return
	}
	if prev.Config != nil && prev.Problem == "" && prev.Config.Commit == snap.Config.Commit && prev.State.Tip == snap.State.Tip &&
		prev.State.Verdict.Trusted == snap.State.Verdict.Trusted {
		return
	}
	r.current.Store("snap", snap)
	r.audits, r.describes = map[string][]controller.AuditEntry{}, map[string]pass.PullRequestDescription{}
	if r.o.OnChange != nil {
		r.o.OnChange(r.o.ID)
	}
}

func (r *Reader) read(ctx context.Context) (*Snapshot, error) {
	cfg, err := r.loader.Load(ctx, r.o.URL, r.o.Branch)
	if err != nil {
		return nil, err
	}
	return r.readState(cfg)
}

// readState reads and judges the state branch as the load of the config
// read cfg fetched it.
func (r *Reader) readState(cfg *source.Snapshot) (*Snapshot, error) {
	tip, err := controller.FetchedState(r.stateRepo, r.o.StateBranch)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{ID: r.o.ID, URL: source.RedactURL(r.o.URL), Branch: r.o.Branch, StateBranch: r.o.StateBranch,
		Config: cfg, ReadAt: time.Now(), Verified: r.trust != nil}
	if r.trust == nil {
		files, state, err := controller.StateAt(r.stateRepo, r.o.StateBranch, tip)
		if err != nil && state == nil {
			return nil, err
		}
		s.State = controller.VerifiedState{Tip: tip, Files: files, State: state, Verdict: trust.CommitVerdict{Trusted: true}}
		return s, nil
	}
	s.State, err = controller.VerifyState(r.stateRepo, r.o.StateBranch, tip, r.trust, cfg.Configs)
	if err != nil {
		return nil, err
	}
	if !s.State.Verdict.Trusted {
		// As of the last trusted commit; a file that does not decode there
		// is left out, as audit leaves it.
		files, state, err := controller.StateAt(r.stateRepo, r.o.StateBranch, plumbing.NewHash(s.State.Verdict.LastTrusted))
		if state == nil {
			return nil, fmt.Errorf("read the last trusted state commit %s: %w", s.State.Verdict.LastTrusted, err)
		}
		s.State.Files, s.State.State = files, state
	}
	return s, nil
}

// Audit is what `vectorflow audit --stage` shows for the stage
// (`landscape/name`), as of the latest read; computed once per read.
func (r *Reader) Audit(ctx context.Context, stage string) ([]controller.AuditEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := r.Snapshot()
	if snap.Config == nil {
		return nil, errors.New("the repository has not been read yet")
	}
	if e, ok := r.audits[stage]; ok {
		return e, nil
	}
	entries, err := controller.Audit(ctx, controller.AuditInput{
		Snapshot: snap.Config, Open: r.open(ctx), StateRepo: r.stateRepo, StateBranch: r.o.StateBranch,
		StateTrust: r.trust, Trusted: r.o.Trust, Stage: stage, Limit: maxHistory,
	})
	if err != nil {
		return nil, err
	}
	r.audits[stage] = entries
	return entries, nil
}

// maxHistory bounds the commits a stage page lists.
const maxHistory = 200

// open fetches a landscape's repository into a store kept across calls,
// so a page view fetches only what is new.
func (r *Reader) open(ctx context.Context) func(url, branch string) (*source.Repository, error) {
	return func(url, branch string) (*source.Repository, error) {
		repo := r.repos[url]
		if repo == nil {
			var err error
			if repo, err = source.OpenCached(url, r.o.Auth(url), r.o.CacheDir); err != nil {
				return nil, err
			}
			r.repos[url] = repo
		}
		_, err := repo.Fetch(ctx, branch)
		return repo, err
	}
}

// Describe is what the open promotion would change in its target: the
// components and the rendered objects, as its pull request describes them.
func (r *Reader) Describe(_ context.Context, promotion string) (pass.PullRequestDescription, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.describes[promotion]; ok {
		return d, nil
	}
	snap := r.Snapshot()
	if snap.Config == nil || snap.State.State == nil {
		return pass.PullRequestDescription{}, errors.New("the repository has not been read yet")
	}
	p := snap.State.State.Promotions[promotion]
	if p == nil {
		return pass.PullRequestDescription{}, fmt.Errorf("no promotion %s", promotion)
	}
	ref, ok := snap.Config.StageIndex[source.StageKey(p.Spec.Target.Landscape, p.Spec.Target.Name)]
	if !ok {
		return pass.PullRequestDescription{}, fmt.Errorf("its target %s does not resolve in %s", p.Spec.Target.Describe(), snap.URL)
	}
	vector := snap.State.State.Vectors[p.Spec.Vector]
	if vector == nil {
		return pass.PullRequestDescription{}, fmt.Errorf("its vector %s is not on the state branch", p.Spec.Vector)
	}
	d, err := controller.DescribePromotion(r.renderer, ref, p.Name, p.Spec.Source.Ref(), p.Spec.Target.Ref(), vector)
	if err != nil {
		return d, err
	}
	r.describes[promotion] = d
	return d, nil
}
