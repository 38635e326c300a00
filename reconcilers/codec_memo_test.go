package reconcilers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/cachefile"
)

// TestCodecMemoAcrossProcesses: a codec given another's export decodes
// only the files whose bytes changed, and reads exactly what a fresh
// decode reads; a bad approval (whose problem JSON cannot carry) and
// garbage data are decoded as usual.
func TestCodecMemoAcrossProcesses(t *testing.T) {
	files := map[string][]byte{
		"approvals/latest-to-dev-1/alice.yaml": []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Approval\npromotion: latest-to-dev-1\nvector: app:1\napprovedBy: alice\napprovedAt: \"2026-01-01T00:00:00Z\"\n"),
		"approvals/latest-to-dev-1/bad.yaml":   []byte("kind: Approval\npromotion: \"\"\n"),
		"promotions/latest-to-dev/1.yaml":      []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotion\nmetadata: {name: latest-to-dev-1}\nspec: {sequence: 1}\nstatus:\n  conditions:\n  - type: Approved\n    status: \"True\"\n    reason: Approved\n    message: ok\n    lastTransitionTime: \"2026-01-01T00:00:00Z\"\n"),
		"vectors/app/1.yaml":                   []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-1}\n"),
	}
	first := NewCodec()
	want, errs := first.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !first.Changed() {
		t.Fatal("a fresh codec decoded nothing")
	}
	memo, err := first.Export()
	if err != nil {
		t.Fatal(err)
	}

	second := NewCodec()
	second.Import(memo)
	got, errs := second.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state from the memory (-decoded +remembered):\n%s", diff)
	}
	// Only the bad approval was decoded again.
	good := map[string][]byte{}
	for k, v := range files {
		if k != "approvals/latest-to-dev-1/bad.yaml" {
			good[k] = v
		}
	}
	fresh := NewCodec()
	fresh.Import(memo)
	if _, errs := fresh.Decode(good); len(errs) > 0 || fresh.Changed() {
		t.Errorf("files whose bytes the memory holds were decoded again (errors %v)", errs)
	}

	changed := map[string][]byte{}
	for k, v := range files {
		changed[k] = v
	}
	changed["vectors/app/1.yaml"] = []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-2}\n")
	third := NewCodec()
	third.Import(memo)
	got, _ = third.Decode(changed)
	wantChanged, _ := NewCodec().Decode(changed)
	if diff := cmp.Diff(wantChanged, got); diff != "" {
		t.Errorf("state after a file changed (-decoded +remembered):\n%s", diff)
	}

	garbage := NewCodec()
	garbage.Import([]byte("not a memo"))
	if got, _ := garbage.Decode(files); !cmp.Equal(want, got) {
		t.Error("a codec given garbage reads another state")
	}
	for _, cut := range []int{1, len(memo) / 2} {
		short := NewCodec()
		short.Import(memo[:len(memo)-cut])
		if len(short.known) != 0 {
			t.Errorf("a memo cut %d bytes short gave %d entries, want none", cut, len(short.known))
		}
	}
}

// TestCodecMemoHoldsEncodedFiles: files a codec wrote (Encode) are
// exported as what they decode to, so the next process decodes none of
// them.
func TestCodecMemoHoldsEncodedFiles(t *testing.T) {
	state, errs := NewCodec().Decode(map[string][]byte{
		"vectors/app/1.yaml": []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-1}\n"),
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	writer := NewCodec()
	files, err := writer.Encode(state)
	if err != nil {
		t.Fatal(err)
	}
	memo, err := writer.Export()
	if err != nil {
		t.Fatal(err)
	}
	reader := NewCodec()
	reader.Import(memo)
	got, errs := reader.Decode(files)
	if len(errs) > 0 || reader.Changed() {
		t.Errorf("the files the writer encoded were decoded again (errors %v)", errs)
	}
	want, _ := NewCodec().Decode(files)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-decoded +remembered):\n%s", diff)
	}
}

// TestCodecMemoExportsOnlyWhatChanged: an Export after a pass that changed
// one file checks only that file's object, and exports what a codec that
// never exported would; an imported memory is not checked again either.
func TestCodecMemoExportsOnlyWhatChanged(t *testing.T) {
	files := map[string][]byte{}
	for i := range 20 {
		version := fmt.Sprintf("2026.1.%d", i)
		files[VectorPath("app", version)] = fmt.Appendf(nil, "apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-%d}\nspec: {template: app, version: %q}\n", i, version)
	}
	c := NewCodec()
	state, errs := c.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := c.Export(); err != nil {
		t.Fatal(err)
	}
	if len(state.Vectors) != 20 {
		t.Fatalf("%d vectors decoded, want 20", len(state.Vectors))
	}
	state.Vectors[slices.Sorted(maps.Keys(state.Vectors))[3]].Labels = map[string]string{"changed": "yes"}
	if _, err := c.Encode(state); err != nil {
		t.Fatal(err)
	}
	before := c.exportChecks
	memo, err := c.Export()
	if err != nil {
		t.Fatal(err)
	}
	if n := c.exportChecks - before; n != 1 {
		t.Errorf("the export after one file changed checked %d objects, want 1", n)
	}
	fresh := NewCodec()
	fresh.known = maps.Clone(c.known)
	want, err := fresh.Export()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, memo) {
		t.Error("the export differs from a codec's that checked every object")
	}

	imported := NewCodec()
	imported.Import(memo)
	imported.changed = true
	before = imported.exportChecks
	again, err := imported.Export()
	if err != nil {
		t.Fatal(err)
	}
	if n := imported.exportChecks - before; n != 0 || !bytes.Equal(again, memo) {
		t.Errorf("an imported memory exported again: %d objects checked (want 0), same bytes %v", n, bytes.Equal(again, memo))
	}
}

// TestCodecMemoCountsStaleFiles: Stale counts what a restart would decode
// itself (files changed, added or gone since the last Export or Import),
// and nothing once exported again.
func TestCodecMemoCountsStaleFiles(t *testing.T) {
	vector := func(i int, label string) []byte {
		return fmt.Appendf(nil, "apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-%d, labels: {l: %q}}\nspec: {template: app, version: \"2026.1.%d\"}\n", i, label, i)
	}
	files := map[string][]byte{}
	for i := range 10 {
		files[VectorPath("app", fmt.Sprintf("2026.1.%d", i))] = vector(i, "a")
	}
	c := NewCodec()
	if _, errs := c.Decode(files); len(errs) > 0 {
		t.Fatal(errs)
	}
	if stale, all := c.Stale(); stale != 10 || all != 10 {
		t.Errorf("nothing exported yet: %d of %d files stale, want 10 of 10", stale, all)
	}
	memo, err := c.Export()
	if err != nil {
		t.Fatal(err)
	}
	if stale, _ := c.Stale(); stale != 0 {
		t.Errorf("just exported: %d files stale, want 0", stale)
	}

	restarted := NewCodec()
	restarted.Import(memo)
	changed := maps.Clone(files)
	changed[VectorPath("app", "2026.1.1")] = vector(1, "b")   // changed
	delete(changed, VectorPath("app", "2026.1.2"))            // gone
	changed[VectorPath("app", "2026.1.10")] = vector(10, "a") // added
	if _, errs := restarted.Decode(changed); len(errs) > 0 {
		t.Fatal(errs)
	}
	if stale, all := restarted.Stale(); stale != 3 || all != 10 {
		t.Errorf("one file changed, one gone, one added since the import: %d of %d stale, want 3 of 10", stale, all)
	}
	if _, err := restarted.Export(); err != nil {
		t.Fatal(err)
	}
	if stale, _ := restarted.Stale(); stale != 0 {
		t.Errorf("exported again: %d files stale, want 0", stale)
	}
}

// FuzzMemoDecodesAsEncodingJSON: what Export writes (encoding/json's
// Marshal of a decoded state file) reads back through the memory's decoder
// (cachefile.Unmarshal) exactly as through encoding/json's Unmarshal, for
// state files of every kind with times, conditions, maps, pointers and
// odd strings. Export checks each object it writes anyway; this is why
// that check nearly never leaves one out.
func FuzzMemoDecodesAsEncodingJSON(f *testing.F) {
	dirs := []string{ApprovalsDir, PromotionsDir, VectorsDir, ConfigsDir, StagesDir, StageVersionsDir, UsagesDir, TemplatesDir}
	seeds := []string{
		"apiVersion: vectorflow.dev/v1alpha1\nkind: Approval\npromotion: latest-to-dev-1\nvector: app:1\napprovedBy: alice\napprovedAt: \"2026-01-01T00:00:00.123456789+02:00\"\nremoves: [Secret/a, \"\"]\n",
		"apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotion\nmetadata:\n  labels: {vectorflow.dev/config: a-to-b, \"x\": \"\\u00e9\\t<&>\"}\n  name: a-to-b-1\n  ownerReferences: [{apiVersion: vectorflow.dev/v1alpha1, controller: true, kind: VectorPromotionConfig, name: a-to-b, uid: \"\"}]\nspec:\n  requireApproval: true\n  sequence: 1\n  source: {kind: Stage, landscape: apps, name: a}\n  target: {kind: Stage, landscape: apps, name: b}\n  ttlAfterFinished: 24h0m0s\n  vector: app:2026.12.2-161330990Z\n  vectorPromotionConfigName: a-to-b\nstatus:\n  conditions:\n  - {lastTransitionTime: \"2026-12-02T16:13:33Z\", message: waiting, reason: WaitingForApproval, status: \"False\", type: Approved, observedGeneration: 2}\n  state: Waiting\n",
		"apiVersion: vectorflow.dev/v1alpha1\nkind: Vector\nmetadata: {name: app-1, creationTimestamp: null}\nspec:\n  components:\n  - {name: registry.example.com/app, tag: 1.0.0, digest: \"sha256:e22f2d37761b83dfffcb16517f744b2b1e3b58516a33369e6d5737c81230de02\"}\n  - {name: registry.example.com/worker, tag: \"\"}\n  digest: sha256:e22f2d37761b83dfffcb16517f744b2b1e3b58516a33369e6d5737c81230de02\n  template: app\n  version: 2026.12.2-161330990Z\n",
		"apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata: {name: a-to-b}\nspec:\n  source: {kind: \"\", name: \"\"}\n  target: {kind: \"\", landscape: \"\", name: \"\"}\nstatus:\n  conditions:\n  - {lastTransitionTime: \"2026-12-02T16:13:30Z\", message: resolve, reason: Resolved, status: \"True\", type: Ready}\n  sequence: 2\n  sourceVector: app:2026.12.2-161336718Z\n  sourceVectorSince: \"2026-12-02T16:13:36Z\"\n",
		"apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata: {name: a}\nspec: {landscape: apps, path: apps/overlays/a}\nstatus:\n  activeRevision: ca78ac1beff5af9ea4fead90aeaaecedb1130328\n  activeSince: \"2026-12-02T16:13:36Z\"\n  activeVector: app:1\n  commit: ca78ac1beff5af9ea4fead90aeaaecedb1130328\n  conditions: []\n  vector: app:1\n  vectorSince: \"2026-12-02T16:13:36Z\"\n",
		"apiVersion: vectorflow.dev/v1alpha1\nkind: StageVersion\nmetadata:\n  creationTimestamp: \"2026-12-02T16:13:33Z\"\n  labels: {vectorflow.dev/stage-name: a}\n  name: a-463596d464\n  ownerReferences: [{apiVersion: vectorflow.dev/v1alpha1, kind: Stage, name: a, uid: \"\"}]\nspec:\n  commit: 4366d6ca88dbcce8045d2d5971da55b237f460f7\n  inventory: [{group: apps, kind: Deployment, name: app, namespace: a}]\n  landscape: apps\n  renderDigest: sha256:4210b653c4c1585c08bfc72b0f42d641847a73ab9146897b3024ec7cb6873b99\n  stage: a\n  vector: app:1\nstatus:\n  conditions: [{lastTransitionTime: \"2026-12-02T16:13:33Z\", message: m, reason: NoDeployment, status: \"True\", type: Ready}]\n  revision: 216e169bd2a78695e54d445a72720e1be86e40b0\n",
		"apiVersion: vectorflow.dev/v1alpha1\nkind: StageVersionUsage\nmetadata:\n  labels: {vectorflow.dev/stage-name: a}\n  name: apps.a.active\n  ownerReferences: [{apiVersion: vectorflow.dev/v1alpha1, kind: Stage, name: a, uid: \"\"}]\nspec:\n  reason: active\n  stageVersionRef: {name: a-463596d464}\n",
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, dir uint8, data []byte) {
		name := dirs[int(dir)%len(dirs)] + "/x/y.yaml"
		obj, err := decodeFile(name, data)
		if err != nil || obj == nil {
			return
		}
		written, err := json.Marshal(obj.value())
		if err != nil {
			return
		}
		std, fast := newRuntimeObject(name), newRuntimeObject(name)
		stdErr := json.Unmarshal(written, std.value())
		fastErr := cachefile.Unmarshal(written, fast.value())
		if (stdErr == nil) != (fastErr == nil) {
			t.Fatalf("encoding/json: %v, the memory's decoder: %v, for %s", stdErr, fastErr, written)
		}
		if !reflect.DeepEqual(std, fast) {
			t.Fatalf("decoded apart from %s:\n%s", written, cmp.Diff(std, fast))
		}
	})
}
