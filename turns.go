// This file owns the structure of a history: the prefix (leadEnd, isPinned),
// the turn rule (isTurnStart, appendTurnStarts) and NormalizeSystem.

package history

import "strings"

// Turn is a half-open range [Start, End) of message indices: one turn of a
// conversation, from a real user message up to (not including) the next, as
// [Turns] reports it. Start < End for every Turn that Turns returns.
type Turn struct {
	// Start is the index of the turn's first message, End the index just
	// past its last.
	Start, End int
}

// Len returns the number of messages in the turn.
func (t Turn) Len() int { return t.End - t.Start }

// appendTurnStarts appends to dst the index of the first message of each
// turn of msgs after the prefix ending at lead, oldest first, and returns
// the extended slice: lead itself, then every later turn start under rule.
// What precedes the first real turn start belongs to the first turn. It
// appends nothing when lead == len(msgs).
func appendTurnStarts(dst []int, msgs []Message, lead int, rule func(Message) bool) []int {
	if lead >= len(msgs) {
		return dst
	}
	dst = append(dst, lead)
	opened := isTurnStart(msgs[lead], rule)
	for i := lead + 1; i < len(msgs); i++ {
		if isTurnStart(msgs[i], rule) {
			if opened {
				dst = append(dst, i)
			}
			opened = true
		}
	}
	return dst
}

// isTurnStart reports whether m opens a turn. Special kinds and tool results
// never do, whatever the custom rule says: a turn that began at a tool
// result would separate it from its call.
func isTurnStart(m Message, rule func(Message) bool) bool {
	if m.Role == RoleTool || m.Kind != "" {
		return false
	}
	if rule != nil {
		return rule(m)
	}
	return m.Role == RoleUser
}

// isPinned reports whether m belongs to the pinned prefix: a system message
// (other than a breadcrumb) or a summary.
func isPinned(m Message) bool {
	return (m.Role == RoleSystem && m.Kind != KindBreadcrumb) || m.Kind == KindSummary || m.Kind == KindCompaction
}

// leadEnd returns the end of the leading block of msgs: the longest run of
// pinned messages and breadcrumbs at the start.
func leadEnd(msgs []Message) int {
	for i := range msgs {
		if !isPinned(msgs[i]) && msgs[i].Kind != KindBreadcrumb {
			return i
		}
	}
	return len(msgs)
}

// NormalizeSystem returns a copy of msgs in which every ordinary system
// message (Kind empty), wherever it stands, is merged in order into one
// system message at the front: contents joined by a blank line, parts
// concatenated, and the Name of the first one kept. Other messages keep their
// relative order. Providers that accept a single system prompt (or only a
// leading one) need this; [TrimToRecentTurns] never moves late system
// messages on its own, so call NormalizeSystem first when you want them
// hoisted. With no system message, the result is a plain copy of msgs. It
// never modifies msgs, and the result is always a new slice.
func NormalizeSystem(msgs []Message) []Message {
	first, count := -1, 0
	for i := range msgs {
		if msgs[i].Role == RoleSystem && msgs[i].Kind == "" {
			if first < 0 {
				first = i
			}
			count++
		}
	}
	out := make([]Message, 0, len(msgs)-max(count-1, 0))
	if count == 0 {
		return append(out, msgs...)
	}
	merged := Message{Role: RoleSystem, Name: msgs[first].Name}
	var b strings.Builder
	for i := range msgs {
		m := &msgs[i]
		if m.Role != RoleSystem || m.Kind != "" {
			continue
		}
		if m.Content != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(m.Content)
		}
		merged.Parts = append(merged.Parts, m.Parts...)
	}
	merged.Content = b.String()
	out = append(out, merged)
	for i := range msgs {
		if msgs[i].Role != RoleSystem || msgs[i].Kind != "" {
			out = append(out, msgs[i])
		}
	}
	return out
}
