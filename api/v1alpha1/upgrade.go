package v1alpha1

// Reasons of the safe-upgrade rules (issue 13): stepping stones and holds.
// They are on a promotion's Succeeded=False while it is Blocked (it runs
// once the rule is satisfied), and on a config's Drift condition when the
// rule decided what the config offers.
const (
	// SteppingStoneRequiredReason: the vector skips a stepping stone that
	// another vector carries; that vector is promoted first and this one
	// waits until the stone is active in the stage.
	SteppingStoneRequiredReason = "SteppingStoneRequired"
	// SteppingStoneMissingReason: the vector skips a stepping stone and no
	// vector carries it.
	SteppingStoneMissingReason = "SteppingStoneMissing"
	// SteppingStoneDowngradeReason: the vector goes down across a stepping
	// stone; only a promotion created with --force may.
	SteppingStoneDowngradeReason = "SteppingStoneDowngrade"
	// SteppingStoneInvalidReason: a stone or a version cannot be ordered
	// (not semver), so the stones cannot be judged.
	SteppingStoneInvalidReason = "SteppingStoneInvalid"
	// StageHeldReason: the target stage is held (vectorflow hold, a
	// rollback, or a change made by hand); automatic promotions wait.
	StageHeldReason = "StageHeld"
	// ManualChangeReason is the reason of a hold vectorflow puts on a stage
	// whose overlay a commit it did not make changed.
	ManualChangeReason = "ManualChange"
	// ProtectedRemovalReason is on Approved=False of a promotion that
	// removes objects of protected kinds: it waits for an approval even
	// when its config is automatic.
	ProtectedRemovalReason = "ProtectedRemoval"
)

// String names an object as people read it: Kind group namespace/name.
func (e InventoryEntry) String() string {
	kind := e.Kind
	if e.Group != "" {
		kind += "." + e.Group
	}
	if e.Namespace != "" {
		return kind + " " + e.Namespace + "/" + e.Name
	}
	return kind + " " + e.Name
}

// BlockedByRule reports whether reason is one of the rules above that keep
// a promotion Blocked until they are satisfied.
func BlockedByRule(reason string) bool {
	switch reason {
	case SteppingStoneRequiredReason, SteppingStoneMissingReason, SteppingStoneDowngradeReason,
		SteppingStoneInvalidReason, StageHeldReason:
		return true
	}
	return false
}
