// Package pass decides one reconcile pass: given the snapshot, the state,
// and the facts the shell gathered (approvals counted, requests judged,
// pull requests seen, results of executions, registry versions), Decide
// runs every reconciler and returns the next state, the promotions to
// execute and the forge writes to make. It is pure: no git, no network, no
// clock (now is an argument). The controller reads, calls it, writes and
// executes.
package pass
