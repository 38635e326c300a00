package reconcilers

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
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
