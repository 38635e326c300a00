package controller

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
)

// Runner keeps many repositories reconciled: one worker per repository and
// branch passes every interval (with jitter), at once when triggered by a
// webhook, and sooner when a decision asks for it. A slow or failing
// repository only delays its own worker.
type Runner struct {
	interval time.Duration
	log      logr.Logger
	workers  []*worker

	mu sync.Mutex // guards every worker's health, and only
	// only are the workers Ready looks at; nil means all (see ReadyOnly).
	only func(*Controller) bool
}

type worker struct {
	c       *Controller
	trigger chan struct{}
	health  pass.RepositoryHealth
}

// NewRunner returns a Runner for the controllers.
func NewRunner(interval time.Duration, log logr.Logger, controllers ...*Controller) *Runner {
	r := &Runner{interval: interval, log: log}
	for _, c := range controllers {
		r.workers = append(r.workers, &worker{c: c, trigger: make(chan struct{}, 1), health: pass.RepositoryHealth{Repository: c.Name()}})
	}
	return r
}

// Run runs every worker until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work(ctx, w)
		}()
	}
	wg.Wait()
	// What the loads read is kept for the next process: the vectors that
	// wait for their minute, and those being written in the background.
	for _, w := range r.workers {
		w.c.opts.Loader.SaveCaches()
	}
}

// Trigger asks every controller that watches the repository url or the
// image for an immediate pass, and returns how many were asked.
func (r *Runner) Trigger(url, image string) int {
	n := 0
	for _, w := range r.workers {
		if w.c.Watches(url, image) {
			select {
			case w.trigger <- struct{}{}:
			default: // a pass is already pending
			}
			n++
		}
	}
	return n
}

// triggerOthers asks for a pass of every worker but w that watches url.
func (r *Runner) triggerOthers(w *worker, url string) {
	for _, o := range r.workers {
		if o != w && o.c.Watches(url, "") {
			select {
			case o.trigger <- struct{}{}:
			default:
			}
		}
	}
}

// Ready is nil when the last pass of every repository did its work, and
// otherwise says which repositories are not ready and why (what /readyz
// answers): before the first pass, after a failed pass, and while the
// configuration has problems.
func (r *Runner) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	health := make([]pass.RepositoryHealth, 0, len(r.workers))
	for _, w := range r.workers {
		if r.only == nil || r.only(w.c) {
			health = append(health, w.health)
		}
	}
	return pass.Readiness(health)
}

func (r *Runner) work(ctx context.Context, w *worker) {
	log := r.log.WithValues("repository", w.c.Name(), "branch", w.c.opts.Branch)
	backoff := failedPassBackoff(r.interval)
	for {
		delay := wait.Jitter(r.interval, pollJitter)
		// A host that accepts and never answers must not hold the worker:
		// a pass cut short is a failed pass, retried with backoff (a
		// promotion write cut off stays InProgress and is retried too).
		passCtx, cancelPass := context.WithTimeout(ctx, passTimeout(r.interval))
		res, err := w.c.Pass(passCtx)
		cancelPass()
		if ctx.Err() != nil {
			return
		}
		problem := pass.PassProblem(res.Problems, err)
		r.mu.Lock()
		was := w.health
		w.health.Passed, w.health.Problem = true, problem
		r.mu.Unlock()
		if problem != "" && err == nil && problem != was.Problem {
			log.Error(errors.New(problem), "repository not ready")
		} else if problem == "" && was.Problem != "" {
			log.Info("repository ready again")
		}
		switch {
		case err != nil:
			delay = backoff.Step()
			log.Error(err, "pass failed", "retryIn", delay.String())
		default:
			backoff = failedPassBackoff(r.interval)
			if res.Changed() {
				delay = 0 // follow the change: the next stage may drift now
			} else if res.RequeueAfter > 0 && res.RequeueAfter < delay {
				delay = res.RequeueAfter
			}
			// Stages are shared across config repositories through their
			// landscapes: whoever sources from a stage this pass wrote looks
			// again now, not at its next poll.
			for _, url := range res.Written {
				r.triggerOthers(w, url)
			}
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-w.trigger:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// passTimeout bounds one pass: ten intervals, at least 2s (fetches of a
// large repository) and at most 5 minutes (the execution deadline).
func passTimeout(interval time.Duration) time.Duration {
	return min(max(10*interval, 2*time.Second), 5*time.Minute)
}

// pollJitter adds up to 10% to the interval, so many repositories polled
// on the same interval do not fetch in lockstep.
const pollJitter = 0.1

// failedPassBackoff spaces the passes after a failed one: 1s, doubling up
// to the interval (at least 1s); a pass that works starts it over.
func failedPassBackoff(interval time.Duration) wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Cap: max(interval, time.Second), Steps: math.MaxInt32}
}
