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
)

// Trailers are the facts a promotion commit records about itself.
type Trailers struct {
	Promotion  string
	Config     string
	Sequence   int64
	Vector     string
	Source     string
	Target     string
	ApprovedBy string
	ApprovedAt time.Time
}

// FormatTrailers renders t as a git trailer block (no surrounding blank
// lines). Approved-by and Approved-at appear only for approved promotions.
// Values are flattened to one line, because a newline would end the trailer
// and let a value forge the next key.
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
	if t.ApprovedBy != "" {
		line(TrailerApprovedBy, t.ApprovedBy)
		if !t.ApprovedAt.IsZero() {
			line(TrailerApprovedAt, t.ApprovedAt.UTC().Format(time.RFC3339))
		}
	}
	return b.String()
}

// ParseTrailers reads the promotion trailers from the last paragraph of a
// commit message, the paragraph git interpret-trailers reads. ok is false
// when the message names no promotion or a known trailer does not parse, so a
// hand-written commit is never mistaken for a promotion.
func ParseTrailers(message string) (Trailers, bool) {
	fields := trailerBlock(message)
	var t Trailers
	t.Promotion = fields[strings.ToLower(TrailerPromotion)]
	if t.Promotion == "" {
		return Trailers{}, false
	}
	if s, ok := fields[strings.ToLower(TrailerSequence)]; ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Trailers{}, false
		}
		t.Sequence = n
	}
	t.Config = fields[strings.ToLower(TrailerConfig)]
	t.Vector = fields[strings.ToLower(TrailerVector)]
	t.Source = fields[strings.ToLower(TrailerSource)]
	t.Target = fields[strings.ToLower(TrailerTarget)]
	t.ApprovedBy = fields[strings.ToLower(TrailerApprovedBy)]
	if s, ok := fields[strings.ToLower(TrailerApprovedAt)]; ok {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return Trailers{}, false
		}
		t.ApprovedAt = at.UTC()
	}
	return t, true
}

// trailerBlock returns the "Key: value" lines of the message's last
// paragraph, keys lower-cased (git compares them case-insensitively). The
// paragraph counts only when every line in it is a trailer, as git requires
// for trailers it did not write itself.
func trailerBlock(message string) map[string]string {
	message = strings.TrimRight(strings.ReplaceAll(message, "\r\n", "\n"), " \t\n")
	paragraph := message
	if i := strings.LastIndex(message, "\n\n"); i >= 0 {
		paragraph = message[i+2:]
	} else {
		// A message that is only a subject has no trailers.
		return nil
	}
	fields := map[string]string{}
	for _, l := range strings.Split(paragraph, "\n") {
		key, value, ok := strings.Cut(l, ":")
		if !ok || !isTrailerKey(key) {
			return nil
		}
		key = strings.ToLower(key)
		if _, seen := fields[key]; !seen {
			fields[key] = strings.TrimSpace(value)
		}
	}
	return fields
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
