package gitwriter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Trailer keys of a promotion commit. They are the machine-readable audit
// trail: `git log --format=%(trailers)` of an overlay says who approved what.
const (
	TrailerPromotion = "Vectorflow-Promotion"
	TrailerSequence  = "Vectorflow-Sequence"
	// TrailerConfig names the promotion's VectorPromotionConfig, so the
	// target's history says which config's sequence a commit advanced.
	TrailerConfig     = "Vectorflow-Config"
	TrailerVector     = "Vectorflow-Vector"
	TrailerSource     = "Vectorflow-Source"
	TrailerTarget     = "Vectorflow-Target"
	TrailerApprovedBy = "Approved-by"
	TrailerApprovedAt = "Approved-at"
	// TrailerForced says the promotion was created with --force: it may
	// take a component down across a stepping stone.
	TrailerForced = "Vectorflow-Forced"
	// TrailerRollback says the promotion is a vectorflow rollback.
	TrailerRollback = "Vectorflow-Rollback"
)

// MaxSequence bounds the Vectorflow-Sequence a promotion commit may carry,
// far above any a config reaches. A commit whose trailer says more (a
// hand-made one on the target) is no promotion commit: the ratchet counts on
// from the highest sequence, and one near the int64 limit would wrap the
// next sequence around and refuse every later promotion of its config as a
// roll-back, with no way to undo it short of rewriting the target's history.
const MaxSequence = 1<<53 - 1

// Trailers are the facts a promotion commit records about itself.
type Trailers struct {
	Promotion string
	Config    string
	Sequence  int64
	Vector    string
	Source    string
	Target    string
	// Forced and Rollback are the promotion's spec.forced and
	// spec.rollback; written only when true.
	Forced, Rollback bool
	// Approvals are the approvers whose approvals the promotion ran on, in
	// the order they approved: one with a single required approval,
	// several under spec.approval.minApprovals.
	Approvals []TrailerApproval
}

// TrailerApproval is one Approved-by trailer and the Approved-at that
// follows it.
type TrailerApproval struct {
	By string
	At time.Time
}

// ApprovedBy lists the approvers' names, in trailer order.
func (t Trailers) ApprovedBy() []string {
	by := make([]string, 0, len(t.Approvals))
	for _, a := range t.Approvals {
		by = append(by, a.By)
	}
	return by
}

// FormatTrailers renders t as a git trailer block (no surrounding blank
// lines). Approved-by and Approved-at appear only for approved promotions,
// as one pair per approver, each Approved-at right after the Approved-by it
// dates: git keeps repeated keys in order, so the pairs survive
// interpret-trailers. Values are flattened to one line, because a newline
// would end the trailer and let a value forge the next key.
func FormatTrailers(t Trailers) string {
	var b strings.Builder
	line := func(key, value string) {
		if value == "" {
			return
		}
		fmt.Fprintf(&b, "%s: %s\n", key, oneLine(value))
	}
	line(TrailerPromotion, t.Promotion)
	line(TrailerSequence, strconv.FormatInt(t.Sequence, 10))
	line(TrailerVector, t.Vector)
	line(TrailerSource, t.Source)
	line(TrailerTarget, t.Target)
	line(TrailerConfig, t.Config)
	if t.Forced {
		line(TrailerForced, "true")
	}
	if t.Rollback {
		line(TrailerRollback, "true")
	}
	for _, a := range t.Approvals {
		if oneLine(a.By) == "" {
			continue
		}
		line(TrailerApprovedBy, a.By)
		if !a.At.IsZero() {
			line(TrailerApprovedAt, a.At.UTC().Format(time.RFC3339))
		}
	}
	return b.String()
}

// ParseTrailers reads the promotion trailers from the last paragraph of a
// commit message, the paragraph git interpret-trailers reads. ok is false
// when the message names no promotion or a known trailer does not parse, so a
// hand-written commit is never mistaken for a promotion.
func ParseTrailers(message string) (Trailers, bool) {
	lines := trailerBlock(message)
	fields := map[string]string{}
	for _, l := range lines {
		if _, seen := fields[l.key]; !seen {
			fields[l.key] = l.value
		}
	}
	var t Trailers
	t.Promotion = fields[strings.ToLower(TrailerPromotion)]
	if t.Promotion == "" {
		return Trailers{}, false
	}
	if s, ok := fields[strings.ToLower(TrailerSequence)]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > MaxSequence {
			return Trailers{}, false
		}
		t.Sequence = n
	}
	t.Config = fields[strings.ToLower(TrailerConfig)]
	t.Vector = fields[strings.ToLower(TrailerVector)]
	t.Source = fields[strings.ToLower(TrailerSource)]
	t.Target = fields[strings.ToLower(TrailerTarget)]
	t.Forced = fields[strings.ToLower(TrailerForced)] == "true"
	t.Rollback = fields[strings.ToLower(TrailerRollback)] == "true"
	approvals, ok := parseApprovals(lines)
	if !ok {
		return Trailers{}, false
	}
	t.Approvals = approvals
	return t, true
}

// parseApprovals pairs each Approved-at with the Approved-by before it. An
// Approved-at with no approver to date, or two for one, does not parse.
func parseApprovals(lines []trailerLine) ([]TrailerApproval, bool) {
	var out []TrailerApproval
	dated := false
	for _, l := range lines {
		switch l.key {
		case strings.ToLower(TrailerApprovedBy):
			out = append(out, TrailerApproval{By: l.value})
			dated = false
		case strings.ToLower(TrailerApprovedAt):
			if len(out) == 0 || dated {
				return nil, false
			}
			at, err := time.Parse(time.RFC3339, l.value)
			if err != nil {
				return nil, false
			}
			out[len(out)-1].At, dated = at.UTC(), true
		}
	}
	return out, true
}

type trailerLine struct{ key, value string }

// trailerBlock returns the "Key: value" lines of the message's last
// paragraph in order, keys lower-cased (git compares them
// case-insensitively). The paragraph counts only when every line in it is a
// trailer, as git requires for trailers it did not write itself.
func trailerBlock(message string) []trailerLine {
	message = strings.TrimRight(strings.ReplaceAll(message, "\r\n", "\n"), " \t\n")
	paragraph := message
	if i := strings.LastIndex(message, "\n\n"); i >= 0 {
		paragraph = message[i+2:]
	} else {
		// A message that is only a subject has no trailers.
		return nil
	}
	var lines []trailerLine
	for _, l := range strings.Split(paragraph, "\n") {
		key, value, ok := strings.Cut(l, ":")
		if !ok || !isTrailerKey(key) {
			return nil
		}
		lines = append(lines, trailerLine{key: strings.ToLower(key), value: strings.TrimSpace(value)})
	}
	return lines
}

func isTrailerKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
