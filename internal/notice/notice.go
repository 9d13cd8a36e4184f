// Package notice is how the SDK adapters recognise the notices a trim
// inserted (the turn notice for dropped turns, the step notice for dropped
// steps) when a history they trimmed comes back to be trimmed again. Where
// a trim places the notices it renders in its output is regroup's part
// (regroup.Apply, regroup.OneForOne).
//
// A trim renders each notice as a native message. Native types have no
// field every provider accepts for a marker, so an adapter recognises its
// notices by how they convert: a converted message that reads exactly as a
// rendered notice does is marked history.KindBreadcrumb, and the core then
// replaces it instead of counting it as a turn, so notices never stack. The
// rule is the same in every adapter; each supplies only how it renders and
// reads back a notice.
package notice

import (
	"slices"

	"github.com/histrim/history"
)

// ReadFunc returns how an adapter's conversion reads the notice b back once
// the adapter has rendered it as a native message: one message for each
// way the adapter may render b (an adapter that picks the role from the
// message that follows has several).
type ReadFunc func(b history.Message) []history.Message

// Mark marks as history.KindBreadcrumb the messages of hist that are
// notices an earlier trim inserted: messages of no kind that carry no tool
// call and no tool call id, and read exactly as a rendered notice does
// (same role, content, name and parts), as read says. The notices a trim
// with opts inserts (history.Breadcrumbs) and the default ones are
// recognised, so a history trimmed with the defaults and then with custom
// notices does not keep the old ones as turns.
//
// The turn notice is recognised only in the leading block, where trims put
// it: among the leading system messages, summaries, provider compactions
// (history.KindCompaction, which the core keeps in the prefix) and
// notices, as the core defines that block. The step notice is recognised wherever it
// stands, since later turns leave it behind.
//
// eligible, when not nil, limits the marking to the messages for which it
// returns true (for example those converted from a native message with a
// single part). Mark modifies hist in place and nothing else. The only
// false positive is a message someone wrote with exactly a notice's text.
func Mark(hist []history.Message, opts []history.Option, read ReadFunc, eligible func(i int) bool) {
	turn, step, _ := history.Breadcrumbs(opts...)
	dturn, dstep, _ := history.Breadcrumbs()
	turns := slices.Concat(read(turn), read(dturn))
	steps := slices.Concat(read(step), read(dstep))
	lead := true
	for i := range hist {
		m := &hist[i]
		if m.Kind == "" && (eligible == nil || eligible(i)) && (Matches(m, steps) || (lead && Matches(m, turns))) {
			m.Kind = history.KindBreadcrumb
		}
		if m.Role != history.RoleSystem && m.Kind != history.KindBreadcrumb && m.Kind != history.KindSummary && m.Kind != history.KindCompaction {
			lead = false
		}
	}
}

// Matches reports whether m, a converted message, reads exactly as one of
// forms: it carries no tool call and no tool call id, and has the role,
// content, name and parts of one of them. Kinds are not compared.
func Matches(m *history.Message, forms []history.Message) bool {
	if len(m.ToolCalls) > 0 || m.ToolCallID != "" {
		return false
	}
	for i := range forms {
		f := &forms[i]
		if m.Role == f.Role && m.Content == f.Content && m.Name == f.Name && slices.Equal(m.Parts, f.Parts) {
			return true
		}
	}
	return false
}
