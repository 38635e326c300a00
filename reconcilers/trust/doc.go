// Package trust decides whether a state branch commit may be believed: the
// rule over one commit's facts (who signed it, what it changed, its
// parents' verdicts). It is pure and does no I/O: the controller walks the
// history, diffs the trees and checks the signatures, then calls JudgeCommit.
package trust
