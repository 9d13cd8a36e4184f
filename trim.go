// This file owns the trim entry points, TrimToRecentTurns and Turns, and the
// Result they return: it validates, sweeps, asks plan.go what to keep, and
// materialises the decision (messages, original indices, dropped messages,
// the event).

package history

import (
	"slices"
	"strconv"
)

// Result is the outcome of a trim: what [TrimToRecentTurns],
// [Trimmer.Trim] and [RecoverOverflow] return.
//
// Kept parallels Messages in every Result: len(Kept) == len(Messages),
// whether or not anything changed, so [Apply] can map it back onto the
// caller's own messages. A Result returned with an error other than a
// *[BudgetError], a *[RecoverError] or [ErrNotOverflow] holds no decision:
// after invalid input, options or budget, or a failed archive, Messages and
// Kept are both nil. After ErrNotOverflow from [RecoverOverflow], Messages is
// the input, untouched, and Kept is 0, 1, 2, ...
//
// What it shares with the input: when nothing was removed or changed,
// Messages is the input slice itself, clipped to its length (no copy is
// made; appending to it cannot write into the caller's array). Otherwise
// Messages and Kept are new slices, and Dropped is either one run of the
// input slice (clipped, when the dropped messages are contiguous) or a new
// slice. In every case the messages in Messages and Dropped are shallow
// copies: their Parts and ToolCalls share backing arrays with the caller's
// messages (except tool calls the sweep stripped, which are new). The library
// never writes to them; treat them as read-only, or [Message.Clone] a message
// before editing its parts or calls.
type Result struct {
	// Messages is the history to send, breadcrumb included when anything was
	// dropped. In a Result that holds a decision it is never empty when the
	// input was not.
	Messages []Message
	// Kept gives, for each element of Messages, its index in the input, or
	// -1 for a message the library inserted (a breadcrumb, or the summary a
	// [Trimmer] placed under [WithSummarizer]). In a Result that
	// holds a decision it has len(Messages) entries; when nothing changed it
	// is 0, 1, 2, ...
	// The indices ascend, except that a summary moved into the prefix (see
	// [Summaries]) and pinned messages lifted out of dropped turns or steps
	// ([WithPin]) may come before messages that precede them in the input.
	// [Apply] uses it to map the decision back onto the caller's own types.
	// Where Messages holds a changed copy of an input message (an elided
	// result, tool calls stripped by the sweep, arguments cleared under
	// [ElideOptions.ClearArguments]), Kept still names the original.
	Kept []int
	// Dropped holds every input message that is not in Messages, oldest
	// first, exactly as the caller gave it, so the caller can archive it.
	// Breadcrumbs the library replaced with a new one are not listed.
	Dropped []Message
	// Trimmed reports that something was dropped or elided to fit the
	// budget: at least one turn, step or tool result. A Result can be
	// Trimmed and still over budget (see [ErrLatestTurnTooLarge]).
	Trimmed bool
	// DroppedMessages counts the messages dropped with whole turns. Messages
	// removed by the orphan sweep are counted in OrphansRemoved instead, so
	// len(Dropped) can exceed DroppedMessages.
	DroppedMessages int
	// DroppedTurns and KeptTurns count whole turns dropped and sent.
	DroppedTurns int
	KeptTurns    int
	// TokensBefore is the count of the history after the orphan sweep and
	// before trimming, or -1 when the trim did not count it all: a trim
	// counts newest first and stops once it knows what to keep, so the
	// dropped part is usually not counted ([WithFullCount] counts it).
	// TokensAfter is the count of Messages, breadcrumb included; it is
	// always exact. Both are sums of [Counter.CountMessage], each count
	// clamped as [TrimToRecentTurns] describes, plus the request's overhead
	// ([WithOverhead], 0 by default): the whole request as the Counter sees
	// it, what [Calibration.Observe] takes.
	TokensBefore int
	TokensAfter  int
	// Budget is the budget that was asked for ([RecoverOverflow]: the
	// budget it derived).
	Budget int
	// OrphansRemoved counts tool results removed and tool calls stripped by
	// the orphan sweep ([SweepReport.Total]).
	OrphansRemoved int
	// DroppedSteps counts steps dropped inside the latest turn ([WithStepTrim]);
	// their messages are included in DroppedMessages.
	DroppedSteps int
	// ElidedResults counts tool results whose content was replaced by a
	// placeholder ([WithElision]). They stay in Messages, with [KindElided].
	ElidedResults int
	// Modified lists, ascending, the positions in Messages of the kept
	// messages that differ from the input message Kept names: a tool
	// result elided under [WithElision], an assistant message whose
	// unanswered tool calls the orphan sweep stripped, or whose calls'
	// arguments were cleared ([ElideOptions.ClearArguments]: same calls,
	// IDs and names, some Arguments replaced; same Kind), or both. Nil
	// when there are none. [ApplyFunc] rebuilds these from Messages.
	Modified []int
}

// TrimToRecentTurns returns the longest suffix of whole turns of msgs that
// fits budget tokens together with the prefix and a breadcrumb.
//
// Step by step:
//
//  1. The options are checked (an *[OptionError] wrapping
//     [ErrInvalidOption]), msgs is validated (a *[MessageError] wrapping
//     [ErrInvalidMessage]) and budget must be positive ([ErrInvalidBudget]);
//     on error the Result is empty.
//  2. The orphan sweep removes unpaired tool results and calls (see
//     [SweepOrphans]), unless [WithoutOrphanSweep].
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
	return trimToBudget(msgs, budget, o)
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

// trimToBudget is the shared implementation of the trim entry points.
func trimToBudget(msgs []Message, budget int, o *options) (Result, error) {
	res := Result{Budget: budget}
	if o.cut != nil {
		*o.cut = cutInfo{start: -1, hoist: -1}
	}
	if o.err != nil {
		return res, o.err
	}
	if budget <= 0 {
		return res, ErrInvalidBudget
	}
	if o.calib != nil && o.budgetFor == nil {
		budget = o.calib.Budget(budget)
		res.Budget = budget
	}
	if err := validate(msgs); err != nil {
		return res, err
	}
	if err := checkPins(msgs, o.pins); err != nil {
		return res, err
	}

	// The view is what the caller would send without trimming: msgs after
	// the orphan sweep. index maps view positions to msgs (nil: identity).
	view, index := msgs, []int(nil)
	if !o.noSweep {
		if out, idx, rep := sweep(msgs, true); out != nil {
			view, index = out, idx
			res.OrphansRemoved = rep.Total()
		}
	}

	sc := scratchPool.Get().(*scratch)
	defer sc.put()
	if o.memo == nil && o.record == nil && o.budgetFor == nil && !o.prune {
		// The common case first: one tight pass, newest first, that
		// either shows the history fits or hands its counts on.
		if total, turns, ok := fitsFast(sc, view, o.limit(budget), o); ok {
			sendView(&res, msgs, view, index)
			res.TokensBefore, res.TokensAfter, res.KeptTurns = total, total, turns
			return res, nil
		}
	}
	p := newPlanner(sc, msgs, view, index, o)
	turns := p.turns
	ladder := o.elide != nil || o.stepTrim
	// Count newest first and stop once the decision is made, unless the
	// whole count is needed: for the budget (RecoverOverflow), on request
	// (WithFullCount), or when nothing could be dropped anyway.
	all := o.budgetFor != nil || o.fullCount || o.prune || turns == 0 || (turns == 1 && !ladder)
	p.target = o.target(budget)
	complete := p.countSuffix(o.limit(budget), all)
	total := p.total
	res.TokensBefore = -1
	if complete {
		res.TokensBefore = total
	}
	if o.budgetFor != nil {
		budget = max(o.budgetFor(total), 1)
		res.Budget = budget
	}
	// A capped count stands for "more than any budget": make sure the
	// comparison says so.
	if p.capped {
		budget = min(budget, p.capPer-1)
	}
	p.target = o.target(budget)

	prune := o.prune && o.elide != nil && turns > 0
	if complete && !prune && (total <= o.limit(budget) || turns == 0 || (turns == 1 && !ladder)) {
		// Fits, or nothing can be dropped: send the (swept) view.
		sendView(&res, msgs, view, index)
		res.TokensAfter = total
		res.KeptTurns = turns
		if total > budget {
			return res, &BudgetError{Need: total, Budget: res.Budget, Pinned: p.pinnedTok - p.extra + p.oldCrumbTok, Overhead: p.extra}
		}
		return res, nil
	}

	if o.pruneOver {
		o.prune = true // over budget: a maintenance point
	}
	p.countCrumb()
	p.chooseTurns()
	if o.stepTrim && p.over() {
		p.chooseSteps()
	}
	items := p.items()
	tokens, elide, at := p.chooseElisions(items)
	if o.elide != nil && len(elide) > 0 && !o.noArchive {
		chosen := make([]elideCand, len(elide))
		for i, c := range elide {
			chosen[i] = p.cands[c]
		}
		if err := archive(view, chosen, o.elide); err != nil {
			return Result{Budget: budget}, err
		}
	}

	if o.outCounts != nil {
		c := make([]int, len(items))
		for j, it := range items {
			switch it {
			case itemTurnCrumb:
				c[j] = p.crumbTok
			case itemStepCrumb:
				c[j] = p.stepCrumbTok()
			default:
				c[j] = p.cnt(it)
			}
		}
		for e, ci := range elide {
			c[at[e]] -= p.cands[ci].saved - p.cands[ci].argSaved
		}
		for _, g := range p.cleared {
			c[g.pos] = g.count
		}
		*o.outCounts = c
	}

	// Materialise: messages, original indices, replaced breadcrumbs. Runs
	// of consecutive view indices (nearly all of the output) are copied in
	// bulk; elided results are patched in afterwards.
	out := make([]Message, len(items))
	keptView := 0
	for j := 0; j < len(items); {
		switch it := items[j]; it {
		case itemTurnCrumb:
			out[j] = o.breadcrumb
			items[j] = -1
			j++
		case itemStepCrumb:
			out[j] = o.stepBreadcrumb()
			items[j] = -1
			j++
		default:
			r := j + 1
			for r < len(items) && items[r] == items[r-1]+1 {
				r++
			}
			copy(out[j:r], view[it:it+r-j])
			keptView += r - j
			for ; j < r; j++ {
				if index != nil {
					items[j] = index[items[j]]
				}
			}
		}
	}
	for e, ci := range elide {
		c := &p.cands[ci]
		out[at[e]] = elided(view[c.idx], c.text)
	}
	changed := at
	if len(p.cleared) > 0 {
		changed = slices.Clip(at)
		for _, g := range p.cleared {
			out[g.pos] = g.msg
			changed = append(changed, g.pos)
		}
	}
	orig := func(i int) int {
		if index == nil {
			return i
		}
		return index[i]
	}
	replaced := make([]int, len(p.replaced))
	for i, v := range p.replaced {
		replaced[i] = orig(v)
	}

	res.Messages = out
	res.Kept = items
	if index != nil || len(changed) > 0 {
		res.Modified = stripped(msgs, out, items, changed)
	}
	res.Dropped = dropped(msgs, items, replaced)
	res.DroppedMessages = len(view) - keptView - len(replaced)
	res.DroppedTurns = p.k - p.kp
	res.KeptTurns = turns - res.DroppedTurns
	res.DroppedSteps = p.d
	res.ElidedResults = len(elide)
	res.TokensAfter = tokens
	res.Trimmed = p.k > 0 || p.d > 0 || len(elide) > 0
	if o.cut != nil {
		*o.cut = cutInfo{start: -1, hoist: -1}
		if p.k > 0 {
			o.cut.start = orig(p.start(p.k))
		}
		if p.hoist >= 0 {
			o.cut.hoist = orig(p.hoist)
		}
		o.cut.replaced = replaced
		o.cut.survived = index
	}

	if o.onTrim != nil && res.Trimmed {
		o.onTrim(newEvent(&res, o.reason, o.attempt, o.labels))
	}
	if res.TokensAfter > budget {
		return res, &BudgetError{Need: res.TokensAfter, Budget: res.Budget, Pinned: p.pinnedTok - p.extra + p.hoistTok + p.pinDrop + p.crumbPart(p.k), Overhead: p.extra}
	}
	return res, nil
}

// sendView sets res to send view, msgs after the orphan sweep, untrimmed:
// index maps view to msgs (nil: view is msgs).
func sendView(res *Result, msgs, view []Message, index []int) {
	res.Messages = view[:len(view):len(view)]
	if index == nil {
		res.Kept = identity(len(view))
		return
	}
	res.Kept = index
	res.Dropped = dropped(msgs, index, nil)
	res.Modified = stripped(msgs, view, index, nil)
}

// stripped returns, ascending, the positions in out of the messages that
// differ from the input message kept names: those whose tool calls the
// orphan sweep stripped, and the positions in changed (elided results,
// assistant messages whose calls' arguments were cleared). Nil when there
// are none.
func stripped(msgs, out []Message, kept, changed []int) []int {
	var mod []int
	for j, k := range kept {
		if k >= 0 && len(out[j].ToolCalls) != len(msgs[k].ToolCalls) {
			mod = append(mod, j)
		}
	}
	if len(changed) == 0 {
		return mod
	}
	mod = append(mod, changed...)
	slices.Sort(mod)
	return slices.Compact(mod)
}

// identity returns 0, 1, ..., n-1.
func identity(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// dropped returns, in order, the messages of msgs whose index is neither
// in kept (-1 entries ignored) nor in replaced (breadcrumbs the trim
// replaced with new ones). Its cost follows the kept indices, not len(msgs):
// when the dropped messages form one run, the result is that run of msgs
// itself (clipped, no copy); otherwise the runs are copied in bulk.
func dropped(msgs []Message, kept, replaced []int) []Message {
	stay := make([]int, 0, len(kept)+len(replaced))
	for _, k := range kept {
		if k >= 0 {
			stay = append(stay, k)
		}
	}
	stay = append(stay, replaced...)
	slices.Sort(stay)
	// The gaps between consecutive kept indices are the dropped runs.
	var runs [][2]int
	n, prev := 0, -1
	for _, k := range append(stay, len(msgs)) {
		if k > prev+1 {
			runs = append(runs, [2]int{prev + 1, k})
			n += k - prev - 1
		}
		prev = max(prev, k)
	}
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return msgs[runs[0][0]:runs[0][1]:runs[0][1]]
	}
	out := make([]Message, 0, n)
	for _, r := range runs {
		out = append(out, msgs[r[0]:r[1]]...)
	}
	return out
}

// checkPins reports the first pin ([WithPin]) that names no message of msgs
// or a message that cannot be kept apart from its turn.
func checkPins(msgs []Message, pins []int) error {
	for _, i := range pins {
		reason := ""
		switch {
		case i >= len(msgs):
			reason = "index " + strconv.Itoa(i) + " is outside the history of " + strconv.Itoa(len(msgs)) + " messages"
		case msgs[i].Role == RoleTool:
			reason = "message " + strconv.Itoa(i) + " is a tool result; it cannot be kept without its call"
		case len(msgs[i].ToolCalls) > 0:
			reason = "message " + strconv.Itoa(i) + " has tool calls; it cannot be kept without their results"
		case msgs[i].Kind == KindBreadcrumb:
			reason = "message " + strconv.Itoa(i) + " is a breadcrumb, which a trim replaces"
		}
		if reason != "" {
			return &OptionError{Option: "WithPin", Reason: reason}
		}
	}
	return nil
}

// Positions returns, for each of the given input indices, its position in
// r.Messages, or -1 when that message was not kept (dropped, or never in
// the input). A runtime that keeps the trimmed output and trims it again
// later uses it to carry its pins over: WithPin(res.Positions(pins...)...).
// It costs O(len(Kept) + len(indices)) and never modifies r.
func (r Result) Positions(indices ...int) []int {
	at := make(map[int]int, len(indices))
	for _, i := range indices {
		at[i] = -1
	}
	for j, k := range r.Kept {
		if _, ok := at[k]; ok && k >= 0 {
			at[k] = j
		}
	}
	out := make([]int, len(indices))
	for n, i := range indices {
		out[n] = at[i]
	}
	return out
}
