package summarize

import "github.com/histrim/history"

// scope is the part of the last request a cache-safe summary request
// summarises: the messages before end (an index into the request's
// conversation; its length when the whole of it goes), of which those at
// kept stay in the conversation (pinned ones, the task's opening request
// for one) and are only named.
type scope struct {
	end  int
	kept []int
}

// locate finds what a summary stands for in prefix, the last request's
// conversation converted: previous (when not nil), then every message of
// dropped, in order. false when one is not there: the last request does
// not hold what is to be summarised, and the plain form must be used. The
// user and assistant messages with text before the end that are neither
// stay (tool results and calls stay only with their pairs, which the
// dropped messages hold or not as a whole).
//
// A message is found by what identifies it, not by all of it, since the
// request may hold it changed by the trim: see same.
func locate(prefix, dropped []history.Message, previous *history.Message) (scope, bool) {
	found := make([]bool, len(prefix))
	j := 0
	if previous != nil {
		want := Text(previous)
		for j < len(prefix) && Text(&prefix[j]) != want {
			j++
		}
		if j == len(prefix) {
			return scope{}, false
		}
		found[j] = true
		j++
	}
	for i := range dropped {
		for j < len(prefix) && !same(&prefix[j], &dropped[i]) {
			j++
		}
		if j == len(prefix) {
			return scope{}, false
		}
		found[j] = true
		j++
	}
	sc := scope{end: j}
	for i := range j {
		m := &prefix[i]
		if !found[i] && (m.Role == history.RoleUser || m.Role == history.RoleAssistant) && m.Kind == "" && Text(m) != "" {
			sc.kept = append(sc.kept, i)
		}
	}
	return sc, true
}

// same reports whether sent, a message of the last request, is m as the
// transcript holds it: the same role, tool call id, and calls (ids and
// names: a trim may clear their arguments), and, but for a tool result
// (which a trim may elide, digest or cut), the same text.
func same(sent, m *history.Message) bool {
	if sent.Role != m.Role || sent.ToolCallID != m.ToolCallID || len(sent.ToolCalls) != len(m.ToolCalls) {
		return false
	}
	for i := range m.ToolCalls {
		if sent.ToolCalls[i].ID != m.ToolCalls[i].ID || sent.ToolCalls[i].Name != m.ToolCalls[i].Name {
			return false
		}
	}
	return m.Role == history.RoleTool || Text(sent) == Text(m)
}
