// This file owns the check of a remembered plan against the transcript:
// the invariants a fresh trim keeps, checked before a plan is reused, so
// that a state restored from elsewhere (corrupt past its checksum, forged,
// or another conversation's) never shapes a request no trim would send.

package history

import (
	"slices"
	"unicode/utf8"
)

// rangeSum returns a hash of msgs, in order: what a summary covers.
func rangeSum(msgs []Message) uint64 {
	var h sum64
	h.num(int64(len(msgs)))
	for i := range msgs {
		h.num(int64(messageSum(&msgs[i])))
	}
	return h.sum()
}

// applies reports whether the plan was made for a transcript msgs
// extends: as long, and the messages its anchors name unchanged.
func (st *trimState) applies(msgs []Message) bool {
	if st.n > len(msgs) {
		return false
	}
	for _, a := range st.anchors {
		if messageSum(&msgs[a.i]) != a.sum {
			return false
		}
	}
	return true
}

// fault returns why the plan st, applied to msgs (a transcript it
// applies to), would send what no trim of msgs under o sends, or "" when
// it keeps what a fresh trim keeps. With the plan's view (the plan's
// messages before its tail, then every message from the tail on), in
// time linear in the plan and the latest turn:
//
//   - the leading block (system prompt, summaries, old breadcrumbs, which
//     may be replaced) comes first, in order;
//   - then, before the kept turns, only notices (the options' breadcrumbs,
//     the summary in sum) and the messages a trim lifts there: pins, and
//     summaries of the transcript (the hoisted one), in input order;
//   - the rest ascends, with at most the step breadcrumb inside it;
//   - no message is sent twice, every pin and the latest turn's opening
//     message are sent, and neither is elided nor changed;
//   - placeholders stand only for tool results sent, cleared arguments
//     only for calls of assistant messages sent, in the cleared form;
//   - the anchors are those remember records, and the breadcrumbs replaced
//     are breadcrumbs not sent.
//
// The pairing of tool calls and results is not checked here: reuse sweeps
// the view like any trim (see checkRestored under WithoutOrphanSweep).
func (st *trimState) fault(msgs []Message, sum *summaryState, o *options) string {
	plan, n, tail := st.plan, st.n, st.tail
	// The view sends plan[:f], then msgs[tail:]; what the plan holds from
	// f on must be the tail's own messages, ascending.
	f := 0
	for f < len(plan) && plan[f] < tail {
		f++
	}
	for j := f; j < len(plan); j++ {
		if plan[j] < tail || (j > f && plan[j] <= plan[j-1]) {
			return "a plan that does not end with its tail"
		}
	}
	eff := plan[:f]
	sent := make([]uint64, (tail+63)/64)
	for _, k := range eff {
		if k < 0 {
			continue
		}
		if sent[k/64]&(1<<(k%64)) != 0 {
			return "a plan that sends a message twice"
		}
		sent[k/64] |= 1 << (k % 64)
	}
	isSent := func(i int) bool { return i >= tail || sent[i/64]&(1<<(i%64)) != 0 }
	lead := leadEnd(msgs[:n])
	// The leading block first: p is where it ends in the view.
	p := 0
	at := func(p int) int {
		if p < f {
			return eff[p]
		}
		return tail + p - f
	}
	total := f + len(msgs) - tail
	for i := range lead {
		if p < total && at(p) == i {
			p++
			continue
		}
		if msgs[i].Kind != KindBreadcrumb {
			return "a plan that leaves out the system prompt, or puts something before it"
		}
	}
	// The kept turns: the longest ascending run at the end of eff (which
	// the tail continues), with at most one notice inside, the step
	// breadcrumb, between two messages. (The first notice met from the
	// end is the last of the plan's notices.)
	stepCrumb := o.stepBreadcrumb()
	m, next, step := f, tail, -1
	for j := f - 1; j >= 0; j-- {
		k := eff[j]
		if k < 0 {
			if step >= 0 || (j == f-1 && tail >= n) || o.noBreadcrumb || !o.stepTrim ||
				!equal(&st.notices[len(st.notices)-1], &stepCrumb) {
				break
			}
			step = j
			continue
		}
		if k >= next {
			break
		}
		next, m = k, j
	}
	if step < m {
		step = -1 // it heads the run: a notice before the kept turns
	}
	crumbs, sums, ni := 0, 0, 0
	lastPinned, lastOther := -1, -1
	for j, k := range eff {
		if k < 0 {
			msg := &st.notices[ni]
			ni++
			switch {
			case j == step: // the step breadcrumb, checked above
			case sum.msg != nil && o.summarizer != nil && equal(msg, sum.msg):
				sums++
			case !o.noBreadcrumb && (equal(msg, &o.breadcrumb) || (o.stepTrim && equal(msg, &stepCrumb))):
				crumbs++
			default:
				return "a notice this Trimmer does not write"
			}
			continue
		}
		switch {
		case j < p: // the leading block
		case j < m:
			// Lifted ahead of the kept turns: system messages and summaries
			// (pinned ones, and the hoisted summary) in input order, then
			// the other pins in input order.
			if k < lead {
				return "a plan that sends a message out of order"
			}
			if _, pin := slices.BinarySearch(o.pins, k); !pin && msgs[k].Kind != KindSummary {
				return "a plan that sends a message out of order"
			}
			if isPinned(msgs[k]) {
				if lastOther >= 0 || k <= lastPinned {
					return "a plan that sends a message out of order"
				}
				lastPinned = k
			} else {
				if k <= lastOther {
					return "a plan that sends a message out of order"
				}
				lastOther = k
			}
		case k < lead:
			return "a plan that sends a message out of order"
		}
	}
	if crumbs > 1 || sums > 1 {
		return "more notices than a trim writes"
	}
	for _, pin := range o.pins {
		if pin >= len(msgs) {
			break
		}
		if !isSent(pin) || st.changes(pin) {
			return "a plan that leaves out a pinned message"
		}
	}
	for i := len(msgs) - 1; i >= lead; i-- {
		if isTurnStart(msgs[i], o.turnStart) {
			if !isSent(i) || st.changes(i) {
				return "a plan that leaves out the latest request"
			}
			break
		}
	}
	for k := range st.elided {
		if k >= n || !isSent(k) || msgs[k].Role != RoleTool || msgs[k].Kind == KindElided {
			return "a placeholder for a message that is not a tool result sent"
		}
	}
	for k, calls := range st.cleared {
		if k >= n || !isSent(k) || msgs[k].Role != RoleAssistant {
			return "cleared arguments for a message that is not an assistant message sent"
		}
		for _, c := range calls {
			if !clearedForm(c.Arguments) || !slices.ContainsFunc(msgs[k].ToolCalls, func(tc ToolCall) bool { return tc.ID == c.ID }) {
				return "arguments that are not a call's cleared arguments"
			}
		}
	}
	for _, k := range st.replaced {
		if k >= n || isSent(k) || msgs[k].Kind != KindBreadcrumb {
			return "a replaced breadcrumb that is not one"
		}
	}
	// The anchors remember records: where the plan resumes after a gap,
	// and the transcript's last message.
	ai := 0
	for j, k := range plan {
		if k >= 0 && (j == 0 || plan[j-1] != k-1) {
			if ai >= len(st.anchors) || st.anchors[ai].i != k {
				return "anchors that are not the plan's"
			}
			ai++
		}
	}
	if ai != len(st.anchors)-1 || st.anchors[ai].i != n-1 {
		return "anchors that are not the plan's"
	}
	return ""
}

// clearedForm reports whether args are exactly what clearedArguments
// writes: its prefix, a count, its suffix.
func clearedForm(args string) bool {
	if !isClearedArguments(args) || len(args) <= len(clearedArgsPrefix)+len(clearedArgsSuffix) {
		return false
	}
	for _, c := range []byte(args[len(clearedArgsPrefix) : len(args)-len(clearedArgsSuffix)]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkRestored checks what UnmarshalBinary restored against msgs, the
// first transcript the Trimmer trims after it: the summary must cover
// the very messages it was made of, and the plan (when it applies to
// msgs) must keep what a fresh trim keeps (fault), send text the
// Trimmer's own way (placeholders in valid UTF-8 when their result is)
// and, without the orphan sweep, break no tool pair the transcript keeps.
// A state that fails is dropped, plan and summary, and the refusal kept
// for takeRefusal. t.mu is held.
func (t *Trimmer) checkRestored(msgs []Message, o *options) {
	t.restored = false
	if o.err != nil {
		return // the trim fails on its options, and the state is unused
	}
	reason := ""
	st, sum := &t.st, &t.sum
	if sum.msg != nil && sum.upTo <= len(msgs) && rangeSum(msgs[sum.from:sum.upTo]) != sum.covered {
		reason = "a summary of other messages than the transcript's"
	}
	if reason == "" && st.n > 0 && st.applies(msgs) {
		reason = st.fault(msgs, sum, o)
		if reason == "" {
			reason = st.textFault(msgs)
		}
		if reason == "" && o.noSweep {
			if v := st.view(msgs); hasOrphans(v.msgs) && !hasOrphans(msgs) {
				reason = "a plan that breaks a tool pair"
			}
		}
	}
	if reason != "" {
		t.st, t.sum, t.prevKept = trimState{}, summaryState{}, nil
		t.refusal = &StateError{Reason: reason}
	}
}

// textFault returns why a placeholder of st is not text the Trimmer
// writes for its result: invalid UTF-8 where the result and the call it
// answers are valid (the elision cuts on rune boundaries). "" otherwise.
func (st *trimState) textFault(msgs []Message) string {
	for k, text := range st.elided {
		if utf8.ValidString(text) || !messageUTF8(&msgs[k]) {
			continue
		}
		j := k - 1
		for j >= 0 && msgs[j].Role != RoleAssistant {
			j--
		}
		if j < 0 || messageUTF8(&msgs[j]) {
			return "a placeholder in invalid UTF-8"
		}
	}
	return ""
}

// messageUTF8 reports whether every text of m is valid UTF-8.
func messageUTF8(m *Message) bool {
	if !utf8.ValidString(m.Content) || !utf8.ValidString(m.Name) {
		return false
	}
	for _, p := range m.Parts {
		if !utf8.ValidString(p.Text) {
			return false
		}
	}
	for _, c := range m.ToolCalls {
		if !utf8.ValidString(c.Name) || !utf8.ValidString(c.Arguments) {
			return false
		}
	}
	return true
}

// takeRefusal returns, and forgets, the refusal of the state restored
// into t that its last Trim found (see checkRestored): a *StateError
// wrapping ErrInvalidState, or nil.
func (t *Trimmer) takeRefusal() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.refusal
	t.refusal = nil
	return err
}
