package reconcilers

import "testing"

func TestApprovalPromotion(t *testing.T) {
	for _, tt := range []struct {
		path, want string
		ok         bool
	}{
		{"approvals/dev-to-test-1.yaml", "dev-to-test-1", true},
		{"approvals/dev-to-test-1/0123-20260101T000000Z-ab.yaml", "dev-to-test-1", true},
		{"approvals/zzz.yaml", "zzz", true},
		{"approvals/a/b/c.yaml", "", false},
		{"approvals/dev-to-test-1/notes.txt", "", false},
		{"approvals/.yaml", "", false},
		{"approvals/dev-to-test-1/.yaml", "", false},
		{"promotions/dev-to-test/dev-to-test-1.yaml", "", false},
	} {
		got, ok := ApprovalPromotion(tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ApprovalPromotion(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}
