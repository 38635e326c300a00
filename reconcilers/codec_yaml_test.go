package reconcilers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
)

// trickyStrings are scalars YAML writes with care: words it reads as
// booleans or null, numbers and times as strings, indicators, line breaks,
// escapes, long lines and keys, non-ASCII.
var trickyStrings = []string{
	"", " ", "yes", "No", "on", "OFF", "y", "n", "~", "null", "Null", "true", "False",
	"0", "-0", "007", "0x1F", "0o17", "0b101", "-0b101", "1_000", "1e3", "1.5", ".5", "-.inf", ".NaN", "+1",
	"9223372036854775807", "9223372036854775808", "18446744073709551616", "-9223372036854775809",
	"2026-01-01", "2026-01-01T00:00:00Z", "12:30:45", "1:20",
	"a: b", "a #b", "#c", "- x", "? q", "|", ">", "!tag", "&anchor", "*alias", "@", "`", "%", "<<", "{}", "[]", ",",
	"'", "\"", "\\", "line\nbreak", "trailing\n", "\ttab", " lead", "trail ", "\x00nul", "\x7f", "\u0085",
	"\u2028", "\u2029", "\ufeffbom", "é", "日本語", "🙂", "\xff\xfe invalid utf-8",
	strings.Repeat("long ", 200), strings.Repeat("x", 600),
	"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n",
}

// TestMarshalYAMLIsSigsYAML: the state's encoder writes every object byte
// for byte as sigs.k8s.io/yaml.Marshal did, so no state file changes with
// the faster encoder: random objects of every kind, with random and
// tricky strings, keys and numbers.
//
// The objects are the same on every run. The YAML writer's order of
// mapping keys is not a total order: it compares digit runs from where
// two keys first differ, in an int64 that wraps, so "9223372036854775807"
// < "9223372036854775808" < "'" < "9223372036854775807". A map holding
// such keys is written in an order that depends on Go's map order, by
// sigs.k8s.io/yaml as by this encoder, and randomly seeded objects met
// one in a few runs of the package.
func TestMarshalYAMLIsSigsYAML(t *testing.T) {
	rnd := rand.New(rand.NewPCG(32, 17))
	filler := randfill.NewWithSeed(32).NilChance(0.2).NumElements(0, 3).MaxDepth(8).Funcs(
		func(s *string, c randfill.Continue) {
			if c.Bool() {
				*s = trickyStrings[rnd.IntN(len(trickyStrings))]
				return
			}
			*s = c.String(0)
		},
		func(n *int64, c randfill.Continue) {
			*n = []int64{0, 1, -1, 1 << 53, -(1 << 62), int64(c.Uint64())}[rnd.IntN(6)]
		},
		func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.Unix(c.Int63n(1<<34), 0)
		},
	)
	objects := func() []any {
		var (
			v   v1alpha1.Vector
			p   v1alpha1.VectorPromotion
			cfg v1alpha1.VectorPromotionConfig
			tpl v1alpha1.VectorTemplate
			st  v1alpha1.Stage
			sv  v1alpha1.StageVersion
			u   v1alpha1.StageVersionUsage
			a   Approval
		)
		for _, o := range []any{&v, &p, &cfg, &tpl, &st, &sv, &u, &a} {
			filler.Fill(o)
		}
		return []any{&v, &p, &cfg, &tpl, &st, &sv, &u, &a}
	}
	for round := 0; round < 300; round++ {
		for _, o := range objects() {
			want, wantErr := yaml.Marshal(o)
			got, err := marshalYAML(o)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("%T: error %v, sigs.k8s.io/yaml's %v", o, err, wantErr)
			}
			if !bytes.Equal(want, got) {
				t.Fatalf("%T encodes differently:\nsigs.k8s.io/yaml:\n%s\nours:\n%s", o, want, got)
			}
		}
	}
}

// TestMarshalYAMLKeepsLongKeysAsSigsYAML: a mapping key as long as the
// YAML parser refuses goes the sigs.k8s.io/yaml way, whatever that does.
func TestMarshalYAMLKeepsLongKeysAsSigsYAML(t *testing.T) {
	for _, n := range []int{511, 512, 513, 1023, 1024, 2000} {
		p := &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{strings.Repeat("k", n): "v"}}}
		want, wantErr := yaml.Marshal(p)
		got, err := marshalYAML(p)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(want, got) {
			t.Errorf("key of %d bytes: got %q, %v; sigs.k8s.io/yaml %q, %v", n, got, err, want, wantErr)
		}
	}
}

// FuzzMarshalYAMLIsSigsYAML: any label key and value, approver name and
// sequence encode as sigs.k8s.io/yaml encodes them.
func FuzzMarshalYAMLIsSigsYAML(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, trickyStrings[(i+1)%len(trickyStrings)], int64(i))
	}
	f.Fuzz(func(t *testing.T, key, value string, seq int64) {
		p := &v1alpha1.VectorPromotion{
			ObjectMeta: metav1.ObjectMeta{Name: value, Labels: map[string]string{key: value}, Annotations: map[string]string{value: key}},
			Spec:       v1alpha1.VectorPromotionSpec{Sequence: seq, Vector: key},
		}
		a := &Approval{Promotion: key, ApprovedBy: value, Removes: []string{key, value}}
		for _, o := range []any{p, a} {
			want, wantErr := yaml.Marshal(o)
			got, err := marshalYAML(o)
			if (err != nil) != (wantErr != nil) || !bytes.Equal(want, got) {
				t.Fatalf("%T: got %q, %v; sigs.k8s.io/yaml %q, %v", o, got, err, want, wantErr)
			}
		}
	})
}

// TestEncodeWritesOnlyWhatChanged: a pass encodes the objects it changed;
// every other file keeps the very bytes it had, not an equal encoding.
func TestEncodeWritesOnlyWhatChanged(t *testing.T) {
	s := NewState()
	for i := 0; i < 50; i++ {
		p := promo(int64(i+1), false, succeededCond(0))
		p.Name = fmt.Sprintf("dev-to-test-%d", i+1)
		p.Spec.VectorPromotionConfigName = "dev-to-test"
		s.Promotions[p.Name] = &p
		s.Stages[StageKey("acme", fmt.Sprintf("s%d", i))] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)},
			Spec: v1alpha1.StageSpec{Landscape: "acme"}}
	}
	c := NewCodec()
	first, err := c.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	read, errs := c.Decode(first)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	changed := PromotionPath("dev-to-test", "dev-to-test-7")
	read.Promotions["dev-to-test-7"].Status.Commit = "abc"
	second, err := c.Encode(read)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != len(first) {
		t.Fatalf("%d files, want %d", len(second), len(first))
	}
	for p, data := range second {
		same := &data[0] == &first[p][0]
		if p == changed {
			if same || bytes.Equal(data, first[p]) {
				t.Errorf("%s changed but kept its bytes", p)
			}
			continue
		}
		if !same {
			t.Errorf("%s did not change but was encoded again", p)
		}
	}
	want, err := EncodeState(read)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, second); diff != "" {
		t.Errorf("the codec's files differ from a fresh encoding (-want +got):\n%s", diff)
	}
}

// TestEncodeRemembersAnEqualEncoding: an object that differs from what its
// file decodes to only in what the file does not hold (a time's zone) is
// encoded once, found to give the same bytes, and not encoded again on the
// next pass.
func TestEncodeRemembersAnEqualEncoding(t *testing.T) {
	p := promo(1, false, succeededCond(0))
	at := p.Status.Conditions[0].LastTransitionTime.Time
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at.In(time.FixedZone("CEST", 2*3600)))
	s := NewState()
	s.Promotions[p.Name] = &p
	files, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCodec()
	if _, errs := c.Decode(files); len(errs) > 0 {
		t.Fatal(errs)
	}
	for pass := 1; pass <= 3; pass++ {
		before := c.encodes
		got, err := c.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(files, got); diff != "" {
			t.Fatalf("pass %d: files differ (-decoded +encoded):\n%s", pass, diff)
		}
		want := 0
		if pass == 1 {
			want = 1
		}
		if n := c.encodes - before; n != want {
			t.Errorf("pass %d encoded %d objects, want %d", pass, n, want)
		}
	}
}

// TestStampedTimesReadBackEqual: a time a decision stamps is exactly what a
// read of the state branch gives back, so a fresh process that decides the
// same again (an unchanged `run --once`) encodes nothing anew. A stamp in
// another zone than the decoder's was encoded again once per process for
// every stamped object: 200 objects at 1,000 stages.
func TestStampedTimesReadBackEqual(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
	since := Stamp(now)
	s := NewState()
	s.Configs["dev-to-test"] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{
		SourceVector: "acme:2026.12.1-100000000Z", SourceVectorSince: &since}}
	SetCondition(&s.Configs["dev-to-test"].Status.Conditions, metav1.Condition{Type: v1alpha1.DriftCondition,
		Status: metav1.ConditionFalse, Reason: "InSync"}, now)
	files, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCodec() // a fresh process's
	read, errs := c.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !reflect.DeepEqual(read.Configs["dev-to-test"].Status, s.Configs["dev-to-test"].Status) {
		t.Errorf("a stamped status reads back different:\nstamped %#v\nread    %#v", s.Configs["dev-to-test"].Status, read.Configs["dev-to-test"].Status)
	}
	before := c.encodes
	if _, err := c.Encode(s); err != nil {
		t.Fatal(err)
	}
	if n := c.encodes - before; n != 0 {
		t.Errorf("the same decision over the state read back encoded %d objects, want 0", n)
	}
}

// TestEncodeCopiesNothingUnchanged: encoding a state read back, nothing
// changed, copies none of its objects to compare them (a copy per object
// of a large state branch cost more than the comparison), and a change
// made afterwards to the state does not reach what the codec remembers.
func TestEncodeCopiesNothingUnchanged(t *testing.T) {
	s := NewState()
	const n = 300
	for i := range n {
		p := promo(int64(i+1), true, succeededCond(0), approvedCond())
		s.Promotions[p.Name] = &p
		name := fmt.Sprintf("c%d", i)
		s.Configs[name] = &v1alpha1.VectorPromotionConfig{Status: v1alpha1.VectorPromotionConfigStatus{Sequence: int64(i),
			Conditions: []metav1.Condition{succeededCond(0)}}}
	}
	files, err := EncodeState(s)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCodec()
	read, errs := c.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Bytes, not allocations: reflect.DeepEqual allocates a little per
	// comparison; a copy allocates the object.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := c.Encode(read)
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != len(files) {
		t.Fatalf("encode: %v, %d files, want %d", err, len(got), len(files))
	}
	if perObject := (after.TotalAlloc - before.TotalAlloc) / (2 * n); perObject > 800 {
		t.Errorf("encoding %d unchanged objects allocated %d bytes each: it copies them", 2*n, perObject)
	}
	// The codec keeps copies of its own: a later change to the state is a
	// change, not what it remembers.
	p := read.Promotions["dev-to-test-1"]
	p.Status.Conditions[0].Message = "changed in place"
	got, err = c.Encode(read)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got[PromotionPath("dev-to-test", "dev-to-test-1")], files[PromotionPath("dev-to-test", "dev-to-test-1")]) {
		t.Error("a promotion changed in place after a pass encodes as before: the codec shares the state's object")
	}
	// Nor does a stage's spec, once a changed stage was encoded.
	revisions := int32(5)
	read.Stages["test/test"] = &v1alpha1.Stage{ObjectMeta: metav1.ObjectMeta{Name: "test"},
		Spec: v1alpha1.StageSpec{Landscape: "test", MaxRevisions: &revisions}}
	first, err := c.Encode(read)
	if err != nil {
		t.Fatal(err)
	}
	revisions = 7
	second, err := c.Encode(read)
	if err != nil {
		t.Fatal(err)
	}
	if stage := path.Join(StagesDir, "test", "test.yaml"); bytes.Equal(first[stage], second[stage]) {
		t.Errorf("a stage's maxRevisions changed in place encodes as before: the codec shares the state's spec:\n%s", second[stage])
	}
}

// TestSharingCodec: a sharing codec's Decode hands out the objects it
// remembers (the same ones pass after pass), Encode of them writes nothing
// new, and in a test binary the next Decode panics, naming the file, when a
// caller changed one.
func TestSharingCodec(t *testing.T) {
	files := map[string][]byte{
		"stages/dev/dev.yaml":      []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: Stage\nmetadata: {name: dev}\nspec: {landscape: dev, path: apps/dev}\nstatus: {vector: \"app:1\"}\n"),
		"configs/dev-to-test.yaml": []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata: {name: dev-to-test}\nstatus: {sequence: 2}\n"),
	}
	c := NewSharingCodec()
	c.pristine = map[string]pristineObject{} // checked under go test -bench too
	first, errs := c.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	second, _ := c.Decode(files)
	if first.Stages["dev/dev"] != second.Stages["dev/dev"] || first.Configs["dev-to-test"] != second.Configs["dev-to-test"] {
		t.Error("two decodes of the same files handed out different objects")
	}
	if _, err := c.Encode(second); err != nil {
		t.Fatal(err)
	}
	if c.encodes != 0 {
		t.Errorf("encoding the state as decoded encoded %d objects, want none", c.encodes)
	}

	second.Stages["dev/dev"].Status.Vector = "app:forged"
	var panicked string
	func() {
		defer func() { panicked = fmt.Sprint(recover()) }()
		c.Decode(files)
	}()
	if !strings.Contains(panicked, "stages/dev/dev.yaml was changed after Decode handed it out") {
		t.Fatalf("a decode after a caller changed a stage: panic %q, want one naming stages/dev/dev.yaml", panicked)
	}
}

// TestSharingCodecKnowsAHandedOutConfigUnchanged: a config object the codec
// handed out, given back to Encode, keeps its file when it is its own view
// (what Encode writes of a config: kind, name, status); a file holding more
// (a label) is written as that view, as any other object's would be.
func TestSharingCodecKnowsAHandedOutConfigUnchanged(t *testing.T) {
	plain := []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata: {name: dev-to-test}\nstatus: {sequence: 2}\n")
	labelled := []byte("apiVersion: vectorflow.dev/v1alpha1\nkind: VectorPromotionConfig\nmetadata: {name: test-to-prod, labels: {team: a}}\nstatus: {sequence: 3}\n")
	files := map[string][]byte{"configs/dev-to-test.yaml": plain, "configs/test-to-prod.yaml": labelled}
	c := NewSharingCodec()
	state, errs := c.Decode(files)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for range 2 { // the second Encode finds the verdict remembered
		out, err := c.Encode(state)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out["configs/dev-to-test.yaml"], plain) {
			t.Errorf("the unchanged config's file is rewritten:\n%s", out["configs/dev-to-test.yaml"])
		}
		if bytes.Contains(out["configs/test-to-prod.yaml"], []byte("team")) {
			t.Errorf("the labelled config's file keeps what Encode does not write:\n%s", out["configs/test-to-prod.yaml"])
		}
	}
	if e := c.known["configs/dev-to-test.yaml"]; !e.viewChecked || !e.isView {
		t.Errorf("the plain config was not found to be its own view: %+v", e)
	}
}
