package reconcilers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func depth(v HoldVerdict, d int) HoldVerdict { v.Depth = d; return v }

func TestCurrentHolds(t *testing.T) {
	rec := func(path, kind, stage, signer string, d time.Duration) HoldVerdict {
		return HoldVerdict{Path: path, Signer: signer, Commit: "c-" + path,
			Record: HoldRecord{Kind: kind, Stage: stage, Reason: "why " + path, At: metav1.NewTime(at(d))}}
	}
	cases := []struct {
		name     string
		verdicts []HoldVerdict
		want     map[string]*StageHold
	}{
		{name: "no records", want: map[string]*StageHold{}},
		{name: "a hold holds",
			verdicts: []HoldVerdict{rec("h1", HoldKind, "prod/eu", "alice", 0)},
			want:     map[string]*StageHold{"prod/eu": {Stage: "prod/eu", By: "alice", At: at(0), Reason: "why h1", Commit: "c-h1"}}},
		{name: "a newer release lifts it",
			verdicts: []HoldVerdict{rec("h1", HoldKind, "prod/eu", "alice", 0), rec("r1", ReleaseKind, "prod/eu", "bob", time.Minute)},
			want:     map[string]*StageHold{}},
		{name: "an older release does not",
			verdicts: []HoldVerdict{rec("r1", ReleaseKind, "prod/eu", "bob", 0), rec("h1", HoldKind, "prod/eu", "alice", time.Minute)},
			want:     map[string]*StageHold{"prod/eu": {Stage: "prod/eu", By: "alice", At: at(time.Minute), Reason: "why h1", Commit: "c-h1"}}},
		{name: "a refused release counts for nothing",
			verdicts: []HoldVerdict{rec("h1", HoldKind, "prod/eu", "alice", 0), rec("r1", ReleaseKind, "prod/eu", "", time.Minute)},
			want:     map[string]*StageHold{"prod/eu": {Stage: "prod/eu", By: "alice", At: at(0), Reason: "why h1", Commit: "c-h1"}}},
		{name: "a refused hold holds nothing",
			verdicts: []HoldVerdict{rec("h1", HoldKind, "prod/eu", "", 0)},
			want:     map[string]*StageHold{}},
		{name: "stages are held apart",
			verdicts: []HoldVerdict{rec("h1", HoldKind, "prod/eu", "alice", 0), rec("r1", ReleaseKind, "prod/us", "bob", time.Minute)},
			want:     map[string]*StageHold{"prod/eu": {Stage: "prod/eu", By: "alice", At: at(0), Reason: "why h1", Commit: "c-h1"}}},
		{name: "in the same second, the record added later (nearer the tip) wins over the later path",
			verdicts: []HoldVerdict{depth(rec("z", HoldKind, "prod/eu", "vectorflow", 0), 2), depth(rec("a", ReleaseKind, "prod/eu", "bob", 0), 1)},
			want:     map[string]*StageHold{}},
		{name: "at the same time, the later path wins (input order does not matter)",
			verdicts: []HoldVerdict{rec("b", ReleaseKind, "prod/eu", "bob", 0), rec("a", HoldKind, "prod/eu", "alice", 0)},
			want:     map[string]*StageHold{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CurrentHolds(tc.verdicts)); diff != "" {
				t.Errorf("CurrentHolds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHoldStage(t *testing.T) {
	for p, want := range map[string]string{
		"holds/prod/eu/20261201T120000Z-a1b2c3d4.yaml": "prod/eu",
		"holds/prod/eu.yaml":                           "",
		"holds/prod/eu/x/y.yaml":                       "",
		"holds/prod/eu/x.txt":                          "",
		"holds//eu/x.yaml":                             "",
		"approvals/prod/eu/x.yaml":                     "",
	} {
		got, ok := HoldStage(p)
		if got != want || ok != (want != "") {
			t.Errorf("HoldStage(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
}
