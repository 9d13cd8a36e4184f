package history

import (
	"reflect"
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
		case m.Role == RoleTool: // elided or not
			out = append(out, "T:"+m.ToolCallID)
		case m.Kind == KindBreadcrumb && m.Content == BreadcrumbText:
			out = append(out, "B")
		case m.Kind != "":
			out = append(out, kindSpec[m.Kind]+":"+m.Content)
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			ids := make([]string, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				ids[i] = c.ID
			}
			out = append(out, "A:"+m.Content+">"+strings.Join(ids, ","))
		default:
			out = append(out, roleSpec[m.Role]+":"+m.Content)
		}
	}
	return out
}

// The letters of the notation, by role (ordinary messages) and by kind.
var (
	roleSpec = map[Role]string{RoleSystem: "S", RoleUser: "U", RoleAssistant: "A"}
	kindSpec = map[Kind]string{KindBreadcrumb: "B", KindNudge: "N", KindSummary: "M"}
)

// unit costs 10 tokens per message, whatever it holds, so budgets in tests
// read as message counts.
var unit = CounterFunc(func(Message) int { return 10 })

// clone deep-copies msgs so tests can prove the input was not modified. It
// keeps nil slices nil and empty ones empty, so that the copy is
// reflect.DeepEqual to the original, and it does not use Message.Clone, so
// that a fault there cannot hide itself.
func clone(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Parts != nil {
			m.Parts = append(make([]Part, 0, len(m.Parts)), m.Parts...)
		}
		if m.ToolCalls != nil {
			m.ToolCalls = append(make([]ToolCall, 0, len(m.ToolCalls)), m.ToolCalls...)
		}
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

// ofKind returns the indices of the messages of msgs whose Kind is kind, in
// order (nil when there are none).
func ofKind(msgs []Message, kind Kind) []int {
	var idx []int
	for i := range msgs {
		if msgs[i].Kind == kind {
			idx = append(idx, i)
		}
	}
	return idx
}

// eventOf returns the Event a trim that produced r must emit, for reason and
// attempt, without labels. It is written out field by field, apart from the
// library's newEvent, so that the two check each other.
func eventOf(r Result, reason string, attempt int) Event {
	return Event{Type: EventType, Reason: reason, DroppedMessages: r.DroppedMessages, DroppedTurns: r.DroppedTurns,
		KeptTurns: r.KeptTurns, DroppedSteps: r.DroppedSteps, ElidedResults: r.ElidedResults,
		TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, Budget: r.Budget, Attempt: attempt}
}

// stripLabels returns e without its labels, for comparison with eventOf.
func stripLabels(e Event) Event { e.Labels = nil; return e }

// checkResult asserts the structural invariants every Result of a trim of
// in must hold: Kept parallels Messages and names, for each message, the
// input message it is (or -1 for an inserted breadcrumb); no tool pair is
// broken (when swept); inserted breadcrumbs never stack; and every input
// message is kept, listed in Dropped in input order, or a breadcrumb the
// trim replaced.
func checkResult(t testing.TB, in []Message, res Result, swept bool) {
	t.Helper()
	if len(res.Kept) != len(res.Messages) {
		t.Fatalf("len(Kept)=%d, len(Messages)=%d: Kept must parallel Messages", len(res.Kept), len(res.Messages))
	}
	kept := make(map[int]bool, len(res.Kept))
	for i, k := range res.Kept {
		m := res.Messages[i]
		if k < 0 {
			if m.Kind != KindBreadcrumb {
				t.Fatalf("Kept[%d] = -1 but message is %+v", i, m)
			}
			continue
		}
		if k >= len(in) {
			t.Fatalf("Kept[%d] = %d, beyond the %d input messages", i, k, len(in))
		}
		if kept[k] {
			t.Fatalf("Kept names %d twice: %v", k, res.Kept)
		}
		kept[k] = true
		o := in[k]
		if len(m.ToolCalls) != len(o.ToolCalls) {
			o.ToolCalls = m.ToolCalls // the sweep may strip calls
		}
		if m.Kind == KindElided && o.Kind != KindElided {
			o.Content, o.Parts, o.Kind = m.Content, nil, KindElided
		}
		if !reflect.DeepEqual(m, o) {
			t.Fatalf("Messages[%d] is not input[%d]", i, k)
		}
	}
	// No broken pairs: a second sweep finds nothing.
	if _, rep := SweepOrphans(res.Messages); swept && rep != (SweepReport{}) {
		t.Fatalf("trimmed history still has orphans: %+v\n%v", rep, render(res.Messages))
	}
	// Breadcrumbs never stack: an inserted one never sits next to another.
	for i, k := range res.Kept {
		if k >= 0 {
			continue
		}
		if (i > 0 && res.Messages[i-1].Kind == KindBreadcrumb) ||
			(i+1 < len(res.Messages) && res.Messages[i+1].Kind == KindBreadcrumb) {
			t.Fatalf("stacked breadcrumbs: %v", render(res.Messages))
		}
	}
	// Every input message is either kept or dropped (breadcrumbs the trim
	// replaced aside), and Dropped lists them in input order.
	d := 0
	for i, m := range in {
		if kept[i] {
			continue
		}
		if d < len(res.Dropped) && reflect.DeepEqual(res.Dropped[d], m) {
			d++
			continue
		}
		if m.Kind != KindBreadcrumb {
			t.Fatalf("input message %d is neither kept nor dropped: %+v", i, m)
		}
	}
	if d != len(res.Dropped) {
		t.Fatalf("Dropped has %d messages that are not input messages in order", len(res.Dropped)-d)
	}
}
