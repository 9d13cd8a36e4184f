// This file owns ElideOptions.ClearArguments: the placeholder that stands
// for a call's cleared arguments, what clearing saves, and the assistant
// messages a plan clears.

package history

import (
	"slices"
	"strconv"
	"strings"
)

// clearedArguments returns the arguments that replace arguments costing
// tokens.
func clearedArguments(tokens int) string {
	return clearedArgsPrefix + strconv.Itoa(tokens) + clearedArgsSuffix
}

// isClearedArguments reports whether args are arguments cleared before, so
// that they are never cleared again.
func isClearedArguments(args string) bool {
	return strings.HasPrefix(args, clearedArgsPrefix) && strings.HasSuffix(args, clearedArgsSuffix)
}

// argCounter measures arguments as text with a Counter: the count of an
// assistant message holding only them, less that of an empty one (counted
// once per counter and call).
type argCounter struct {
	empty, emptyRule int
	set, setRule     bool
}

func (a *argCounter) text(c Counter, s string, empty *int, set *bool) int {
	if !*set {
		*empty, *set = clampCount(c.CountMessage(Message{Role: RoleAssistant})), true
	}
	return max(clampCount(c.CountMessage(Message{Role: RoleAssistant, Content: s}))-*empty, 0)
}

// clearing sets, in cand, the call of msgs[owner] that cand answers (by
// id, found in calls) as the one whose arguments eliding cand clears, when
// the options allow it: the arguments are not cleared already, cost at
// least opts.ClearArguments tokens as measured by opts.Counter (or c), and
// cost more than their replacement as measured by c, the budget's Counter.
// The saving, at most maxSaved, is added to cand.saved. The caller checks
// that msgs[owner] may be changed (no reasoning) and that cand answers it.
func (a *argCounter) clearing(cand *elideCand, msgs []Message, owner int, calls *callIndex, id string, opts *ElideOptions, c Counter, maxSaved int) {
	j := calls.find(id)
	if j < 0 {
		return
	}
	args := msgs[owner].ToolCalls[j].Arguments
	if isClearedArguments(args) {
		return
	}
	cost := a.text(c, args, &a.empty, &a.set)
	size := cost
	if opts.Counter != nil {
		size = a.text(opts.Counter, args, &a.emptyRule, &a.setRule)
	}
	if size < opts.ClearArguments {
		return
	}
	text := clearedArguments(size)
	saved := min(cost-a.text(c, text, &a.empty, &a.set), maxSaved)
	if saved <= 0 {
		return
	}
	cand.owner, cand.call, cand.args, cand.argSaved = owner, j, text, saved
	cand.saved += saved
}

// argsOnly returns the candidate that clears, on its own, the arguments of
// the call that tool result m (at index i) answers in msgs[owner] (-1:
// none may be cleared), when m itself is not elided: the large arguments
// of a call whose result is short. The tools ExcludeTools names are left
// alone.
func (a *argCounter) argsOnly(m *Message, i int, msgs []Message, owner int, calls *callIndex, opts *ElideOptions, c Counter, maxSaved int) (elideCand, bool) {
	if owner < 0 || opts.ClearArguments <= 0 || slices.Contains(opts.ExcludeTools, toolName(m, calls)) {
		return elideCand{}, false
	}
	cand := elideCand{idx: i, owner: -1, argsOnly: true, from: -1, fromCall: -1}
	a.clearing(&cand, msgs, owner, calls, m.ToolCallID, opts, c, maxSaved)
	return cand, cand.owner >= 0
}

// clearedOwner is an assistant message whose calls' arguments are cleared:
// the index of the original, the changed copy (a new ToolCalls slice), and,
// in a trim, the copy's position in the output and its count.
type clearedOwner struct {
	idx   int
	msg   Message
	pos   int
	count int
}

// clearCall clears the call cand names (if any) in the copy of its
// assistant message, the last of owners or a new one appended, and reports
// whether it cleared a call not cleared yet. Candidates must come in
// ascending order, so that the results answering one message come
// together.
func clearCall(owners []clearedOwner, msgs []Message, cand *elideCand) ([]clearedOwner, bool) {
	if cand.owner < 0 {
		return owners, false
	}
	if n := len(owners); n == 0 || owners[n-1].idx != cand.owner {
		m := msgs[cand.owner]
		m.ToolCalls = slices.Clone(m.ToolCalls)
		owners = append(owners, clearedOwner{idx: cand.owner, msg: m, pos: -1})
	}
	tc := &owners[len(owners)-1].msg.ToolCalls[cand.call]
	if tc.Arguments == cand.args {
		return owners, false // a second result answering the same call
	}
	tc.Arguments = cand.args
	return owners, true
}
