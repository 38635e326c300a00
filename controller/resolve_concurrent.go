package controller

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vectorflow-dev/vectorflow/internal/keys"
	"github.com/vectorflow-dev/vectorflow/source/registry"
)

// maxRegistryQuestions bounds the registry requests in flight at once: three
// slow registries take as long as the slowest, and a template of a hundred
// components does not open a hundred connections.
const maxRegistryQuestions = 8

// slowRegistryAfter is when a question still unanswered is shown on the
// terminal, so a person watching run --once knows what it waits for.
const slowRegistryAfter = time.Second

// registryQuestion is one image and the version asked of its registry.
type registryQuestion struct {
	image string
	spec  registry.ComponentVersion
}

// askRegistries asks every question concurrently, at most
// maxRegistryQuestions at a time, and returns the answers by key. The
// Resolver shares one tag list request among questions about the same
// repository. Without a resolver every answer says no registry is configured.
func askRegistries(ctx context.Context, r Resolver, questions map[string]registryQuestion, progress io.Writer) map[string]registryAnswer {
	answers := make(map[string]registryAnswer, len(questions))
	if r == nil {
		for key := range questions {
			answers[key] = registryAnswer{err: fmt.Errorf("no registry access is configured")}
		}
		return answers
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(maxRegistryQuestions)
	for _, key := range keys.Sorted(questions) {
		q := questions[key]
		g.Go(func() error {
			done := showIfSlow(progress, &mu, q.image)
			res, err := r.Resolve(ctx, q.image, q.spec)
			done()
			mu.Lock()
			answers[key] = registryAnswer{version: res.Tag + "@" + res.Digest, err: err}
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait() // every error is an answer
	return answers
}

// showIfSlow writes a line to progress when the registry of image has not
// answered after slowRegistryAfter, and another when it answers; the
// returned func says it answered. mu serialises the lines.
func showIfSlow(progress io.Writer, mu *sync.Mutex, image string) (done func()) {
	if progress == nil {
		return func() {}
	}
	start := time.Now()
	shown := false
	timer := time.AfterFunc(slowRegistryAfter, func() {
		mu.Lock()
		defer mu.Unlock()
		shown = true
		fmt.Fprintf(progress, "registry: waiting for %s ...\n", image)
	})
	return func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		if shown {
			fmt.Fprintf(progress, "registry: %s answered after %s\n", image, time.Since(start).Round(100*time.Millisecond))
		}
	}
}
