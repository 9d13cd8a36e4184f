// This file owns the orphan sweep: tool results without their call and calls
// without their results.

package history

// SweepReport counts what [SweepOrphans] removed. The zero value means
// nothing was.
type SweepReport struct {
	// Results is the number of tool results removed because the nearest
	// preceding assistant message of their exchange has no call with their
	// ToolCallID, or because that call was already answered.
	Results int
	// Calls is the number of tool calls stripped from assistant messages
	// because no result answered them.
	Calls int
	// Messages is the number of assistant messages removed because stripping
	// their calls left nothing (no content, no parts).
	Messages int
}

// Total returns Results + Calls: the figure [TrimToRecentTurns] reports as
// [Result.OrphansRemoved].
func (r SweepReport) Total() int { return r.Results + r.Calls }

// SweepOrphans returns msgs without broken tool pairs, the state providers
// reject with an HTTP 400:
//
//   - A tool result is kept only if the nearest preceding assistant message,
//     walking back over tool results and nudges only, has a call with its
//     ToolCallID that no earlier result answered. An ID that appears only in
//     prose does not pair. IDs reused by later exchanges are fine.
//   - A call that no result answers is stripped from its assistant message;
//     an assistant message left with no content, parts or calls is removed.
//     This also repairs back-to-back dispatches, where an assistant message
//     with calls is followed by another before the first is answered.
//
// Parallel calls (several [Message.ToolCalls], their results in any order)
// are handled. The input is never modified: a stripped message is a copy with
// a new ToolCalls slice. When nothing needs removing, SweepOrphans returns msgs
// itself, clipped to its length so that appending to it cannot write into the
// caller's array, and allocates nothing.
func SweepOrphans(msgs []Message) ([]Message, SweepReport) {
	out, _, rep := sweep(msgs, false)
	if out == nil {
		return msgs[:len(msgs):len(msgs)], rep
	}
	return out, rep
}

// sweep implements SweepOrphans. It returns out == nil when msgs is clean.
// With wantIndex, it also returns for each element of out its index in msgs.
func sweep(msgs []Message, wantIndex bool) (out []Message, index []int, rep SweepReport) {
	if !hasOrphans(msgs) {
		return nil, nil, rep
	}
	out = make([]Message, 0, len(msgs))
	if wantIndex {
		index = make([]int, 0, len(msgs))
	}
	var ex exchange
	var calls callIndex
	open := -1 // position in out of the open exchange's assistant message
	closeExchange := func() {
		if open < 0 {
			return
		}
		a := &out[open]
		if n := ex.unanswered(); n > 0 {
			rep.Calls += n
			calls := make([]ToolCall, 0, len(a.ToolCalls)-n)
			for j := range a.ToolCalls {
				if ex.answered(j) {
					calls = append(calls, a.ToolCalls[j])
				}
			}
			if len(calls) == 0 {
				calls = nil
			}
			a.ToolCalls = calls // a is our copy; the caller's slice is untouched
			if a.Content == "" && len(a.Parts) == 0 && len(calls) == 0 {
				rep.Messages++
				out = append(out[:open], out[open+1:]...)
				if wantIndex {
					index = append(index[:open], index[open+1:]...)
				}
			}
		}
		open = -1
	}
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Role == RoleTool:
			if open < 0 || !ex.answer(&calls, m.ToolCallID) {
				rep.Results++
				continue
			}
		case m.Kind == KindNudge:
			// transparent inside an exchange
		default:
			closeExchange()
			if m.Role == RoleAssistant {
				open = len(out)
				ex.reset(len(m.ToolCalls))
				calls.reset(m.ToolCalls)
			}
		}
		out = append(out, *m)
		if wantIndex {
			index = append(index, i)
		}
	}
	closeExchange()
	return out, index, rep
}

// hasOrphans reports whether sweep would change msgs. It allocates nothing
// for exchanges of up to 64 parallel calls.
func hasOrphans(msgs []Message) bool {
	var ex exchange
	var calls callIndex
	open := false
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Role == RoleTool:
			if !open || !ex.answer(&calls, m.ToolCallID) {
				return true
			}
		case m.Kind == KindNudge:
		default:
			if open && ex.unanswered() > 0 {
				return true
			}
			open = m.Role == RoleAssistant
			calls.reset(m.ToolCalls)
			ex.reset(len(m.ToolCalls))
		}
	}
	return open && ex.unanswered() > 0
}

// exchange tracks which calls of one assistant message have been answered.
// Flags for up to 64 calls live in the struct itself, so the common case
// allocates nothing (the struct never points into itself, which would move
// it to the heap).
type exchange struct {
	small [64]bool
	big   []bool // used instead of small for more than 64 calls
	calls int
	n     int // calls answered
}

func (e *exchange) reset(calls int) {
	e.calls, e.n, e.big = calls, 0, nil
	if calls <= len(e.small) {
		clear(e.small[:calls])
	} else {
		e.big = make([]bool, calls)
	}
}

func (e *exchange) flag(j int) *bool {
	if e.big != nil {
		return &e.big[j]
	}
	return &e.small[j]
}

// answer marks the call with the given id answered. It reports false when
// there is no such call or it was answered already. Within one message,
// call IDs are unique (validate checks it), so the first match is the call.
func (e *exchange) answer(calls *callIndex, id string) bool {
	j := calls.find(id)
	if j < 0 {
		return false
	}
	f := e.flag(j)
	if *f {
		return false
	}
	*f = true
	e.n++
	return true
}

func (e *exchange) answered(j int) bool { return *e.flag(j) }

func (e *exchange) unanswered() int { return e.calls - e.n }
