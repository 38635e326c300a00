package controller

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/forge"
)

// TestFailedPassBackoff: after a failed pass a worker tries again in 1s,
// doubling per failure up to its interval, never below 1s.
func TestFailedPassBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		interval time.Duration
		want     []time.Duration
	}{
		{200 * time.Millisecond, []time.Duration{s, s, s, s}},
		{time.Second, []time.Duration{s, s, s, s}},
		{5 * s, []time.Duration{s, 2 * s, 4 * s, 5 * s, 5 * s}},
		{time.Minute, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 60 * s, 60 * s}},
		{time.Hour, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s, 512 * s, 1024 * s, 2048 * s, 3600 * s, 3600 * s}},
	} {
		b := failedPassBackoff(tc.interval)
		var got []time.Duration
		for range tc.want {
			got = append(got, b.Step())
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("interval %v: waits after failed passes (-want +got):\n%s", tc.interval, diff)
		}
	}
}

// TestAwaitBranchIndex: when the forge does not know a promotion branch
// (404 or 422), its pull request waits for a pass 250ms later, then 500ms,
// 1s, 2s, 4s, 4s...; 20s after the first such answer it is an error, and
// the next one starts over. Any other answer ends the wait.
func TestAwaitBranchIndex(t *testing.T) {
	notIndexed := &forge.APIError{Forge: "gitea", Op: "open pull request", Status: http.StatusNotFound, Message: "branch does not exist"}
	unprocessable := &forge.APIError{Forge: "gitea", Op: "open pull request", Status: http.StatusUnprocessableEntity}
	serverError := &forge.APIError{Forge: "gitea", Op: "open pull request", Status: http.StatusInternalServerError}
	type step struct {
		at   time.Duration // since the first answer
		err  error
		wait time.Duration // 0: not waiting
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"opened at once", []step{{0, nil, 0}}},
		{"another forge error", []step{{0, serverError, 0}, {time.Second, serverError, 0}}},
		{"another error", []step{{0, errors.New("push vectorflow/promote/p-1: EOF"), 0}}},
		{"indexed after two tries", []step{{0, notIndexed, 250 * time.Millisecond}, {300 * time.Millisecond, fmt.Errorf("wrapped: %w", notIndexed), 500 * time.Millisecond}, {time.Second, nil, 0}}},
		{"422 is not indexed either", []step{{0, unprocessable, 250 * time.Millisecond}}},
		{"never indexed", []step{
			{0, notIndexed, 250 * time.Millisecond},
			{300 * time.Millisecond, notIndexed, 500 * time.Millisecond},
			{800 * time.Millisecond, notIndexed, time.Second},
			{2 * time.Second, notIndexed, 2 * time.Second},
			{4 * time.Second, notIndexed, 4 * time.Second},
			{8 * time.Second, notIndexed, 4 * time.Second},
			{20 * time.Second, notIndexed, 4 * time.Second},
			{20*time.Second + time.Millisecond, notIndexed, 0},
			{21 * time.Second, notIndexed, 250 * time.Millisecond}, // a fresh grace
		}},
		{"a success starts over", []step{{0, notIndexed, 250 * time.Millisecond}, {time.Second, nil, 0}, {2 * time.Second, notIndexed, 250 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := start
			c := &Controller{opts: Options{Clock: func() time.Time { return now }}}
			for _, s := range tc.steps {
				now = start.Add(s.at)
				wait, ok := c.awaitBranchIndex("p-1", s.err)
				if ok != (s.wait > 0) || wait != s.wait {
					t.Errorf("at %v after %v: wait %v, %v; want %v", s.at, s.err, wait, ok, s.wait)
				}
			}
		})
	}
}
