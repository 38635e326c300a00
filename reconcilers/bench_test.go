package reconcilers

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// BenchmarkReconcileConfigs decides 200 configs with 1,000 promotions in total
// when nothing changed: the steady-state cost of a reconcile pass.
func BenchmarkReconcileConfigs(b *testing.B) {
	inputs := steadyConfigs(b, 200, 5)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range inputs {
			if plan := ReconcileConfig(inputs[i], at(time.Hour)); plan.Changed() {
				b.Fatalf("config %d: steady state changed", i)
			}
		}
	}
}

// steadyConfigs builds n configs with per promotions each, in every state,
// already reconciled once so that the next pass changes nothing.
func steadyConfigs(tb testing.TB, n, per int) []ConfigInput {
	inputs := make([]ConfigInput, n)
	for c := range inputs {
		w := newWorld(devSource, "", "")
		w.in.Config.Name = fmt.Sprintf("config-%d", c)
		for seq := int64(1); seq <= int64(per); seq++ {
			var p v1alpha1.VectorPromotion
			switch {
			case seq == int64(per):
				p = promo(seq, true, waitingCond())
			case seq%3 == 0:
				p = promo(seq, true, approvedCond(), failedCond(0))
			case seq%3 == 1:
				p = promo(seq, true, waitingCond(), supersededCond(0))
			default:
				p = promo(seq, true, approvedCond(), succeededCond(0))
			}
			p.Name = fmt.Sprintf("config-%d-%d", c, seq)
			p.Spec.VectorPromotionConfigName = w.in.Config.Name
			w.in.Promotions = append(w.in.Promotions, p)
		}
		w.in.Config.Status.Sequence = int64(per)
		w.in.Source.Vector = w.in.Promotions[per-1].Spec.Vector
		w.in.TargetVector = w.in.Promotions[per-2].Spec.Vector
		w.apply(ReconcileConfig(w.in, at(time.Hour)))
		if plan := ReconcileConfig(w.in, at(time.Hour)); plan.Changed() {
			tb.Fatalf("config %d is not steady: %v", c, transitionStrings(plan.Transitions))
		}
		inputs[c] = w.in
	}
	return inputs
}

// BenchmarkCodecMemoImport reads back the memory of 10,000 state files, as
// a restarted run --once does before its first decode.
func BenchmarkCodecMemoImport(b *testing.B) {
	files := map[string][]byte{}
	for i := range 10_000 {
		version := fmt.Sprintf("2026.1.%d", i)
		files[VectorPath(fmt.Sprintf("app%d", i%1000), version)] = fmt.Appendf(nil, `apiVersion: vectorflow.dev/v1alpha1
kind: Vector
metadata: {name: app-%d, labels: {vectorflow.dev/template: app}}
spec:
  template: app
  version: %q
  components:
    - {name: registry.example.com/app/api, tag: "1.%d.0", digest: "sha256:%064d"}
    - {name: registry.example.com/app/worker, tag: "2.%d.0", digest: "sha256:%064d"}
  digest: "sha256:%064d"
`, i, version, i, i, i, i, i)
	}
	memo := memoOf(b, files)
	b.SetBytes(int64(len(memo)))
	b.ReportAllocs()
	for b.Loop() {
		fresh := NewCodec()
		fresh.Import(memo)
		if len(fresh.known) != len(files) {
			b.Fatalf("imported %d files, want %d", len(fresh.known), len(files))
		}
	}
}

// BenchmarkCodecFirstDecode is a process's first decode of 10,000 state
// files: by a fresh codec, and by one that imported an earlier process's
// memory of them first (what a controller and the web view's reader do);
// "again" is a later decode of the same files.
func BenchmarkCodecFirstDecode(b *testing.B) {
	files := stageFiles(10_000)
	memo := memoOf(b, files)
	// again: what every later pass pays, the files known already; shared:
	// the same with the objects handed out to be read only.
	b.Run("again", func(b *testing.B) { benchmarkDecodeAgain(b, NewCodec(), memo, files) })
	b.Run("again-shared", func(b *testing.B) { benchmarkDecodeAgain(b, NewSharingCodec(), memo, files) })
	for _, imported := range []bool{false, true} {
		b.Run(map[bool]string{false: "fresh", true: "imported"}[imported], func(b *testing.B) {
			for b.Loop() {
				fresh := NewCodec()
				if imported {
					fresh.Import(memo)
				}
				if _, errs := fresh.Decode(files); len(errs) > 0 {
					b.Fatal(errs[0])
				}
				if fresh.Changed() == imported {
					b.Fatalf("imported %v, decoded files %v", imported, fresh.Changed())
				}
			}
		})
	}
}

// BenchmarkCodecMemoExport checks and writes the memory of 10,000 state
// files the codec encoded and never exported, as a run --once that
// promoted every stage does when it settles.
func BenchmarkCodecMemoExport(b *testing.B) {
	files := stageFiles(10_000)
	state, errs := NewCodec().Decode(files)
	if len(errs) > 0 {
		b.Fatal(errs[0])
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := NewCodec()
		if _, err := c.Encode(state); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := c.Export(); err != nil || c.exportChecks != len(files) {
			b.Fatalf("export checked %d of %d files: %v", c.exportChecks, len(files), err)
		}
	}
}

// memoOf is what a codec that decoded files remembers of them (Export).
func memoOf(b *testing.B, files map[string][]byte) []byte {
	b.Helper()
	c := NewCodec()
	if _, errs := c.Decode(files); len(errs) > 0 {
		b.Fatal(errs[0])
	}
	memo, err := c.Export()
	if err != nil {
		b.Fatal(err)
	}
	return memo
}

func benchmarkDecodeAgain(b *testing.B, c *Codec, memo []byte, files map[string][]byte) {
	c.Import(memo)
	if _, errs := c.Decode(files); len(errs) > 0 {
		b.Fatal(errs[0])
	}
	for b.Loop() {
		if s, errs := c.Decode(files); len(errs) > 0 || len(s.Stages) != len(files) {
			b.Fatalf("decoded %d stages of %d files: %v", len(s.Stages), len(files), errs)
		}
	}
}

// BenchmarkCodecEncodeUnchangedConfigs encodes a state of 10,000 config
// statuses none of which changed, as a pass that promotes nothing does:
// with the objects the sharing codec handed out (Decide keeps an
// unchanged config's), or with copies, each compared field by field.
func BenchmarkCodecEncodeUnchangedConfigs(b *testing.B) {
	files := map[string][]byte{}
	for i := range 10_000 {
		files[path.Join(ConfigsDir, fmt.Sprintf("s%05d-to-s%05d.yaml", i, i+1))] = fmt.Appendf(nil, `apiVersion: vectorflow.dev/v1alpha1
kind: VectorPromotionConfig
metadata: {name: s%05d-to-s%05d}
status:
  sequence: 3
  sourceVector: "app:2026.1.%d"
  sourceVectorSince: "2026-11-29T10:00:00Z"
  conditions:
    - {type: Ready, status: "True", reason: Resolved, message: "source and target resolve", lastTransitionTime: "2026-11-29T10:00:00Z"}
    - {type: Drift, status: "False", reason: InSync, message: "the target runs the source's vector", lastTransitionTime: "2026-11-29T10:00:00Z"}
`, i, i+1, i)
	}
	benchmarkEncodeUnchanged(b, files, func(state *State) {
		for name, cfg := range state.Configs {
			state.Configs[name] = cfg.DeepCopy()
		}
	})
}

// benchmarkEncodeUnchanged encodes the state files decode to, unchanged:
// as the codec handed it out, and with copies (copyAll replaces objects of
// the state with copies of them).
func benchmarkEncodeUnchanged(b *testing.B, files map[string][]byte, copyAll func(*State)) {
	for _, shared := range []bool{false, true} {
		b.Run(map[bool]string{false: "copies", true: "handed-out"}[shared], func(b *testing.B) {
			c := NewSharingCodec()
			state, errs := c.Decode(files)
			if len(errs) > 0 {
				b.Fatal(errs[0])
			}
			if !shared {
				copyAll(state)
			}
			for b.Loop() {
				if _, err := c.Encode(state); err != nil {
					b.Fatal(err)
				}
			}
			if c.encodes != 0 {
				b.Fatalf("encoded %d objects, want none", c.encodes)
			}
		})
	}
}

// BenchmarkCodecEncodeUnchangedStages encodes a state of 10,000 stages that
// nothing changed, as every pass's Changes does: each stage a copy
// (compared field by field with what its file decoded to), or the very
// object the codec handed out (compared by pointer), as Decide leaves an
// unchanged stage.
func BenchmarkCodecEncodeUnchangedStages(b *testing.B) {
	files := stageFiles(10_000)
	benchmarkEncodeUnchanged(b, files, func(state *State) {
		if len(state.Stages) != 10_000 {
			b.Fatalf("decoded %d stages", len(state.Stages))
		}
		for key, st := range state.Stages {
			state.Stages[key] = st.DeepCopy()
		}
	})
}

// stageFiles are n stages' files on the state branch, as a settled
// landscape of n stages writes them.
func stageFiles(n int) map[string][]byte {
	files := map[string][]byte{}
	for i := range n {
		files[path.Join(StagesDir, "apps", fmt.Sprintf("s%05d.yaml", i))] = fmt.Appendf(nil, `apiVersion: vectorflow.dev/v1alpha1
kind: Stage
metadata: {name: s%05d}
spec: {landscape: apps, path: apps/overlays/s%05d}
status:
  vector: "app:2026.1.%d"
  vectorSince: "2026-11-29T10:00:00Z"
  conditions:
    - {type: Ready, status: "True", reason: Observed, message: "runs app:2026.1.%d", lastTransitionTime: "2026-11-29T10:00:00Z"}
`, i, i, i, i)
	}
	return files
}
