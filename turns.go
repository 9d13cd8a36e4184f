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

// UserWritten is a turn rule for [WithTurnStart]: it reports whether m is
// a user message its user wrote, so that the messages agent runtimes
// inject in the user role do not open turns. Without it, each injected
// message starts a new turn: the latest turn becomes a notification, and
// the request the agent is working on can be dropped with an older turn.
// It returns false for any message that is not a [RoleUser] message of no
// [Kind], and for these forms (leading white space ignored):
//
//   - system reminders: the message is nothing but <system-reminder>
//     blocks (a reminder prepended to the user's own text leaves the
//     message a turn start);
//   - task notifications: <task-notification> (a background task ended);
//   - interrupt markers: "[Request interrupted by user" (Claude Code's
//     "[Request interrupted by user]" and "... for tool use]");
//   - tool-output echoes: <local-command-stdout>, <local-command-stderr>,
//     <local-command-caveat>, <bash-stdout>, <bash-stderr>,
//     "[Tool results]" or "[Tool result", <tool_result>,
//     <function_results>, and SWE-agent's text-protocol observations,
//     whose last lines are "(Current directory: …)" and the "bash-$"
//     prompt.
//
// A message it rejects belongs to the turn it interrupts, like a
// [KindNudge] message; the first message after the prefix still opens the
// first turn. A rule that reads forms can misjudge a user who writes one
// ("[Tool result of my script] ..."), so whatever a turn rule says, a trim
// never drops the latest user message with the steps around it: when the
// rule rejected it, it is kept as a pinned message is. The forms are matched on the message's Content, then on its
// first text part when Content is empty. It reads only the start and end
// of the text, so it costs the same for a message of any size.
func UserWritten(m Message) bool {
	if m.Role != RoleUser || m.Kind != "" {
		return false
	}
	s := m.Content
	if s == "" {
		for _, p := range m.Parts {
			if p.Type == PartText {
				s = p.Text
				break
			}
		}
	}
	s = strings.TrimLeft(s, " \t\r\n")
	for strings.HasPrefix(s, "<system-reminder>") {
		end := strings.Index(s, "</system-reminder>")
		if end < 0 {
			return false // an unclosed reminder: all of it is the reminder
		}
		s = strings.TrimLeft(s[end+len("</system-reminder>"):], " \t\r\n")
		if s == "" {
			return false
		}
	}
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(s, p) {
			return false
		}
	}
	return !sweAgentObservation(s)
}

// injectedPrefixes start the user-role messages runtimes inject (see
// UserWritten).
var injectedPrefixes = [...]string{
	"<task-notification>",
	"[Request interrupted by user",
	"<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
	"<bash-stdout>", "<bash-stderr>",
	"[Tool results]", "[Tool result", "<tool_result", "<function_results>",
}

// sweAgentObservation reports whether s ends as SWE-agent's text-protocol
// observations do: a "(Current directory: …)" line, then the "bash-$"
// prompt.
func sweAgentObservation(s string) bool {
	s = strings.TrimRight(s, " \t\r\n")
	if !strings.HasSuffix(s, "\nbash-$") {
		return false
	}
	s = s[:len(s)-len("\nbash-$")]
	line := s[strings.LastIndexByte(s, '\n')+1:]
	return strings.HasPrefix(line, "(Current directory: ") && strings.HasSuffix(line, ")")
}
