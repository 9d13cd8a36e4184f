// This file owns what an entry point tells the trim besides the user's
// options: the reason and attempt its event reports, a budget derived from
// the count, counts known or wanted by index, the Trimmer's maintenance
// modes, and where the trim reports its cut. The options value (options.go)
// holds only what an Option sets; the planner reads both, each in one place.

package history

// call is one entry point's instructions to trimToBudget. The zero value,
// with reason ReasonBudget, is TrimToRecentTurns'.
type call struct {
	reason  string // the event's Reason
	attempt int    // the event's Attempt (RecoverOverflow)
	// exact makes the trim aim at the budget itself, ignoring the
	// options' trigger and low-water mark: a recovery aims at what the
	// provider said.
	exact bool
	// budgetFor, when set, replaces the budget once the history is
	// counted (RecoverOverflow derives it from the size that failed), so
	// that no message is counted twice. It forces a count of everything.
	budgetFor func(total int) int
	// memo, when set, holds known counts of the call's messages by index
	// (negative: unknown), and record, when set, receives the counts the
	// call makes, by the same index. The Trimmer records the counts of its
	// reuse check and passes them to the fresh trim that follows a failed
	// check, so that no message is counted twice.
	memo, record []int
	// prune makes the trim elide every eligible tool result (WithElision's
	// rules), also when the history fits: the Trimmer's cold resume.
	prune bool
	// pruneOver is prune only when the history is over budget: a
	// Trimmer's maintenance point, where the cache is rewritten anyway.
	pruneOver bool
	// noArchive skips Archive and Store: a pass whose plan may be redone
	// archives nothing (the Trimmer archives the plan it returns).
	noArchive bool
	// minCut, when positive, is an input index (a turn start) before which
	// every turn is dropped: a background summary covers them.
	minCut int
	// reserve is counted like the request's overhead: the room a Trimmer
	// keeps for the summary it is about to write.
	reserve int
	// pre counts what a trim drops before the latest compaction, which
	// it plans without (set by plan).
	pre dropCount
	// cut, when set, receives where the trim cut (see cutInfo).
	cut *cutInfo
	// outCounts, when set, receives the count of every message of a
	// trimmed Result (the request's overhead aside), by position.
	outCounts *[]int
}

// cutInfo says where a trim cut, as indices into its input: the first
// message of the first kept turn (-1 when no whole turn was dropped), the
// summary hoisted out of the dropped turns (-1 when none), and the
// breadcrumbs the trim replaced with its own.
type cutInfo struct {
	start, hoist int
	replaced     []int
	// survived is the orphan sweep's index (the input messages it kept,
	// ascending), nil when it removed nothing.
	survived []int
}

// budgetCall is the call of TrimToRecentTurns and of a Trimmer's plain
// trims.
func budgetCall() *call { return &call{reason: ReasonBudget} }

// dropCount is a number of messages, and of whole turns among them.
type dropCount struct{ messages, turns int }
