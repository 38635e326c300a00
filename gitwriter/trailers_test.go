package gitwriter

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vectorflow-dev/vectorflow/internal/testutil"
)

func TestFormatTrailers(t *testing.T) {
	approvedAt := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   Trailers
		want string
	}{{
		name: "approved promotion",
		in: Trailers{Promotion: "dev-to-prod-7", Sequence: 7, Vector: "shop:2026.3.4-050607000Z",
			Source: "Stage/dev", Target: "Stage/prod", Config: "dev-to-prod", Approvals: []TrailerApproval{{By: "Jane Doe <jane@example.com>", At: approvedAt}}},
		want: "Vectorflow-Promotion: dev-to-prod-7\nVectorflow-Sequence: 7\nVectorflow-Vector: shop:2026.3.4-050607000Z\n" +
			"Vectorflow-Source: Stage/dev\nVectorflow-Target: Stage/prod\nVectorflow-Config: dev-to-prod\n" +
			"Approved-by: Jane Doe <jane@example.com>\nApproved-at: 2026-03-04T04:06:07Z\n",
	}, {
		name: "four eyes: one pair per approver, in order",
		in: Trailers{Promotion: "p-2", Sequence: 2, Vector: "shop:2", Approvals: []TrailerApproval{
			{By: "alice", At: approvedAt}, {By: "bob", At: approvedAt.Add(time.Minute)}}},
		want: "Vectorflow-Promotion: p-2\nVectorflow-Sequence: 2\nVectorflow-Vector: shop:2\n" +
			"Approved-by: alice\nApproved-at: 2026-03-04T04:06:07Z\nApproved-by: bob\nApproved-at: 2026-03-04T04:07:07Z\n",
	}, {
		name: "no approval: no approval trailers",
		in:   Trailers{Promotion: "p-1", Sequence: 1, Vector: "shop:1", Source: "VectorTemplate/shop", Target: "Stage/dev", Approvals: []TrailerApproval{{At: approvedAt}}},
		want: "Vectorflow-Promotion: p-1\nVectorflow-Sequence: 1\nVectorflow-Vector: shop:1\n" +
			"Vectorflow-Source: VectorTemplate/shop\nVectorflow-Target: Stage/dev\n",
	}, {
		name: "a forced rollback says so",
		in:   Trailers{Promotion: "p-3", Sequence: 3, Vector: "shop:1", Forced: true, Rollback: true},
		want: "Vectorflow-Promotion: p-3\nVectorflow-Sequence: 3\nVectorflow-Vector: shop:1\nVectorflow-Forced: true\nVectorflow-Rollback: true\n",
	}, {
		name: "a newline in a value cannot forge a trailer",
		in:   Trailers{Promotion: "p-1", Sequence: 1, Vector: "shop:1\nApproved-by: mallory"},
		want: "Vectorflow-Promotion: p-1\nVectorflow-Sequence: 1\nVectorflow-Vector: shop:1 Approved-by: mallory\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FormatTrailers(tt.in)); diff != "" {
				t.Errorf("FormatTrailers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTrailers(t *testing.T) {
	at := time.Date(2026, 3, 4, 4, 6, 7, 0, time.UTC)
	full := Trailers{Promotion: "dev-to-prod-7", Sequence: 7, Vector: "shop:1", Source: "Stage/dev",
		Target: "Stage/prod", Config: "dev-to-prod", Approvals: []TrailerApproval{{By: "jane@example.com", At: at}}}
	four := Trailers{Promotion: "dev-to-prod-8", Sequence: 8, Vector: "shop:2",
		Approvals: []TrailerApproval{{By: "alice", At: at}, {By: "bob", At: at.Add(time.Hour)}}}
	tests := []struct {
		name    string
		message string
		want    Trailers
		wantOK  bool
	}{
		{"round trip", "promote shop:1 to eu/prod\n\nservice-a 1 -> 2\n\n" + FormatTrailers(full), full, true},
		{"keys are case-insensitive, CRLF tolerated", "subject\r\n\r\nvectorflow-promotion: p-2\r\nvectorflow-sequence: 2\r\n", Trailers{Promotion: "p-2", Sequence: 2}, true},
		{"subject only", "Vectorflow-Promotion: p-1", Trailers{}, false},
		{"trailers not in the last paragraph", "s\n\nVectorflow-Promotion: p-1\n\nplain text\n", Trailers{}, false},
		{"a non-trailer line spoils the block", "s\n\nVectorflow-Promotion: p-1\nnot a trailer\n", Trailers{}, false},
		{"no promotion", "s\n\nSigned-off-by: a <a@b>\n", Trailers{}, false},
		{"bad sequence", "s\n\nVectorflow-Promotion: p-1\nVectorflow-Sequence: seven\n", Trailers{}, false},
		// A hand-made commit on the target must not poison the ratchet: the
		// next sequence after the largest int64 wraps around, and every
		// later promotion of the config would be refused as rolling back.
		{"a sequence no promotion reaches", "s\n\nVectorflow-Promotion: p-9223372036854775807\nVectorflow-Sequence: 9223372036854775807\n", Trailers{}, false},
		{"a negative sequence", "s\n\nVectorflow-Promotion: p--3\nVectorflow-Sequence: -3\n", Trailers{}, false},
		{"bad time", "s\n\nVectorflow-Promotion: p-1\nApproved-by: a\nApproved-at: yesterday\n", Trailers{}, false},
		{"four eyes round trip", "s\n\n" + FormatTrailers(four), four, true},
		{"an approver without a time", "s\n\nVectorflow-Promotion: p-1\nApproved-by: a\nApproved-by: b\nApproved-at: 2026-03-04T04:06:07Z\n",
			Trailers{Promotion: "p-1", Approvals: []TrailerApproval{{By: "a"}, {By: "b", At: at}}}, true},
		{"a time with no approver", "s\n\nVectorflow-Promotion: p-1\nApproved-at: 2026-03-04T04:06:07Z\n", Trailers{}, false},
		{"two times for one approver", "s\n\nVectorflow-Promotion: p-1\nApproved-by: a\nApproved-at: 2026-03-04T04:06:07Z\nApproved-at: 2026-03-04T04:06:07Z\n", Trailers{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseTrailers(tt.message)
			if ok != tt.wantOK {
				t.Fatalf("ParseTrailers ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseTrailers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrailersReadByGit checks the format against the reader that matters:
// git interpret-trailers --parse must see exactly our trailers.
func TestTrailersReadByGit(t *testing.T) {
	testutil.RequireGit(t)
	tr := Trailers{Promotion: "dev-to-prod-7", Sequence: 7, Vector: "shop:2026.3.4-050607000Z",
		Source: "Stage/dev", Target: "Stage/prod", Approvals: []TrailerApproval{
			{By: "Jane Doe <jane@example.com>", At: time.Date(2026, 3, 4, 4, 6, 7, 0, time.UTC)},
			{By: "Bob <bob@example.com>", At: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}}}
	msg := PromotionMessage(Promotion{Vector: tr.Vector, Landscape: "eu", Stage: "prod", Trailers: tr,
		From: nil, To: nil})
	cmd := exec.Command("git", "interpret-trailers", "--parse")
	cmd.Stdin = strings.NewReader(msg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git interpret-trailers --parse: %v", err)
	}
	if diff := cmp.Diff(FormatTrailers(tr), string(out)); diff != "" {
		t.Errorf("git interpret-trailers read (-ours +git's):\n%s", diff)
	}
	back, ok := ParseTrailers("subject\n\n" + string(out))
	if !ok {
		t.Fatalf("ParseTrailers of git's output failed")
	}
	if diff := cmp.Diff(tr, back); diff != "" {
		t.Errorf("ParseTrailers of git's output (-want +got):\n%s", diff)
	}
}
