package reconcilers

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorflow-dev/vectorflow/api/v1alpha1"
	"github.com/vectorflow-dev/vectorflow/internal/keys"
)

// TestChangesAreTheDiffOfTheEncodedState: what Changes says to write is
// exactly what comparing the whole encoded state with the branch's files
// says (StateDiff of Encode), whatever the branch holds besides the state's
// objects: files that no longer decode, YAML the state does not know, other
// files, and records people signed.
func TestChangesAreTheDiffOfTheEncodedState(t *testing.T) {
	settled, err := EncodeState(settledState(40))
	if err != nil {
		t.Fatal(err)
	}
	with := func(extra map[string]string) map[string][]byte {
		files := maps.Clone(settled)
		for p, data := range extra {
			files[p] = []byte(data)
		}
		return files
	}
	approval := "apiVersion: vectorflow.dev/v1alpha1\nkind: Approval\npromotion: to-s00001-1\nvector: app:2026.1.1\napprovedAt: \"2026-11-29T10:00:00Z\"\n"
	tests := []struct {
		name   string
		files  map[string][]byte
		change func(*State)
		want   int // files to write or remove
	}{
		{name: "nothing changed", files: with(nil), change: func(*State) {}},
		{name: "a status changed, an object added, one removed", files: with(nil), want: 3, change: func(s *State) {
			cfg := s.Configs["to-s00007"].DeepCopy()
			cfg.Status.Sequence++
			s.Configs["to-s00007"] = cfg
			p := &v1alpha1.VectorPromotion{ObjectMeta: metav1.ObjectMeta{Name: "to-s00007-4"}}
			p.Spec.VectorPromotionConfigName, p.Spec.Vector = "to-s00007", "app:2026.1.3"
			s.Promotions[p.Name] = p
			for name := range s.Usages {
				delete(s.Usages, name)
				break
			}
		}},
		{name: "what the branch holds besides the state", want: 2, change: func(*State) {},
			files: with(map[string]string{
				"configs/broken.yaml":           "status: [",
				"notes/unknown.yaml":            "kind: Note\n",
				"README.md":                     "# state\n",
				"approvals/to-s00001-1/a1.yaml": approval,
				"requests/to-s00001/r1.yaml":    "kind: PromotionRequest\n",
			})},
		{name: "only removals", files: with(nil), want: 80, change: func(s *State) {
			s.Usages = map[string]*v1alpha1.StageVersionUsage{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			codec, whole := NewSharingCodec(), NewCodec()
			state, _ := codec.Decode(tt.files)
			whole.Decode(tt.files)
			next := state.CloneSharing()
			tt.change(next)
			encoded, err := whole.Encode(next)
			if err != nil {
				t.Fatal(err)
			}
			want := StateDiff(tt.files, encoded)
			got, err := codec.Changes(next, tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Changes differs from StateDiff of Encode (-diff +changes):\n%s", diff)
			}
			for p, data := range got {
				if (want[p] == nil) != (data == nil) {
					t.Errorf("%s: removal %v, want %v", p, data == nil, want[p] == nil)
				}
			}
			if len(want) != tt.want {
				t.Errorf("the case writes %d files, want %d: %v", len(want), tt.want, keys.Sorted(want))
			}
			// The codec remembers what it wrote: asked again, nothing.
			if again, err := codec.Changes(next, applied(tt.files, got)); err != nil || len(again) > 0 {
				t.Errorf("once written, Changes says %v, %v; want nothing", keys.Sorted(again), err)
			}
		})
	}
}

// applied is files with changes written (nil removes).
func applied(files, changes map[string][]byte) map[string][]byte {
	out := maps.Clone(files)
	for p, data := range changes {
		if data == nil {
			delete(out, p)
		} else {
			out[p] = data
		}
	}
	return out
}

func TestIsRecordPath(t *testing.T) {
	for p, want := range map[string]bool{
		"approvals/p-1/k.yaml": true, "approvals/p-1.yaml": true, "requests/c/1.yaml": true, "holds/h.yaml": true,
		"approvals": false, "approvals.yaml": false, "approvalsx/a.yaml": false, "configs/approvals/a.yaml": false,
		"configs/a.yaml": false, "": false,
	} {
		if got := IsRecordPath(p); got != want {
			t.Errorf("IsRecordPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestDecodeForgetsWhatTheBranchNoLongerHolds: the codec's memory follows
// the branch: a file removed or broken is forgotten, and decoded again
// when it is back.
func TestDecodeForgetsWhatTheBranchNoLongerHolds(t *testing.T) {
	files, err := EncodeState(settledState(2))
	if err != nil {
		t.Fatal(err)
	}
	c := NewSharingCodec()
	if _, errs := c.Decode(files); len(errs) > 0 {
		t.Fatal(errs)
	}
	all := len(c.known)
	fewer := applied(files, map[string][]byte{"configs/to-s00000.yaml": nil, "configs/to-s00001.yaml": []byte("status: [")})
	state, errs := c.Decode(fewer)
	if len(errs) != 1 || len(state.Configs) != 0 || len(c.known) != all-2 {
		t.Fatalf("without the configs: %d errors, %d configs, %d files known; want 1, 0, %d", len(errs), len(state.Configs), len(c.known), all-2)
	}
	c.changed = false
	state, errs = c.Decode(files)
	if len(errs) > 0 || len(state.Configs) != 2 || len(c.known) != all || !c.changed {
		t.Fatalf("with them back: %v, %d configs, %d files known (want %d), decoded again %v", errs, len(state.Configs), len(c.known), all, c.changed)
	}
}
