// This file owns the trim entry points, TrimToRecentTurns and Turns, and
// trimToBudget, which every entry point runs: it checks the call, prepares
// the view (validated and swept as far as the trim reads it), asks the
// planner (plan*.go) what to keep, and materialises the decision.

package history

import "slices"

// TrimToRecentTurns returns the longest suffix of whole turns of msgs that
// fits budget tokens together with the prefix and a breadcrumb.
//
// Step by step:
//
//  1. The options are checked (an *[OptionError] wrapping
//     [ErrInvalidOption]), budget must be positive ([ErrInvalidBudget]),
//     and every message the trim reads is validated (a *[MessageError]
//     wrapping [ErrInvalidMessage]); on error the Result is empty. A trim
//     reads the leading block, the turns it counts (newest first, as far
//     as the decision needs) and the pinned messages; a malformed message
//     among the older turns it drops unread is not reported, since it is
//     not sent.
//  2. The orphan sweep removes unpaired tool results and calls (see
//     [SweepOrphans]), unless [WithoutOrphanSweep], in what the trim reads;
//     orphans in the turns it drops unread are dropped with them and not
//     counted in [Result.OrphansRemoved].
//  3. Each message is counted once with the [Counter] ([WithCounter],
//     default [Heuristic]). If the total fits the budget, the history is
//     returned as it is: no breadcrumb, no event, Kept 0, 1, 2, ...
//  4. Otherwise the prefix (leading system messages and pinned summaries)
//     is kept, the oldest whole turns are dropped, as few as needed, and one
//     breadcrumb is placed after the prefix, replacing any breadcrumb there
//     before. The breadcrumb's tokens count toward the budget. The
//     [WithOnTrim] callback receives one [Event].
//  5. The latest turn is always kept. When the prefix, breadcrumb and
//     latest turn alone exceed the budget, the Result holds them and the
//     error is a *[BudgetError] wrapping [ErrLatestTurnTooLarge].
//
// [WithElision] and [WithStepTrim] extend step 4 into a ladder: old tool results
// are elided (as few as needed, and only in what is kept) before turns must
// go, and the oldest steps of the latest turn go before the trim gives up
// (see docs/degradation.md). Summaries in dropped turns are kept, pinned
// (see [Summaries]), and so are the messages [WithPin] names. [WithOverhead]
// counts what the request sends besides the messages.
//
// A turn runs from a [RoleUser] message of no [Kind] up to the next one (see
// [Turns]), so a tool call and its result are always dropped together.
// TrimToRecentTurns runs in time linear in the number of messages, tool
// calls and parts, calls the Counter at most once per message, never
// modifies msgs, is deterministic, and is safe for concurrent use (as long as
// the Counter and callbacks are). What the [Result] shares with msgs is
// described there. Trimming a Result's Messages again with the same budget
// and options returns them unchanged.
//
// Counts from the Counter are clamped: a negative count is read as 0, and a
// count above [math.MaxInt]/(len(msgs)+5) as that cap, which no budget accepts, so
// no sum can wrap and a history is never reported to fit when it does not.
func TrimToRecentTurns(msgs []Message, budget int, opts ...Option) (Result, error) {
	o := newOptions(opts)
	defer o.release()
	return trimToBudget(msgs, budget, o, budgetCall())
}

// Turns returns the turns of msgs, oldest first, as index ranges into msgs:
// the turns a trim with the same options works with. Of the options, only
// [WithTurnStart] affects the result.
//
// The prefix (the leading system messages, pinned summaries and leading
// breadcrumbs, see [TrimToRecentTurns]) belongs to no turn. A turn starts at
// every message the turn rule accepts (by default every [RoleUser] message
// whose [Kind] is empty); breadcrumbs, nudges, summaries and tool results never
// start one. Messages between the prefix and the first turn start belong to
// the first turn, so every message after the prefix is in exactly one turn
// and a tool result is always in the same turn as its call. Turns returns
// nil when there is no message after the prefix.
func Turns(msgs []Message, opts ...Option) []Turn {
	o := newOptions(opts)
	defer o.release()
	starts := appendTurnStarts(nil, msgs, leadEnd(msgs), o.turnStart)
	if len(starts) == 0 {
		return nil
	}
	turns := make([]Turn, len(starts))
	for i, s := range starts {
		end := len(msgs)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		turns[i] = Turn{Start: s, End: end}
	}
	return turns
}

// trimToBudget is the shared implementation of the trim entry points: o
// is the user's options, c the entry point's instructions.
func trimToBudget(msgs []Message, budget int, o *options, c *call) (Result, error) {
	if c.cut != nil {
		*c.cut = cutInfo{start: -1, hoist: -1}
	}
	budget, err := c.budget(budget, o)
	res := Result{Budget: budget}
	if err != nil {
		return res, err
	}
	if err := checkPins(msgs, o.pins); err != nil {
		return res, err
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.put()
	lazy := c.budgetFor == nil && c.memo == nil && c.record == nil && !c.prune && !o.fullCount
	if lazy {
		// Validate and sweep only what the plan reads; orphans there send
		// the trim down the full path, which sweeps the whole history.
		res, err, done := plan(sc, msgs, msgs, nil, 0, budget, o, c, true)
		if done {
			return res, err
		}
		c.memo = sc.call.memo
	}
	if err := validate(msgs); err != nil {
		return res, err
	}
	view, index := msgs, []int(nil)
	c.pre = dropCount{}
	if lead := leadEnd(msgs); lead < len(msgs) {
		// What the provider reads starts at the latest compaction: cut
		// there first, then sweep what is left, as the lazy path does.
		starts, _, _, compact := scanTurns(nil, nil, nil, msgs, lead, o.turnStart)
		if compact > lead {
			view, index, c.pre = cutAt(msgs, nil, lead, compact, starts)
		}
	}
	orphans := 0
	if !o.noSweep {
		if out, idx, rep := sweep(view, true); out != nil {
			if index != nil {
				for j, i := range idx {
					idx[j] = index[i]
				}
			}
			view, index, orphans = out, idx, rep.Total()
		}
	}
	res, err, _ = plan(sc, msgs, view, index, orphans, budget, o, c, false)
	return res, err
}

// budget returns the budget the call trims to, after the options' error
// and the budget's own are checked: the calibrated budget under
// WithCalibration, unless the entry point derives its own.
func (c *call) budget(budget int, o *options) (int, error) {
	switch {
	case o.err != nil:
		return budget, o.err
	case budget <= 0:
		return budget, ErrInvalidBudget
	case o.calib != nil && c.budgetFor == nil:
		return o.calib.Budget(budget), nil
	}
	return budget, nil
}

// plan trims view, msgs after the orphan sweep (index maps it to msgs,
// nil: identity; orphans is what the sweep removed), to budget. With lazy, view is msgs itself, neither
// validated nor swept: the planner prepares what it reads, and when it
// meets orphans plan returns done false, having recorded its counts in
// c.memo for the full path to reuse.
func plan(sc *scratch, msgs, view []Message, index []int, orphans, budget int, o *options, c *call, lazy bool) (res Result, err error, done bool) {
	res = Result{Budget: budget, OrphansRemoved: orphans}
	// The planner works on its own copy of the call (in the pooled
	// scratch, so that the call does not escape); it reports back through
	// the call's pointers, and a lazy plan it abandons through sc.call.memo.
	if lazy {
		c.pre = dropCount{}
	}
	sc.call = *c
	p := newPlanner(sc, msgs, view, index, o, &sc.call, lazy)
	swept := index
	if c.pre.messages > 0 {
		swept = nil // index holds the cut at the compaction, not the sweep's alone
	}
	if p.compact > p.lead {
		// The provider reads nothing before the latest compaction: plan
		// the history from it on, and count what goes before it as
		// dropped.
		var more int
		view, index, c.pre, more = p.fromCompaction(!o.noSweep)
		res.OrphansRemoved += more
		swept = nil
		sc.call = *c
		p = newPlanner(sc, msgs, view, index, o, &sc.call, lazy)
	}
	p.swept = swept
	if c.memo == nil && c.record == nil && c.budgetFor == nil && !c.prune && c.minCut <= 0 {
		// The common case first: one tight pass, newest first, that
		// either shows the history fits or hands its counts on.
		if total, ok := p.fitsFast(o.limit(budget)); ok {
			sendView(&res, msgs, view, index)
			res.TokensBefore, res.TokensAfter, res.KeptTurns = total, total, p.turns
			p.viewCounts()
			report(&res, o, c)
			return res, nil, true
		}
	}
	p.countLead()
	complete, fits := p.measure(budget)
	if p.stopped() {
		return p.abandon(res)
	}
	res.TokensBefore, res.Budget, budget = -1, p.budget, p.cmpBudget
	if complete {
		res.TokensBefore = p.total
	}
	if fits {
		// Fits, or nothing can be dropped: send the (swept) view.
		sendView(&res, msgs, view, index)
		res.TokensAfter, res.KeptTurns = p.total, p.turns
		p.viewCounts()
		report(&res, o, c)
		if p.total > budget {
			return res, &BudgetError{Need: p.total, Budget: res.Budget, Pinned: p.pinnedTok - p.extra + p.oldCrumbTok, Overhead: p.extra,
				cut: o.elide != nil && o.elide.Cut}, true
		}
		return res, nil, true
	}
	items, elide, at, tokens := p.decide()
	if p.stopped() {
		return p.abandon(res)
	}
	if err := p.archive(elide); err != nil {
		return Result{Budget: budget}, err, true
	}
	p.materialize(&res, items, elide, at, tokens)
	report(&res, o, c)
	if res.TokensAfter > budget {
		return res, &BudgetError{Need: res.TokensAfter, Budget: res.Budget, Overhead: p.extra,
			Pinned: p.pinnedTok - p.extra + p.hoistTok + p.pinDrop + p.crumbPart(p.k), cut: o.elide != nil && o.elide.Cut}, true
	}
	return res, nil, true
}

// viewCounts tells c.outCounts, when set, the count of every message of
// the view, sent as it is; every one has been counted.
func (p *planner) viewCounts() {
	if p.c.outCounts == nil {
		return
	}
	counts := make([]int, p.n)
	for i := range counts {
		if j := p.n - 1 - i; j < len(p.sc.fast) {
			counts[i] = p.sc.fast[j]
		} else {
			counts[i] = p.cnt(i)
		}
	}
	*p.c.outCounts = counts
}

// report counts, in res, what went before the latest compaction, and
// hands the Event of res to WithOnTrim when the trim dropped, elided or
// swept anything.
func report(res *Result, o *options, c *call) {
	if c.pre.messages > 0 {
		res.DroppedMessages += c.pre.messages
		res.DroppedTurns += c.pre.turns
		res.Trimmed = true
	}
	if o.onTrim != nil && (res.Trimmed || res.OrphansRemoved > 0) {
		o.onTrim(newEvent(res, c.reason, c.attempt, o.labels))
	}
}

// abandon ends a lazy plan that met an invalid message (its error is the
// trim's) or orphans: then the counts made so far go to c.memo, by index
// into the input, and the full path plans again without counting them.
func (p *planner) abandon(res Result) (Result, error, bool) {
	if p.err != nil {
		return res, p.err, true
	}
	memo := make([]int, len(p.src))
	for i := range memo {
		memo[i] = -1
	}
	for j, c := range p.sc.fast {
		memo[p.orig(p.n-1-j)] = c
	}
	for i, c := range p.sc.pre {
		memo[p.orig(i)] = c
	}
	for j, c := range p.sc.rc {
		memo[p.orig(p.n-1-j)] = c
	}
	p.c.memo = memo // sc.call's: trimToBudget hands it to the full path
	return res, nil, false
}

// measure counts the history as far as the decision needs (newest first,
// stopping once no older turn can be kept, unless everything must be
// counted), settles the budget (RecoverOverflow derives it from the
// count), and reports whether every message was counted and whether the
// view is sent as it is: it fits, or nothing can be dropped.
func (p *planner) measure(budget int) (complete, fits bool) {
	o, c := p.o, p.c
	ladder := o.elide != nil || o.stepTrim
	// Count newest first and stop once the decision is made, unless the
	// whole count is needed: for the budget (RecoverOverflow), on request
	// (WithFullCount), or when nothing could be dropped anyway.
	all := c.budgetFor != nil || o.fullCount || c.prune || p.turns == 0 || (p.turns == 1 && !ladder)
	p.target = p.aim(budget)
	complete = p.countSuffix(p.ceiling(budget), all)
	if c.budgetFor != nil {
		budget = max(c.budgetFor(p.total), 1)
	}
	p.budget = budget
	// A capped count stands for "more than any budget": make sure the
	// comparison says so.
	if p.capped {
		budget = min(budget, p.capPer-1)
	}
	p.cmpBudget = budget
	p.target = p.aim(budget)
	prune := c.prune && o.elide != nil && p.turns > 0
	// A background summary being swapped in (call.minCut) drops the turns
	// it covers even when the history fits: the swap is a maintenance point.
	swap := p.minTurn() > 0
	fits = complete && !prune && !swap && (p.total <= p.ceiling(budget) || p.turns == 0 || (p.turns == 1 && !ladder))
	if !fits && c.pruneOver {
		c.prune = true // over budget: a maintenance point
	}
	return complete, fits
}

// aim returns the size a trim of a history over ceiling(budget) goes down
// to: the low-water mark or trigger of the options, or the budget itself
// for a recovery, which aims at the provider's number (hysteresis is for
// the planned trims that follow).
func (p *planner) aim(budget int) int {
	if p.c.exact {
		return budget
	}
	return p.o.target(budget)
}

// ceiling returns the size above which a history is trimmed: the trigger's
// share of the budget, or the budget itself for a recovery.
func (p *planner) ceiling(budget int) int {
	if p.c.exact {
		return budget
	}
	return p.o.limit(budget)
}

// decide makes the plan: which turns, steps and results go. It returns
// the planned output (see items), the elision candidates chosen with
// their positions in it, and its tokens.
func (p *planner) decide() (items, elide, at []int, tokens int) {
	p.countCrumb()
	p.chooseTurns()
	if p.o.stepTrim && p.over() {
		p.chooseSteps()
	}
	items = p.items()
	tokens, elide, at = p.chooseElisions(items)
	if e := p.o.elide; e != nil && e.Cut {
		tokens = p.chooseCuts(items, elide, at, tokens, p.cmpBudget)
	}
	return items, elide, at, tokens
}

// archive hands the originals of the results the plan elides to
// ElideOptions.Archive and Store, unless the call archives nothing.
func (p *planner) archive(elide []int) error {
	if p.o.elide == nil || len(elide)+len(p.cuts) == 0 || p.c.noArchive {
		return nil
	}
	chosen := make([]elideCand, len(elide), len(elide)+len(p.cuts))
	for i, c := range elide {
		chosen[i] = p.cands[c]
	}
	if len(p.cuts) > 0 {
		// Cut results go with the elided ones, oldest first.
		for _, k := range p.cuts {
			chosen = append(chosen, elideCand{idx: k.idx, owner: -1})
		}
		slices.SortFunc(chosen, func(a, b elideCand) int { return a.idx - b.idx })
	}
	return archive(p.view, chosen, p.o.elide)
}

// fromCompaction returns the view from the latest compaction on (see
// cutAt), its index into the input, and what it leaves out. With
// sweepAgain, results whose calls stood before the compaction are swept
// out of it too, and counted.
func (p *planner) fromCompaction(sweepAgain bool) ([]Message, []int, dropCount, int) {
	index := p.index
	if index == nil {
		index = identity(p.n)
	}
	view, idx, pre := cutAt(p.view, index, p.lead, p.compact, p.starts)
	if !sweepAgain {
		return view, idx, pre, 0
	}
	out, sidx, rep := sweep(view, true)
	if out == nil {
		return view, idx, pre, 0
	}
	for j, i := range sidx {
		sidx[j] = idx[i]
	}
	return out, sidx, pre, rep.Total()
}

// cutAt returns view from its latest compaction (at compact) on: the
// leading block (lead messages), then the compaction and everything after
// it, with its index into the input (index maps view to it; nil: the
// identity), and what it leaves out: the messages between, and the turns
// wholly among them (starts are view's turn starts). The turn the
// compaction stands in goes on after it, unless a turn starts right after.
func cutAt(view []Message, index []int, lead, compact int, starts []int) ([]Message, []int, dropCount) {
	n := len(view)
	keep := lead + n - compact
	out := make([]Message, 0, keep)
	out = append(append(out, view[:lead]...), view[compact:]...)
	idx := make([]int, 0, keep)
	at := func(i int) int {
		if index == nil {
			return i
		}
		return index[i]
	}
	for i := range lead {
		idx = append(idx, at(i))
	}
	for i := compact; i < n; i++ {
		idx = append(idx, at(i))
	}
	turns, _ := slices.BinarySearch(starts, compact)
	if _, next := slices.BinarySearch(starts, compact+1); !next && compact+1 < n {
		turns--
	}
	return out, idx, dropCount{messages: compact - lead, turns: max(turns, 0)}
}
