// This file owns what a Trimmer remembers of its plan (trimState), how it
// checks and reuses that plan on the next call (reuse), and how it
// remembers a new one (remember).

package history

import "slices"

// trimState is the remembered plan: what the last fresh trim sent, as
// positions in the transcript. The zero value means no plan: the next call
// trims from scratch.
type trimState struct {
	// n is the length of the transcript the plan was made for; every
	// message from n on is new and is appended after the plan.
	n int
	// tail is where the run of messages the plan sends whole (or the sweep
	// removed) ends the transcript: from tail on, reuse sends every message,
	// elided ones as placeholders, and sweeps again.
	tail int
	// plan is that trim's Result.Kept: indices into the transcript, -1
	// where it inserted a notice (notices holds them, in order).
	plan    []int
	notices []Message
	// elided maps each transcript index whose result the plan elided to
	// its placeholder text, and cleared each transcript index of an
	// assistant message whose calls' arguments it cleared to those calls
	// (ID and the new Arguments).
	elided  map[int]string
	cleared map[int][]ToolCall
	// anchors are hashes of the transcript's messages where the plan
	// resumes after a gap, and of its last message, with their indices:
	// reuse checks them, in time proportional to their number.
	anchors []anchor
	// replaced are the breadcrumbs of the transcript the plan's notices
	// replaced (not listed in Dropped).
	replaced []int
	// The figures of what the plan leaves out, as counted when it was made.
	saved           int // TokensBefore - TokensAfter of that trim, -1 when not counted
	droppedMessages int
	droppedTurns    int
	droppedSteps    int
}

// anchor is the hash (messageSum) of the transcript's message at index i.
type anchor struct {
	i   int
	sum uint64
}

// reuse returns the Result of the remembered plan applied to msgs, with
// every message after the plan appended, when the plan still applies (see
// Safety in the [Trimmer] documentation), keeps what a fresh trim keeps
// (fault: sum is the summary the Trimmer holds) and fits budget. When it
// does not, it returns the counts it made, by index into msgs (negative:
// not counted), for the fresh trim.
func (t *Trimmer) reuse(msgs []Message, budget int, st *trimState, sum *summaryState, opts *options) (Result, bool, []int) {
	if !st.applies(msgs) || st.fault(msgs, sum, opts) != "" {
		return Result{}, false, nil
	}
	v := st.view(msgs)
	// Validate, sweep and count the view exactly as a trim does; if it
	// does not fit as it is, the caller needs a new plan. This pass only
	// checks: no event, no elision (whose Archive callback has effects),
	// no step trimming, no pins (the pinned messages are in the view). Its
	// counts of the caller's own messages are recorded for that new plan.
	o := *opts
	o.onTrim, o.elide, o.stepTrim, o.pins = nil, nil, false, nil
	c := &call{reason: ReasonBudget, record: make([]int, len(v.msgs))}
	for i := range c.record {
		c.record[i] = -1
	}
	r, err := trimToBudget(v.msgs, budget, &o, c)
	// Over the trigger the check may still send the view (a single turn
	// it cannot cut without the ladder): that too needs a new plan.
	if err != nil || r.Trimmed || r.TokensAfter > o.limit(r.Budget) {
		return Result{}, false, v.memo(len(msgs), c.record)
	}
	return v.result(msgs, st, r), true, nil
}

// planView is a remembered plan applied to a transcript: the plan's
// messages, then every message after it; index maps them back to the
// transcript (-1: a notice), and changed marks the plan's changed copies
// (elided results, cleared arguments; nil when there are none).
type planView struct {
	msgs    []Message
	index   []int
	changed []bool
}

// view applies the plan to msgs.
func (st *trimState) view(msgs []Message) planView {
	n := len(st.plan) + len(msgs) - st.n
	v := planView{msgs: make([]Message, 0, n), index: make([]int, 0, n)}
	if len(st.elided) > 0 || len(st.cleared) > 0 {
		v.changed = make([]bool, 0, n)
	}
	add := func(m Message, i int) {
		v.msgs = append(v.msgs, m)
		v.index = append(v.index, i)
		if v.changed != nil {
			v.changed = append(v.changed, i >= 0 && st.changes(i))
		}
	}
	crumb := 0
	for _, i := range st.plan {
		if i >= st.tail {
			break // the tail follows, whole
		}
		if i < 0 {
			add(st.notices[crumb], i)
			crumb++
		} else {
			add(st.apply(msgs, i), i)
		}
	}
	for i := st.tail; i < len(msgs); i++ {
		add(st.apply(msgs, i), i)
	}
	return v
}

// memo returns the counts a check of the view recorded, by index into a
// transcript of n messages (negative: not counted). Changed copies are
// not counted as their originals.
func (v *planView) memo(n int, record []int) []int {
	memo := make([]int, n)
	for i := range memo {
		memo[i] = -1
	}
	for i, c := range record {
		if v.index[i] >= 0 && (v.changed == nil || !v.changed[i]) {
			memo[v.index[i]] = c
		}
	}
	return memo
}

// result returns the Result of sending the view, r the check's trim of it:
// indices into msgs, and the plan's figures from the trim that made it.
func (v *planView) result(msgs []Message, st *trimState, r Result) Result {
	kept := make([]int, len(r.Kept))
	var modified []int
	for j, k := range r.Kept {
		kept[j] = v.index[k]
		if v.changed != nil && v.changed[k] {
			modified = append(modified, j)
		}
	}
	if len(r.Modified) > 0 {
		modified = append(modified, r.Modified...)
		slices.Sort(modified)
		modified = slices.Compact(modified)
	}
	return Result{
		Messages:        r.Messages,
		Kept:            kept,
		Dropped:         dropped(msgs, kept, st.replaced),
		Trimmed:         true,
		DroppedMessages: st.droppedMessages,
		DroppedTurns:    st.droppedTurns,
		KeptTurns:       r.KeptTurns,
		TokensBefore:    addKnown(r.TokensBefore, st.saved),
		TokensAfter:     r.TokensAfter,
		Budget:          r.Budget,
		OrphansRemoved:  r.OrphansRemoved,
		DroppedSteps:    st.droppedSteps,
		ElidedResults:   len(st.elided),
		CutResults:      cutCount(st.elided),
		Modified:        modified,
	}
}

// apply returns msgs[i] as the plan sends it: the placeholder copy of a
// result it elided, a copy of an assistant message with the arguments it
// cleared (matched by call ID), or the message itself.
func (st *trimState) apply(msgs []Message, i int) Message {
	if text, ok := st.elided[i]; ok {
		return elided(msgs[i], text)
	}
	calls, ok := st.cleared[i]
	if !ok {
		return msgs[i]
	}
	m := msgs[i]
	m.ToolCalls = slices.Clone(m.ToolCalls)
	var x callIndex
	x.reset(m.ToolCalls)
	for _, c := range calls {
		if j := x.find(c.ID); j >= 0 {
			m.ToolCalls[j].Arguments = c.Arguments
		}
	}
	return m
}

// changes reports whether the plan sends a changed copy of msgs[i].
func (st *trimState) changes(i int) bool {
	_, e := st.elided[i]
	_, c := st.cleared[i]
	return e || c
}

// clearedCalls returns the calls of m, a changed copy of orig, whose
// Arguments differ from those of orig's call of the same ID, or nil.
func clearedCalls(m, orig *Message) []ToolCall {
	if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
		return nil
	}
	var x callIndex
	x.reset(orig.ToolCalls)
	var out []ToolCall
	for _, c := range m.ToolCalls {
		if j := x.find(c.ID); j >= 0 && orig.ToolCalls[j].Arguments != c.Arguments {
			out = append(out, ToolCall{ID: c.ID, Arguments: c.Arguments})
		}
	}
	return out
}

// remember returns the state for the Result of a fresh trim of msgs: its
// plan when it dropped or elided anything, no plan otherwise. replaced
// lists the breadcrumbs of msgs the trim replaced.
func remember(msgs []Message, res *Result, cut cutInfo) trimState {
	if !res.Trimmed || len(msgs) == 0 {
		return trimState{}
	}
	st := trimState{
		n:               len(msgs),
		plan:            slices.Clone(res.Kept),
		replaced:        slices.Clone(cut.replaced),
		saved:           -1, // not counted
		droppedMessages: res.DroppedMessages,
		droppedTurns:    res.DroppedTurns,
		droppedSteps:    res.DroppedSteps,
	}
	mod := res.Modified
	for j, k := range res.Kept {
		if len(mod) > 0 && mod[0] == j {
			mod = mod[1:]
			m := &res.Messages[j]
			if m.Kind == KindElided && msgs[k].Kind != KindElided {
				if st.elided == nil {
					st.elided = make(map[int]string)
				}
				st.elided[k] = m.Content
			} else if calls := clearedCalls(m, &msgs[k]); calls != nil {
				if st.cleared == nil {
					st.cleared = make(map[int][]ToolCall)
				}
				st.cleared[k] = calls
			}
		}
		switch {
		case k < 0:
			st.notices = append(st.notices, res.Messages[j])
		case j == 0 || res.Kept[j-1] != k-1:
			st.anchors = append(st.anchors, anchor{k, messageSum(&msgs[k])})
		}
	}
	st.anchors = append(st.anchors, anchor{len(msgs) - 1, messageSum(&msgs[len(msgs)-1])})
	// The tail: the longest run at the end of msgs that the trim did not
	// leave out (every message kept, or removed by the orphan sweep only).
	// Reuse sends it whole, sweeping again, so that a message swept for
	// want of its pair (calls whose results had not arrived) comes back
	// with the pair instead of being lost to the plan.
	kept := make(map[int]bool, len(res.Kept))
	for _, k := range res.Kept {
		kept[k] = true
	}
	st.tail = len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		_, swept := slices.BinarySearch(cut.survived, i)
		swept = cut.survived != nil && !swept
		if !kept[i] && !swept {
			break
		}
		st.tail = i
	}
	// The tail must be the end of the plan: an ascending run after every
	// notice, lifted message and hoisted summary.
	j := len(res.Kept)
	for j > 0 && res.Kept[j-1] >= 0 && (j == len(res.Kept) || res.Kept[j-1] < res.Kept[j]) {
		j--
	}
	if j == len(res.Kept) {
		st.tail = len(msgs)
	} else {
		st.tail = max(st.tail, res.Kept[j])
		for _, k := range res.Kept[:j] {
			st.tail = max(st.tail, k+1)
		}
	}
	if res.TokensBefore >= 0 {
		st.saved = res.TokensBefore - res.TokensAfter
	}
	return st
}

// addKnown returns a+b for counts that are -1 when unknown: unknown if
// either is.
func addKnown(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return satAdd(a, b)
}
