// This file owns the Result of a trim and what builds it from a decision:
// the original indices, the dropped messages, the changed positions, and
// Positions, which carries pins over to a later trim of the output.

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
	// ElidedResults counts tool results whose content was replaced
	// ([WithElision]): by a placeholder (and its digest), or by a cut
	// ([ElideOptions.Cut]). They stay in Messages, with [KindElided].
	ElidedResults int
	// CutResults counts, of those, the results cut to a head and tail
	// digest by the last rung of the ladder ([ElideOptions.Cut]).
	CutResults int
	// DroppedInstructions counts the system messages after the prefix
	// (instructions given mid-conversation, such as "answer in French")
	// dropped with their turns or steps: the model no longer sees them.
	// Pin one ([WithPin]) to keep it through every trim; see
	// docs/concepts.md.
	DroppedInstructions int
	// Modified lists, ascending, the positions in Messages of the kept
	// messages that differ from the input message Kept names: a tool
	// result elided under [WithElision], an assistant message whose
	// unanswered tool calls the orphan sweep stripped, or whose calls'
	// arguments were cleared ([ElideOptions.ClearArguments]: same calls,
	// IDs and names, some Arguments replaced; same Kind), or both. Nil
	// when there are none. [ApplyFunc] rebuilds these from Messages.
	Modified []int
}

// materialize fills res with the plan: the messages of items (view
// indices, with the breadcrumbs' markers), the results of elide elided at
// positions at, the calls cleared, the original indices, what was dropped
// and the figures; and tells c.cut and c.outCounts what they ask for.
func (p *planner) materialize(res *Result, items, elide, at []int, tokens int) {
	c, view, index := p.c, p.view, p.index
	if c.outCounts != nil {
		*c.outCounts = p.itemCounts(items, elide, at)
	}
	out, keptView := p.copyItems(items)
	elidedResults, changed := p.patchChanged(out, elide, at)
	replaced := make([]int, len(p.replaced))
	for i, v := range p.replaced {
		replaced[i] = p.orig(v)
	}
	res.Messages, res.Kept = out, items
	if index != nil || len(changed) > 0 {
		res.Modified = stripped(p.src, out, items, changed)
	}
	res.Dropped = dropped(p.src, items, replaced)
	res.DroppedMessages = len(view) - keptView - len(replaced)
	res.DroppedTurns = p.k - p.kp
	res.KeptTurns = p.turns - res.DroppedTurns
	res.DroppedSteps = p.d
	res.ElidedResults = elidedResults + len(p.cuts)
	res.CutResults = len(p.cuts)
	for _, ci := range elide {
		if p.cands[ci].cut {
			res.CutResults++
		}
	}
	res.DroppedInstructions = p.droppedInstructions()
	res.TokensAfter = tokens
	res.Trimmed = p.k > 0 || p.d > 0 || len(elide) > 0 || len(p.cuts) > 0
	if c.cut != nil {
		*c.cut = cutInfo{start: -1, hoist: -1, replaced: replaced, survived: p.swept}
		if p.k > 0 {
			c.cut.start = p.orig(p.start(p.k))
		}
		if p.hoist >= 0 {
			c.cut.hoist = p.orig(p.hoist)
		}
	}
}

// copyItems returns the messages of items (view indices, with the
// breadcrumbs' markers), and how many came from the view; items is
// rewritten in place to the original indices (-1 for a notice). Runs of
// consecutive view indices (nearly all of the output) are copied in bulk.
func (p *planner) copyItems(items []int) (out []Message, keptView int) {
	o, view, index := p.o, p.view, p.index
	out = make([]Message, len(items))
	for j := 0; j < len(items); {
		switch it := items[j]; it {
		case itemTurnCrumb:
			out[j], items[j] = o.breadcrumb, -1
			j++
		case itemStepCrumb:
			out[j], items[j] = o.stepBreadcrumb(), -1
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
	return out, keptView
}

// patchChanged puts into out the results of elide elided (at positions
// at), the results cut and the calls cleared, and returns how many
// results were elided (cut ones not included) and the positions changed.
func (p *planner) patchChanged(out []Message, elide, at []int) (elidedResults int, changed []int) {
	view := p.view
	changed = at
	for e, ci := range elide {
		cand := &p.cands[ci]
		if cand.argsOnly {
			continue
		}
		out[at[e]] = elided(view[cand.idx], cand.text)
		elidedResults++
	}
	if elidedResults < len(elide) || len(p.cuts) > 0 { // results sent as they are are not changed
		changed = make([]int, 0, len(at)+len(p.cuts))
		for e, ci := range elide {
			if !p.cands[ci].argsOnly {
				changed = append(changed, at[e])
			}
		}
	}
	for _, k := range p.cuts {
		out[k.at] = elided(view[k.idx], k.text)
		changed = append(changed, k.at)
	}
	if len(p.cleared) > 0 {
		changed = slices.Clip(changed)
		for _, g := range p.cleared {
			out[g.pos] = g.msg
			changed = append(changed, g.pos)
		}
	}
	return elidedResults, changed
}

// itemCounts returns the count of every message of the planned output,
// as sent: notices, elided results and cleared calls at their own counts.
func (p *planner) itemCounts(items, elide, at []int) []int {
	counts := make([]int, len(items))
	for j, it := range items {
		switch it {
		case itemTurnCrumb:
			counts[j] = p.crumbTok
		case itemStepCrumb:
			counts[j] = p.stepCrumbTok()
		default:
			counts[j] = p.cnt(it)
		}
	}
	for e, ci := range elide {
		counts[at[e]] -= p.cands[ci].saved - p.cands[ci].argSaved
	}
	for _, g := range p.cleared {
		counts[g.pos] = g.count
	}
	for _, k := range p.cuts {
		counts[k.at] -= k.saved
	}
	return counts
}

// orig returns the input index of view index i.
func (p *planner) orig(i int) int {
	if p.index == nil {
		return i
	}
	return p.index[i]
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
