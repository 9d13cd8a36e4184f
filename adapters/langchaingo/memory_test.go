package langchaingo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
)

// chatTokens is the Heuristic's count of stored messages, as the Memory
// trims them.
func chatTokens(t testing.TB, msgs []llms.ChatMessage) int {
	t.Helper()
	native := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		native[i] = contentOf(m)
	}
	return tokens(t, native)
}

func loadMessages(t *testing.T, m *Memory) []llms.ChatMessage {
	t.Helper()
	vars, err := m.LoadMemoryVariables(context.Background(), map[string]any{"input": "next"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, ok := vars[m.MemoryKey].([]llms.ChatMessage)
	if !ok {
		t.Fatalf("memory variables %v", vars)
	}
	return msgs
}

// TestMemoryKeepsLatestRequest is the failure LangChainGo's own token
// buffer shows in a chat loop: an exchange larger than its limit empties
// it, the latest request included. Through 60 exchanges of every size,
// a third of them larger than the budget on their own, the Memory always
// holds the latest exchange, whole and last, and otherwise fits the
// budget.
func TestMemoryKeepsLatestRequest(t *testing.T) {
	const budget = 600
	m := NewMemory(budget)
	m.ReturnMessages = true
	r := rng(7)
	large := 0
	for i := range 60 {
		in := fmt.Sprintf("request %d: %s", i, words(&r, 5+r.intn(400)))
		out := fmt.Sprintf("reply %d: %s", i, words(&r, 5+r.intn(400)))
		if err := m.SaveContext(context.Background(), map[string]any{"input": in}, map[string]any{"output": out}); err != nil {
			t.Fatal(err)
		}
		got := loadMessages(t, m)
		n := len(got)
		if n < 2 || got[n-2] != (llms.HumanChatMessage{Content: in}) || !reflect.DeepEqual(got[n-1], llms.AIChatMessage{Content: out}) {
			t.Fatalf("exchange %d: the memory lost the latest request (%d messages, ending %v)", i, n, got[max(n-2, 0):])
		}
		latest := chatTokens(t, got[n-2:])
		if latest > budget {
			large++
		}
		if size := chatTokens(t, got); size > budget && size > latest+chatTokens(t, []llms.ChatMessage{llms.HumanChatMessage{Content: history.BreadcrumbText}}) {
			t.Fatalf("exchange %d: %d tokens loaded, budget %d, latest exchange %d", i, size, budget, latest)
		}
		notices := 0
		for _, msg := range got {
			if msg.GetContent() == history.BreadcrumbText {
				notices++
			}
		}
		if notices > 1 {
			t.Fatalf("exchange %d: %d notices stacked", i, notices)
		}
		stored, _ := m.ChatHistory.Messages(context.Background())
		if len(stored) != n {
			t.Fatalf("exchange %d: %d messages stored, %d loaded: the store was not trimmed at save", i, len(stored), n)
		}
	}
	if large < 10 {
		t.Fatalf("only %d exchanges exceed the budget alone", large)
	}
}

// TestMemoryToolMessages: tool calls stored by an agent stay paired, and
// an elided result comes back as a tool message holding the placeholder,
// while the store keeps the caller's values where nothing changed.
func TestMemoryToolMessages(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("a line of tool output\n", 120)
	stored := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "You are an agent."},
		llms.HumanChatMessage{Content: "read both files"},
		llms.AIChatMessage{Content: "reading", ToolCalls: []llms.ToolCall{call("a", "read", `{"p":"a"}`), call("b", "read", `{"p":"b"}`)}, ReasoningContent: "why"},
		llms.ToolChatMessage{ID: "a", Content: big},
		llms.ToolChatMessage{ID: "b", Content: "short"},
		llms.AIChatMessage{Content: "both read"},
		llms.HumanChatMessage{Content: "and now?"},
		llms.AIChatMessage{Content: "now we test", ToolCalls: []llms.ToolCall{call("c", "test", "{}"), call("d", "lint", "{}")}},
		llms.ToolChatMessage{ID: "c", Content: "ok"}, // d is unanswered
	}
	h := memory.NewChatMessageHistory()
	if err := h.SetMessages(ctx, stored); err != nil {
		t.Fatal(err)
	}
	m := NewMemory(10_000, history.WithElision(history.ElideOptions{KeepRecent: -1, MinTokens: 100}))
	m.ChatHistory, m.ReturnMessages = h, true
	total := chatTokens(t, stored)
	m.Budget = total - 100
	got := loadMessages(t, m)
	if len(got) != len(stored) {
		t.Fatalf("%d messages loaded, %d stored: %v", len(got), len(stored), got)
	}
	if el, ok := got[3].(llms.ToolChatMessage); !ok || el.ID != "a" || !strings.HasPrefix(el.Content, "[elided tool result") {
		t.Errorf("elided result = %#v", got[3])
	}
	if got[4] != stored[4] || got[1] != stored[1] {
		t.Error("unchanged messages are not the stored values")
	}
	ai, ok := got[7].(llms.AIChatMessage)
	if !ok || ai.Content != "now we test" || len(ai.ToolCalls) != 1 || ai.ToolCalls[0].ID != "c" {
		t.Errorf("the unanswered call d was not stripped: %#v", got[7])
	}
	if first := got[2].(llms.AIChatMessage); first.ReasoningContent != "why" || len(first.ToolCalls) != 2 {
		t.Errorf("kept AI message changed: %#v", first)
	}
	again, _ := h.Messages(ctx)
	if len(again) != len(stored) || again[3] != stored[3] {
		t.Error("LoadMemoryVariables modified the store")
	}
}

func TestMemoryString(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(60)
	for i := range 5 {
		if err := m.SaveContext(ctx, map[string]any{"q": fmt.Sprintf("question %d %s", i, strings.Repeat("word ", 20))}, map[string]any{"a": fmt.Sprintf("answer %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	vars, err := m.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := vars["history"].(string)
	want := "Human: " + history.BreadcrumbText + "\nHuman: question 4 " + strings.Repeat("word ", 20) + "\nAI: answer 4"
	if s != want {
		t.Errorf("history = %q\nwant %q", s, want)
	}
	if got := m.MemoryVariables(ctx); len(got) != 1 || got[0] != "history" || m.GetMemoryKey(ctx) != "history" {
		t.Errorf("memory variables %v", got)
	}
	if err := m.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if vars, _ := m.LoadMemoryVariables(ctx, nil); vars["history"] != "" {
		t.Errorf("after Clear: %v", vars)
	}
}

func TestMemoryErrors(t *testing.T) {
	ctx := context.Background()
	withStored := func(budget int, msgs ...llms.ChatMessage) *Memory {
		m := NewMemory(budget)
		_ = m.ChatHistory.SetMessages(ctx, msgs)
		return m
	}
	tests := []struct {
		name string
		m    *Memory
		want error
	}{
		{"legacy function message", withStored(100, llms.HumanChatMessage{Content: "x"}, llms.FunctionChatMessage{Name: "f", Content: "y"}), ErrInvalidMessage},
		{"nil message", withStored(100, nil), ErrInvalidMessage},
		{"no budget", withStored(0, llms.HumanChatMessage{Content: "x"}), history.ErrInvalidBudget},
	}
	for _, tc := range tests {
		if _, err := tc.m.LoadMemoryVariables(ctx, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: LoadMemoryVariables: %v, want %v", tc.name, err, tc.want)
		}
		if err := tc.m.SaveContext(ctx, map[string]any{"in": "a"}, map[string]any{"out": "b"}); !errors.Is(err, tc.want) {
			t.Errorf("%s: SaveContext: %v, want %v", tc.name, err, tc.want)
		}
	}
	m := NewMemory(100)
	if err := m.SaveContext(ctx, map[string]any{"a": "1", "b": "2"}, map[string]any{"out": "x"}); !errors.Is(err, memory.ErrInvalidInputValues) {
		t.Errorf("ambiguous inputs: %v, want the buffer's ErrInvalidInputValues", err)
	}
}

// genChat builds the messages a Memory stores from fuzz input: gen's
// conversation (parallel calls answered in shuffled order, some missing, an
// orphan or a wrong id) as llms.ChatMessage values, every AI message with
// ReasoningContent as a reasoning model's reply holds it.
func genChat(data []byte) []llms.ChatMessage {
	var out []llms.ChatMessage
	for i, m := range gen(data) {
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			out = append(out, llms.SystemChatMessage{Content: m.Parts[0].(llms.TextContent).Text})
		case llms.ChatMessageTypeHuman:
			out = append(out, llms.HumanChatMessage{Content: m.Parts[0].(llms.TextContent).Text})
		case llms.ChatMessageTypeAI:
			ai := llms.AIChatMessage{ReasoningContent: fmt.Sprintf("step %d: %s", i, strings.Repeat("think ", len(data)%7))}
			for _, p := range m.Parts {
				switch x := p.(type) {
				case llms.TextContent:
					ai.Content = x.Text
				case llms.ToolCall:
					ai.ToolCalls = append(ai.ToolCalls, x)
				}
			}
			out = append(out, ai)
		case llms.ChatMessageTypeTool:
			for _, p := range m.Parts {
				r := p.(llms.ToolCallResponse)
				out = append(out, llms.ToolChatMessage{ID: r.ToolCallID, Content: r.Content})
			}
		}
	}
	return out
}

// FuzzMemory stores random histories of a reasoning model in a Memory and
// loads them at any budget with any option set of the ladder: the loaded
// messages pair their tool calls, hold the latest human request, and every
// AI message in them is a stored one, or one with calls stripped or their
// arguments cleared, with its ReasoningContent. With o&8 set, the calls
// carry large arguments and the ladder clears them (the inputs of the other
// sets keep their meaning).
func FuzzMemory(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint16(200), uint8(0))
	f.Add([]byte{0, 1, 2, 0, 1, 0, 2, 1, 0, 0, 5, 3, 2, 1, 0, 0, 9, 1, 2, 2, 2, 2}, uint16(60), uint8(3))
	f.Add([]byte{7, 2, 1, 0, 3, 7, 2, 1, 0, 3, 7, 2, 1, 0, 3, 7, 2, 1, 0, 3}, uint16(500), uint8(2))
	f.Add([]byte{0, 2, 1, 250, 3, 240, 1, 200, 2, 2, 220, 230, 1, 0, 2, 1, 210, 3, 0}, uint16(156), uint8(8))
	clearing := []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 8}), history.WithStepTrim()}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		chat := genChat(data)
		sets := adaptertest.LadderSets(false)
		set := sets[int(o)%len(sets)]
		if o&8 != 0 {
			set.Name, set.Opts = "clearing arguments", clearing
			for i, cm := range chat {
				if ai, ok := cm.(llms.AIChatMessage); ok && len(ai.ToolCalls) > 0 {
					ai.ToolCalls = slices.Clone(ai.ToolCalls)
					for j := range ai.ToolCalls {
						fc := *ai.ToolCalls[j].FunctionCall
						fc.Arguments = `{"q":"` + strings.Repeat("word ", 10+(i+j)%40) + `"}`
						ai.ToolCalls[j].FunctionCall = &fc
					}
					chat[i] = ai
				}
			}
		}
		if msg := checkMemoryTrim(chat, int(budget)+1, set.Opts); msg != "" {
			t.Fatalf("budget %d, %s: %s", int(budget)+1, set.Name, msg)
		}
	})
}

// TestMemoryPinsFollowTheirMessages: over a store that starts with a system
// message, NewMemory(budget, history.WithPin(1)) pins the first request;
// the Memory's own rewrites of the store move it (the breadcrumb takes
// index 1), and the pin follows it: every later exchange is saved, and the
// pinned request stays in the store.
func TestMemoryPinsFollowTheirMessages(t *testing.T) {
	const budget = 400
	ctx := context.Background()
	m := NewMemory(budget, history.WithPin(1))
	m.ReturnMessages = true
	if err := m.ChatHistory.AddMessage(ctx, llms.SystemChatMessage{Content: "You are terse."}); err != nil {
		t.Fatal(err)
	}
	r := rng(11)
	pinned := "request 0: remember the code word"
	trims := 0
	for i := range 30 {
		in := fmt.Sprintf("request %d: %s", i, words(&r, 20+r.intn(60)))
		out := fmt.Sprintf("reply %d: %s", i, words(&r, 20+r.intn(60)))
		if i == 0 {
			in = pinned
		}
		if err := m.SaveContext(ctx, map[string]any{"input": in}, map[string]any{"output": out}); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		stored, err := m.ChatHistory.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) < 2*(i+1)+1 {
			trims++
		}
		if !slices.ContainsFunc(stored, func(cm llms.ChatMessage) bool { return cm.GetContent() == pinned }) {
			t.Fatalf("exchange %d: the pinned request is gone from the store", i)
		}
		if got := loadMessages(t, m); !slices.ContainsFunc(got, func(cm llms.ChatMessage) bool { return cm.GetContent() == pinned }) {
			t.Fatalf("exchange %d: the pinned request is not loaded", i)
		}
	}
	if trims == 0 {
		t.Fatal("setup: the store was never trimmed")
	}
}
