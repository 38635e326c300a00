package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/controller"
	"github.com/vectorflow-dev/vectorflow/reconcilers"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass"
	"github.com/vectorflow-dev/vectorflow/reconcilers/pass/passtest"
	"github.com/vectorflow-dev/vectorflow/reconcilers/trust"
)

// TestFedReaderTakesTheControllersMemory: a reader fed by the controller
// of its process starts from what the controller remembered of the state
// branch in the cache directory, so its first feed decodes no file that
// memory answers; without a memory it decodes them all. Either way it
// shows what the files decode to.
func TestFedReaderTakesTheControllersMemory(t *testing.T) {
	spec := passtest.DefaultSnapshotSpec()
	spec.DevVector = "acme:v1"
	snap := spec.Build()
	decided := pass.Decide(pass.Inputs{Snapshot: snap, State: reconcilers.NewState()}, passtest.T0).State
	files, err := reconcilers.EncodeState(decided)
	if err != nil {
		t.Fatal(err)
	}
	want, errs := reconcilers.DecodeState(files)
	if len(errs) > 0 || len(want.Configs) == 0 {
		t.Fatalf("the fixture's state decodes to %d configs, errors %v", len(want.Configs), errs)
	}
	tip := plumbing.NewHash(strings.Repeat("ab", 20))
	const url = "https://git.example.com/acme.git"

	for _, remembered := range []bool{false, true} {
		cache := t.TempDir()
		if remembered {
			codec := reconcilers.NewCodec()
			if _, errs := codec.Decode(files); len(errs) > 0 {
				t.Fatal(errs)
			}
			if err := controller.ExportStateMemo(codec, controller.StateMemoFile(cache, url, controller.DefaultStateBranch)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := NewReader(ReaderOptions{ID: "acme", URL: url, Branch: "main", ConfigPath: "vectorflow", CacheDir: cache,
			FedWithin: time.Hour, Log: logr.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go r.Run(ctx, time.Hour)
		r.Observe(controller.Observed{Repository: url, Branch: "main", Snapshot: snap,
			StateBranch: &controller.ObservedState{Tip: tip, Files: files, Verdict: trust.CommitVerdict{Trusted: true}}})
		deadline := time.Now().Add(30 * time.Second)
		for r.Snapshot().State.Tip != tip {
			if time.Now().After(deadline) {
				t.Fatalf("remembered %v: the feed was not shown: %+v", remembered, r.Snapshot())
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		r.mu.Lock()
		decodedAny := r.codec.Changed()
		r.mu.Unlock()
		if decodedAny == remembered {
			t.Errorf("remembered %v: the reader decoded files: %v", remembered, decodedAny)
		}
		if diff := cmp.Diff(want, r.Snapshot().State.State); diff != "" {
			t.Errorf("remembered %v: the reader shows another state than the files hold (-files +shown):\n%s", remembered, diff)
		}
	}
}
