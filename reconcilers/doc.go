// Package reconcilers is the decision core of vectorflow: pure functions of
// (inputs, current state, now) that return plans. Nothing here reads Git,
// talks to a registry, starts a goroutine or looks at a clock; the executors
// load the state, call these functions and apply the plans.
//
// Three reconcilers, none of which needs the others' executors:
//
//   - AssembleVector turns a VectorTemplate (and its base chain) plus the
//     registry's resolved versions into at most one new immutable Vector.
//   - ReconcileConfig decides everything a VectorPromotionConfig owns: its
//     Ready, UpdateDelayed and Drift conditions, the promotions to create,
//     the scheduling of its promotions (SchedulePromotions), cleanup
//     (Cleanup), the aggregate status (AggregateStatus) and the history of
//     finished executions (RecordHistory), which drift consults instead of
//     the promotions cleanup deletes. Promote is the manual
//     `vectorflow promote`.
//   - The VectorPromotion executor uses Start, Complete, Approve and
//     ReconcilePromotion; the state is always DeriveState of the conditions.
//
// # Applying a ConfigPlan
//
// The order matters wherever the store is not atomic:
//
//  1. Persist Status. When Create is set it carries the incremented
//     sequence, so a crash after this step skips a number instead of reusing
//     one (ReconcileConfig also allocates above the highest existing
//     promotion, so a lost status cannot collide either, and above
//     ConfigInput.TargetSequence, the newest the target's history holds, so
//     a deleted or rewound state branch cannot either).
//  2. Create the promotions in Create.
//  3. Write the promotions in Update (their status changed: refreshed state,
//     superseded, timed out, blocked, started).
//  4. Delete the promotions named in Delete.
//  5. Only after 1-3 are persisted, execute Start: it is already InProgress
//     in Create or Update, so a crash mid-write is retired by the deadline
//     rather than lost. Report the result with Complete and persist it.
//     The executor writes only on top of the target's history: a newer
//     sequence of the config there is OutcomeSuperseded, the same name with
//     another vector OutcomeFailed (Result.Reason says which).
//
// # StageVersions and usages (ADR-0013)
//
// ObserveStage records, per stage, the StageVersion of the vector its
// overlay names (the target) and of every vector a deployer reported on,
// decides the active vector (the overlay's vector at the newest revision
// reported healthy, revisions ordered by the branch's history; without
// spec.deployment, what the overlay names), and points the stage's own
// usages at them: active first, then target. ReconcileUsages then sets every
// usage's StageVersionReady and StageVersionNotFound conditions, and
// CollectGarbage last deletes, per stage beyond spec.maxRevisions, the
// oldest versions no usage references, keeping the newest ready one. So at
// no step is the version a stage runs unreferenced, and a crash anywhere
// loses nothing: all of it is one state commit, and the reports it applied
// go back to the queue until that commit is made. A report is idempotent
// and an older revision's report never overrides a newer one, so applying
// the same reports again, in any order, decides the same.
//
// StageSourceState is what a Stage source offers a config: with readiness
// Active (the default when the source stage has spec.deployment) only the
// active vector, since it became active without interruption, which is what
// spec.updateDelay counts from.
//
// On the state branch steps 1-4 are one commit (Transitions make its
// message); a rejected compare-and-swap means another writer won: re-read,
// re-decide, retry.
package reconcilers
