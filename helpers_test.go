package history

import (
	"strings"
	"testing"
)

// Test notation: one string per message.
//
//	S:text  system            U:text  user           A:text  assistant
//	A:text>c1,c2  assistant calling c1 and c2        T:c1    tool result for c1
//	B       default breadcrumb                       B:text  breadcrumb with text
//	N:text  nudge (user role)                        M:text  summary (user role)
func parse(t testing.TB, specs ...string) []Message {
	t.Helper()
	msgs := make([]Message, 0, len(specs))
	for _, s := range specs {
		msgs = append(msgs, parseOne(s))
	}
	return msgs
}

func parseOne(s string) Message {
	kind, text, _ := strings.Cut(s, ":")
	switch kind {
	case "S":
		return Message{Role: RoleSystem, Content: text}
	case "U":
		return Message{Role: RoleUser, Content: text}
	case "A":
		text, calls, ok := strings.Cut(text, ">")
		m := Message{Role: RoleAssistant, Content: text}
		if ok {
			for _, id := range strings.Split(calls, ",") {
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "fn", Arguments: `{"id":"` + id + `"}`})
			}
		}
		return m
	case "T":
		return Message{Role: RoleTool, ToolCallID: text, Content: "result of " + text}
	case "B":
		if text == "" {
			return Breadcrumb()
		}
		return Message{Role: RoleUser, Content: text, Kind: KindBreadcrumb}
	case "N":
		return Message{Role: RoleUser, Content: text, Kind: KindNudge}
	case "M":
		return Message{Role: RoleUser, Content: text, Kind: KindSummary}
	}
	panic("bad test spec " + s)
}

// render is the inverse of parse (breadcrumbs with the default text render
// as "B").
func render(msgs []Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case m.Kind == KindBreadcrumb && m.Content == BreadcrumbText:
			out = append(out, "B")
		case m.Kind == KindBreadcrumb:
			out = append(out, "B:"+m.Content)
		case m.Kind == KindNudge:
			out = append(out, "N:"+m.Content)
		case m.Kind == KindSummary:
			out = append(out, "M:"+m.Content)
		case m.Role == RoleSystem:
			out = append(out, "S:"+m.Content)
		case m.Role == RoleUser:
			out = append(out, "U:"+m.Content)
		case m.Role == RoleTool:
			out = append(out, "T:"+m.ToolCallID)
		case m.Role == RoleAssistant:
			s := "A:" + m.Content
			for i, c := range m.ToolCalls {
				if i == 0 {
					s += ">"
				} else {
					s += ","
				}
				s += c.ID
			}
			out = append(out, s)
		}
	}
	return out
}

// unit costs 10 tokens per message, whatever it holds, so budgets in tests
// read as message counts.
var unit = CounterFunc(func(Message) int { return 10 })

// clone deep-copies msgs so tests can prove the input was not modified.
func clone(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Parts = append([]Part(nil), m.Parts...)
		m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
		out[i] = m
	}
	return out
}

// isIdentity reports whether kept is 0, 1, ..., n-1.
func isIdentity(kept []int, n int) bool {
	if len(kept) != n {
		return false
	}
	for i, k := range kept {
		if k != i {
			return false
		}
	}
	return true
}
