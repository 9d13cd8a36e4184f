package main

import (
	"strings"

	"github.com/histrim/history"
)

// A fate is what a trim did to one message: one row of the fates table.
// The HTML report draws every message with its fate's colour and mark,
// names it in its legend and tables, and classifies a message with the
// rows' match functions, which are mutually exclusive: exactly one row
// accepts any message (TestFatesExclusive holds them to it), so the order
// of the rows is only the order of the legend. A new fate (a new rung of
// the ladder) is one more row.
type fate struct {
	// Name is the fate's stable name: the report's data-fate attribute,
	// its CSS class and the text of its tables.
	Name string
	// Help is the legend's one-line explanation.
	Help string
	// Color fills the fate's pattern; Mark is the shape drawn over it in
	// Ink (see the marks in report.html.tmpl), so that no two fates differ
	// by colour alone. The colours are the Okabe-Ito palette, told apart
	// with the common colour-vision deficiencies.
	Color, Mark, Ink string
	// match reports whether a message has this fate; nil means no message
	// can have it yet (the row is ready for a rung the core does not have).
	match func(*msgFacts) bool
}

// msgFacts is what classifying one message needs to know.
type msgFacts struct {
	// in is the input message, nil for a message the trim inserted.
	in *history.Message
	// sent is the message as sent, nil when it was not sent.
	sent *history.Message
	// swept reports that the orphan sweep removed it (it is not sent).
	swept bool
	// lifted reports that it was sent although its turn's opening message
	// was not: a summary moved into the prefix, a pinned message.
	lifted bool
	// prefix reports that it is in the prefix: the leading system
	// messages, pinned summaries and breadcrumbs.
	prefix bool
}

// fates is the table; its order is the legend's.
var fates = []fate{
	{Name: "kept", Help: "sent as it was", Color: "#0072B2", Mark: "solid", Ink: "#0072B2",
		match: func(f *msgFacts) bool { return f.sent != nil && !f.prefix && !f.lifted && !changed(f) }},
	{Name: "pinned", Help: "always kept: the prefix (system prompt, pinned summaries), or lifted out of a dropped turn", Color: "#009E73", Mark: "vlines", Ink: "#ffffff",
		match: func(f *msgFacts) bool { return f.sent != nil && (f.prefix || f.lifted) && !changed(f) }},
	{Name: "breadcrumb", Help: "the notice that tells the model turns or steps were omitted", Color: "#CC79A7", Mark: "hlines", Ink: "#ffffff",
		match: func(f *msgFacts) bool { return f.sent != nil && f.sent.Kind == history.KindBreadcrumb }},
	{Name: "summary", Help: "a summary, written for what was dropped or held by the transcript", Color: "#56B4E9", Mark: "grid", Ink: "#ffffff",
		match: func(f *msgFacts) bool { return f.sent != nil && f.sent.Kind == history.KindSummary }},
	{Name: "elided", Help: "a tool result replaced by a placeholder, with its digest (the transcript keeps its original)", Color: "#E69F00", Mark: "dots", Ink: "#5a3d00",
		match: func(f *msgFacts) bool { return f.sent != nil && elided(f) && !cut(f) }},
	// cut: a result shortened to a head and tail digest (ElideOptions.Cut).
	// The core marks it KindElided, so that adapters rebuild it as they
	// rebuild an elided result; its text starts with the cut marker.
	{Name: "cut", Help: "a tool result cut to a head and tail digest to fit (the transcript keeps its original)", Color: "#D55E00", Mark: "cross", Ink: "#ffffff",
		match: func(f *msgFacts) bool { return f.sent != nil && elided(f) && cut(f) }},
	{Name: "cleared", Help: "an assistant message whose calls' large arguments were cleared", Color: "#F0E442", Mark: "bdiag", Ink: "#6b6400",
		match: func(f *msgFacts) bool { return f.sent != nil && f.in != nil && argumentsCleared(f.in, f.sent) }},
	{Name: "swept", Help: "removed by the orphan sweep: a tool call or result without its pair", Color: "#000000", Mark: "checker", Ink: "#ffffff",
		match: func(f *msgFacts) bool { return f.sent == nil && f.swept }},
	{Name: "dropped", Help: "left out with its turn or step", Color: "#BBBBBB", Mark: "hatch", Ink: "#555555",
		match: func(f *msgFacts) bool { return f.sent == nil && !f.swept }},
}

// fateOf returns the index in fates of the row that accepts f, or -1
// when none does (a message sent changed in a way no row names; the
// tests make sure there is none).
func fateOf(f *msgFacts) int {
	for i := range fates {
		if fates[i].match != nil && fates[i].match(f) {
			return i
		}
	}
	return -1
}

// isNotice reports a sent breadcrumb or summary, which have fates of their
// own even in the prefix.
func isNotice(f *msgFacts) bool {
	return f.sent.Kind == history.KindBreadcrumb || f.sent.Kind == history.KindSummary
}

// elided reports a result the trim replaced by a placeholder.
func elided(f *msgFacts) bool {
	return f.in != nil && f.sent.Kind == history.KindElided && f.in.Kind != history.KindElided
}

// cut reports an elided result that the cut rung shortened: its text
// starts with the marker the core documents (ElideOptions.Cut).
func cut(f *msgFacts) bool {
	return strings.HasPrefix(f.sent.Content, "[cut tool result")
}

// changed reports a message sent with other content than the input's: a
// notice the trim inserted, an elided result, cleared arguments.
func changed(f *msgFacts) bool {
	return f.in == nil || isNotice(f) || elided(f) || argumentsCleared(f.in, f.sent)
}

// argumentsCleared reports whether sent, the copy of in that a trim sent,
// carries other arguments than in for a call of the same ID: the
// arguments ElideOptions.ClearArguments replaced. (Calls the orphan sweep
// stripped are missing from sent, not changed.) The trim keeps the calls
// in their order, so one pass over both lists finds every pair.
func argumentsCleared(in, sent *history.Message) bool {
	if sent.Role != history.RoleAssistant {
		return false
	}
	j := 0
	for _, c := range sent.ToolCalls {
		for j < len(in.ToolCalls) && in.ToolCalls[j].ID != c.ID {
			j++
		}
		if j == len(in.ToolCalls) {
			return false
		}
		if in.ToolCalls[j].Arguments != c.Arguments {
			return true
		}
		j++
	}
	return false
}
