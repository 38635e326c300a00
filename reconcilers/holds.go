package reconcilers

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hold stops automatic promotions into a stage: candidates are still
// made, but wait (StageHeld) until the hold is released. A hold is a record
// on the state branch, holds/<landscape>/<stage>/<id>.yaml, of kind Hold or
// Release. People add them with vectorflow hold / release in a commit
// signed with their own key, which counts when the key is an approver of a
// config whose target is that stage (or the controller's); the controller
// adds them itself for a rollback and when a person changed the stage's
// overlay by hand (ManualChange). Records are never rewritten: the
// stage's current hold is its newest valid record, so a release is a record
// too, and the history of holds is `git log -- holds/`.

// HoldsDir holds the hold and release records.
const HoldsDir = "holds"

// Kinds of a hold record.
const (
	HoldKind    = "Hold"
	ReleaseKind = "Release"
)

// HoldRecord is the content of one hold record. Who set it is decided by
// the signature of the commit that added it, not by By, which is only what
// the signer called themselves (the controller fills it in for its own).
type HoldRecord struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Stage is `<landscape>/<name>`, the stage the record's directory names.
	Stage  string      `json:"stage"`
	Reason string      `json:"reason,omitempty"`
	By     string      `json:"by,omitempty"`
	At     metav1.Time `json:"at"`
	// Commit names the commit that caused an automatic hold: the target
	// commit of a ManualChange.
	Commit string `json:"commit,omitempty"`
	// About identifies what an automatic hold is about (a ManualChange:
	// config, its last promotion and the vector the target names), so the
	// same change is held once and a release of it sticks.
	About string `json:"about,omitempty"`
}

// HoldPath is where a record of stage (`<landscape>/<name>`) lives.
func HoldPath(stage, id string) string {
	return path.Join(HoldsDir, stage, id+".yaml")
}

// HoldID names a record: its time, for people listing holds/, and a hash
// of what it is about, so two records never collide and the same decision
// replayed names the same file.
func HoldID(at time.Time, about string) string {
	sum := sha256.Sum256([]byte(about))
	return at.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(sum[:4])
}

// HoldStage is the stage a record's path names, ok false when the path is
// not holds/<landscape>/<stage>/<id>.yaml.
func HoldStage(p string) (stage string, ok bool) {
	rest, found := strings.CutPrefix(p, HoldsDir+"/")
	parts := strings.Split(rest, "/")
	if !found || len(parts) != 3 || path.Ext(p) != ".yaml" || slices.Contains(parts, "") || parts[2] == ".yaml" {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

// HoldVerdict is one record as the signature check of its commit found it.
type HoldVerdict struct {
	Path   string
	Record HoldRecord
	// Signer is who signed the adding commit, trusted for the stage; ""
	// when the record does not count, and Refusal says why.
	Signer, Refusal string
	// Commit is the state commit that added the record.
	Commit string
	// Depth is how far below the state branch's tip, along its first
	// parents, Commit is: of two records with the same time (records keep
	// seconds), the one added later has the smaller depth.
	Depth int
}

// CurrentHolds are the stages' holds by `<landscape>/<name>`: each
// stage's newest counting record (by its time, then the commit that added
// it, then path), when that is a
// Hold. A refused record counts for nothing.
func CurrentHolds(verdicts []HoldVerdict) map[string]*StageHold {
	newest := map[string]*HoldVerdict{}
	for i := range verdicts {
		v := &verdicts[i]
		if v.Signer == "" {
			continue
		}
		cur := newest[v.Record.Stage]
		if cur == nil || v.Record.At.After(cur.Record.At.Time) ||
			v.Record.At.Equal(&cur.Record.At) && (v.Depth < cur.Depth || v.Depth == cur.Depth && v.Path > cur.Path) {
			newest[v.Record.Stage] = v
		}
	}
	out := map[string]*StageHold{}
	for stage, v := range newest {
		if v.Record.Kind != HoldKind {
			continue
		}
		by := v.Signer
		if v.Record.By != "" && v.Record.By != v.Signer {
			by = v.Signer + " (" + v.Record.By + ")"
		}
		commit := v.Record.Commit
		if commit == "" {
			commit = v.Commit
		}
		out[stage] = &StageHold{Stage: stage, By: by, At: v.Record.At.Time, Reason: orDefault(v.Record.Reason, "no reason given"), Commit: commit}
	}
	return out
}

// IsRecordPath reports whether a state-branch path holds records that
// people add with their own signatures (approvals, promotion requests,
// holds): each is judged by the signature of the commit that added it, and
// the controller never rewrites one.
func IsRecordPath(p string) bool {
	dir, _, nested := strings.Cut(p, "/")
	return nested && (dir == ApprovalsDir || dir == RequestsDir || dir == HoldsDir)
}
