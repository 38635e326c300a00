package v1alpha1

// The condition types and reasons of VectorPromotionConfigs and
// VectorTemplates, in one place: users read them in `vectorflow get` and in
// the state files, and the core and the shell both set them. A
// VectorPromotion's own are beside its type.

// Condition types and reasons of a VectorPromotionConfig.
const (
	ReadyCondition         = "Ready"
	UpdateDelayedCondition = "UpdateDelayed"
	// DriftCondition is True while the target names another vector than
	// the source offers; its reason says what the config does about it.
	DriftCondition = "Drift"

	ResolvedReason          = "Resolved"
	SourceNotFoundReason    = "SourceNotFound"
	TargetNotFoundReason    = "TargetNotFound"
	LandscapeNotFoundReason = "LandscapeNotFound"
	InvalidSpecReason       = "InvalidSpec"
	// ConfigConflictReason: the config is on a cycle of configs, or shares
	// its target stage with another config (see ConfigInput.Conflicts).
	ConfigConflictReason = "ConfigConflict"
	UpdateDelayedReason  = "UpdateDelayed"

	// WaitingForDeploymentCondition has negative polarity: present, and
	// True, while a config whose source stage has readiness Active waits for
	// the stage's deployer to report a vector applied and healthy. Its
	// reason is AwaitingDeploymentReason, or DeploymentUnhealthyReason when
	// the newest report failed.
	WaitingForDeploymentCondition = "WaitingForDeployment"
	DeploymentUnhealthyReason     = "DeploymentUnhealthy"

	// Reasons of the Drift condition.
	InSyncReason         = "InSync"
	NoSourceVectorReason = "NoSourceVector"
	// PromotionOfferedReason: a promotion of the source's vector is open.
	PromotionOfferedReason = "PromotionOffered"
	// FailedNotRetriedReason: the config's last promotion of the source's
	// vector failed; only `vectorflow promote` tries it again.
	FailedNotRetriedReason = "FailedNotRetried"
	// TargetChangedByHandReason: the config promoted the source's vector,
	// and the target was changed since by someone else; an automatic
	// config does not undo that on its own.
	TargetChangedByHandReason = "TargetChangedByHand"
	// ConstraintViolatedReason: the source's vector breaks the config's
	// spec.constraints, so no candidate is made of it.
	ConstraintViolatedReason = "ConstraintViolated"
)

// Reasons on a VectorTemplate's Ready condition, and ApprovalRefused on a
// VectorPromotion's Approved condition.
const (
	// ApprovalRefusedReason is on Approved=False when approval files exist
	// but none counts: its commit does not verify against the config's
	// approvers, or it names another vector. The promotion stays Waiting.
	ApprovalRefusedReason = "ApprovalRefused"
	// AssemblyFailedReason is on a template's Ready=False when its
	// components do not resolve.
	AssemblyFailedReason = "AssemblyFailed"
	// VectorAssembledReason is on a template's Ready=True.
	VectorAssembledReason = "VectorAssembled"
	// RegistryUnavailableReason is on a template's Ready=False when a
	// registry could not be asked and the last resolved version was kept.
	RegistryUnavailableReason = "RegistryUnavailable"
)

// StalePromotionMergedReason is on a config's Ready=False when the pull
// request of a superseded promotion was merged anyway: the target runs an
// older vector than the one that superseded it, and vectorflow does not roll
// it back on its own.
const StalePromotionMergedReason = "StalePromotionMerged"

// PullRequestClosedReason is on a waiting promotion's Approved=False when its
// pull request was closed without merging: nobody will approve it there.
const PullRequestClosedReason = "PullRequestClosed"

// kstatus's negative-polarity conditions (Flux's meta.ReconcilingCondition
// and meta.StalledCondition), on configs, templates and stages beside Ready,
// present only when True. A VectorPromotion has only its two conditions.
const (
	// ReconcilingCondition is True while vectorflow retries what made Ready
	// False (a registry that did not answer).
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True while Ready is False for a reason only a
	// change to the configuration repository resolves.
	StalledCondition = "Stalled"
	// ProgressingWithRetryReason is on Reconciling=True: the pass that
	// failed is retried.
	ProgressingWithRetryReason = "ProgressingWithRetry"
)
