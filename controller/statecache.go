package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
	"github.com/vectorflow-dev/vectorflow/source"
	"github.com/vectorflow-dev/vectorflow/source/deployments"

	"github.com/vectorflow-dev/vectorflow/internal/buildid"
	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
)

// The state codec's memory persists in the cache directory, so a restarted
// controller decodes only the state files that changed since (the codec
// takes a remembered object only for a file of exactly the remembered
// bytes). It is keyed by the build, the repository and the state branch.
const (
	stateMemoFormat = "vectorflow state codec 2\n"
	stateMemoMax    = 1 << 30
	// stateMemoEvery bounds how often a running controller rewrites it:
	// between writes, a restart decodes the few files that changed.
	stateMemoEvery = time.Minute
)

// staleFilesKept is how many state files the memory on disk may miss
// before it is written again: a restart decodes that many itself, a small
// share of what it takes from the memory.
func staleFilesKept(files int) int { return max(16, files/256) }

type stateMemo struct {
	file   string // "" for none
	loaded bool
	saved  time.Time
	// written counts the writes of file.
	written int
	// trustFile holds the newest state commit whose history was verified
	// as trusted, keyed also by the trusted keys.
	trustFile   string
	trustLoaded bool
	// settledFile holds the inputs of the last settled pass, keyed also by
	// the config branch and path, the trusted keys and Options.Settings;
	// "" when Settings are not given.
	settledFile string
}

// newStateMemo is the memory of a controller made at now: a running one
// first writes it a stateMemoEvery later, so run --once writes it once,
// when it settles.
func newStateMemo(o Options, trustedKeys string) stateMemo {
	if o.CacheDir == "" {
		return stateMemo{}
	}
	key := stateMemoKey(o.URL, o.StateBranch)
	trustSum := sha256.Sum256([]byte(key + "\x00" + trustedKeys))
	m := stateMemo{
		saved:     o.Clock(),
		file:      StateMemoFile(o.CacheDir, o.URL, o.StateBranch),
		trustFile: filepath.Join(o.CacheDir, "configs", "trust-"+hex.EncodeToString(trustSum[:])),
	}
	if o.Settings != "" {
		settledSum := sha256.Sum256([]byte(strings.Join([]string{key, trustedKeys, o.Branch, o.ConfigPath, o.Settings}, "\x00")))
		m.settledFile = filepath.Join(o.CacheDir, "configs", "settled-"+hex.EncodeToString(settledSum[:]))
	}
	return m
}

// stateMemoKey is what a state branch's memories are keyed by: this build,
// the repository and the branch.
func stateMemoKey(url, stateBranch string) string {
	return buildid.String() + "\x00" + url + "\x00" + stateBranch
}

// StateMemoFile is where the state codec's memory of a state branch lives
// in cacheDir: what a controller exports, and what a view of the same
// branch (web.Reader) imports, so neither decodes every file afresh.
func StateMemoFile(cacheDir, url, stateBranch string) string {
	sum := sha256.Sum256([]byte(stateMemoKey(url, stateBranch)))
	return filepath.Join(cacheDir, "configs", "state-"+hex.EncodeToString(sum[:]))
}

// ImportStateMemo gives codec the memory file holds (see StateMemoFile),
// if it holds one written as of now; it reports whether it did.
func ImportStateMemo(codec *reconcilers.Codec, file string, now time.Time) bool {
	body, ok := cachefile.Read(file, stateMemoFormat, stateMemoMax, now)
	if ok {
		codec.Import(body)
	}
	return ok
}

// ExportStateMemo writes codec's memory to file, for ImportStateMemo.
func ExportStateMemo(codec *reconcilers.Codec, file string) error {
	body, err := codec.Export()
	if err != nil {
		return err
	}
	return cachefile.Write(file, stateMemoFormat, body)
}

const settledFormat = "vectorflow settled pass 1\n"

// settledPass is what a pass that decided nothing new was decided from
// (Controller.inputs), until when that holds, and the problems it found.
type settledPass struct {
	Inputs   string    `json:"inputs"`
	Due      time.Time `json:"due"`
	Problems []string  `json:"problems,omitempty"`
	// Read is set when the pass read nothing but Git (gitOnlyRead).
	Read *gitRead `json:"read,omitempty"`
}

// gitRead is what a pass read from Git alone: a pass that finds every
// branch where it was would read, decide and log the same.
type gitRead struct {
	// Branches are the config branch and the landscapes' (Loader.ReadCommits).
	Branches []source.BranchCommit `json:"branches"`
	// State is the state branch's tip, the zero hash when there was none.
	State string `json:"state"`
	// Logged are the snapshot's problems, which a first pass logs.
	Logged []string `json:"logged,omitempty"`
}

// importSettled takes, once, the last settled pass an earlier process
// with the same settings recorded: the first pass that finds the same
// inputs before it is due decides nothing again (see pass).
func (c *Controller) importSettled() {
	m := &c.stateMemo
	if m.settledFile == "" || c.inputs != "" || c.settledBefore {
		return
	}
	body, ok := cachefile.Read(m.settledFile, settledFormat, 1<<20, c.opts.Clock())
	if !ok {
		return
	}
	var sp settledPass
	if json.Unmarshal(body, &sp) != nil || sp.Inputs == "" {
		return
	}
	c.inputs, c.due, c.problems, c.settledBefore = sp.Inputs, sp.Due, sp.Problems, true
	c.read = sp.Read
}

// gitOnlyRead is what a pass that read snap and the state branch at tip
// read, when nothing it decided on came from outside Git: no registry
// answered for a template, no forge for a pull request or a commit status,
// no deployer reported, and no pull request waits for its forge. nil
// otherwise, when the load read a plain directory, or when no settled pass
// is recorded (no Settings).
func (c *Controller) gitOnlyRead(snap *source.Snapshot, tip plumbing.Hash, reg registryResolution, prFacts map[string]pass.PullRequestFacts,
	reports []deployments.Report) *gitRead {
	if c.stateMemo.settledFile == "" || len(reg.resolved) > 0 || len(reg.problems) > 0 || len(prFacts) > 0 || len(reports) > 0 || len(c.unindexed) > 0 ||
		len(c.commitStatusTargets(snap)) > 0 {
		return nil
	}
	read, ok := c.opts.Loader.ReadCommits(c.opts.URL, c.opts.Branch)
	if !ok || read[0].Commit != snap.Commit {
		return nil
	}
	r := &gitRead{Branches: read, State: tip.String()}
	for _, p := range snap.Problems {
		r.Logged = append(r.Logged, p.Error())
	}
	return r
}

// settledAsBefore is the pass an earlier run settled on (importSettled),
// taken without loading anything when that pass read only Git, every
// branch it read is where it was, its state tip is trusted under this
// process's keys, and none of its deadlines has passed: a run --once
// over an unchanged repository costs a listing of each repository's
// branches. A controller whose passes someone observes or measures
// loads: they want what it read.
func (c *Controller) settledAsBefore(ctx context.Context) (PassResult, bool) {
	if c.opts.Observe != nil || c.opts.Metrics != nil {
		return PassResult{}, false
	}
	c.importSettled()
	now := c.opts.Clock()
	if !c.settledBefore || c.read == nil || !now.Before(c.due) || !plumbing.IsHash(c.read.State) {
		return PassResult{}, false
	}
	state := source.BranchCommit{URL: c.opts.URL, Branch: c.opts.StateBranch, Commit: c.read.State}
	if !c.opts.Loader.StillAt(ctx, append(slices.Clone(c.read.Branches), state)) {
		return PassResult{}, false
	}
	if tip := plumbing.NewHash(c.read.State); !tip.IsZero() {
		c.importTrustMemo()
		if v, ok := c.trust.Known(tip); !ok || !v.Trusted {
			return PassResult{}, false
		}
	}
	for _, p := range c.read.Logged {
		c.opts.Log.Error(errors.New(p), "configuration problem")
	}
	c.settledBefore = false
	return PassResult{RequeueAfter: c.due.Sub(now), Problems: c.problems}, true
}

// exportSettled records the pass a run settled on, for the next process;
// a run that did not end on a pass that decided nothing new records none.
func (c *Controller) exportSettled() {
	m := &c.stateMemo
	if m.settledFile == "" {
		return
	}
	if c.inputs == "" {
		_ = os.Remove(m.settledFile)
		return
	}
	body, err := json.Marshal(settledPass{Inputs: c.inputs, Due: c.due, Problems: c.problems, Read: c.read})
	if err != nil {
		return
	}
	_ = cachefile.Write(m.settledFile, settledFormat, body)
}

const trustMemoFormat = "vectorflow trusted state commit 1\n"

type trustMemo struct {
	Commit  string              `json:"commit"`
	Verdict trust.CommitVerdict `json:"verdict"`
}

// importTrustMemo tells the trust check which commit an earlier process
// verified, once: its history is not walked again.
func (c *Controller) importTrustMemo() {
	m := &c.stateMemo
	if m.trustFile == "" || m.trustLoaded {
		return
	}
	m.trustLoaded = true
	body, ok := cachefile.Read(m.trustFile, trustMemoFormat, 1<<20, c.opts.Clock())
	if !ok {
		return
	}
	var tm trustMemo
	if json.Unmarshal(body, &tm) != nil || !plumbing.IsHash(tm.Commit) {
		return
	}
	c.trust.rememberTrusted(plumbing.NewHash(tm.Commit), tm.Verdict)
}

// exportTrustMemo remembers a newly verified trusted tip.
func (c *Controller) exportTrustMemo(tip plumbing.Hash, v trust.CommitVerdict) {
	if c.stateMemo.trustFile == "" || !v.Trusted || v.Refused != nil {
		return
	}
	body, err := json.Marshal(trustMemo{Commit: tip.String(), Verdict: v})
	if err != nil {
		return
	}
	_ = cachefile.Write(c.stateMemo.trustFile, trustMemoFormat, body)
}

// importStateMemo starts giving the codec what an earlier process
// remembered, once, before its first decode; the returned wait returns
// when it is done. A large repository's memory takes a while to decode
// (0.4 s at 10,000 stages), so the pass waits only once its load is done.
func (c *Controller) importStateMemo() (wait func()) {
	m := &c.stateMemo
	if m.file == "" || m.loaded {
		return func() {}
	}
	m.loaded = true
	c.importSettled()
	at := c.opts.Clock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if ImportStateMemo(c.codec, m.file, at) {
			c.stateFiles.seed(c.codec.Files())
		}
	}()
	return func() { <-done }
}

// exportStateMemo writes the codec's memory when it learnt something new,
// at most once per stateMemoEvery unless now is set (a settled run), and
// only once the memory on disk misses more than staleFilesKept files: the
// whole memory is rewritten each time (30 MB at 10,000 stages), which a
// promotion's few changed files would otherwise cost every run --once.
func (c *Controller) exportStateMemo(now bool) {
	m := &c.stateMemo
	at := c.opts.Clock()
	if m.file == "" || !c.codec.Changed() || !now && at.Sub(m.saved) < stateMemoEvery {
		return
	}
	if stale, files := c.codec.Stale(); stale <= staleFilesKept(files) {
		m.saved = at // a running controller looks again a stateMemoEvery later
		return
	}
	if ExportStateMemo(c.codec, m.file) == nil {
		m.saved = at
		m.written++
	}
}
