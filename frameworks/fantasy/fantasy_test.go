package fantasy

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"charm.land/fantasy"
	"github.com/histrim/history"
)

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func call(id, args string) fantasy.ToolCallPart {
	return fantasy.ToolCallPart{ToolCallID: id, ToolName: "grep", Input: args}
}

func result(id, text string) fantasy.ToolResultPart {
	return fantasy.ToolResultPart{ToolCallID: id, Output: fantasy.ToolResultOutputContentText{Text: text}}
}

func msg(role fantasy.MessageRole, parts ...fantasy.MessagePart) fantasy.Message {
	return fantasy.Message{Role: role, Content: parts}
}

func TestToHistory(t *testing.T) {
	img := pngBytes(t, 40, 30)
	for _, tc := range []struct {
		in     fantasy.Message
		want   []history.Message
		reason string
	}{
		{fantasy.NewSystemMessage("be brief"), []history.Message{{Role: history.RoleSystem, Content: "be brief"}}, "system"},
		{fantasy.NewUserMessage("look", fantasy.FilePart{Data: img, MediaType: "image/png"}, fantasy.FilePart{Data: make([]byte, 90), MediaType: "application/pdf"}),
			[]history.Message{{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartText, Text: "look"},
				{Type: history.PartImage, MIMEType: "image/png", Width: 40, Height: 30}, {Type: history.PartFile, MIMEType: "application/pdf", Size: 90}}}},
			"text, an image by its header, a file by its size"},
		{msg(fantasy.MessageRoleAssistant, fantasy.ReasoningPart{Text: "think"}, fantasy.TextPart{Text: "ok"}, call("c1", `{"q":1}`)),
			[]history.Message{{Role: history.RoleAssistant, Parts: []history.Part{{Type: history.PartReasoning, Text: "think"}, {Type: history.PartText, Text: "ok"}},
				ToolCalls: []history.ToolCall{{ID: "c1", Name: "grep", Arguments: `{"q":1}`}}}}, "reasoning, text and a call"},
		{msg(fantasy.MessageRoleTool, result("c1", "one"), fantasy.ToolResultPart{ToolCallID: "c2", Output: fantasy.ToolResultOutputContentError{Error: errors.New("boom")}}),
			[]history.Message{{Role: history.RoleTool, ToolCallID: "c1", Content: "one"}, {Role: history.RoleTool, ToolCallID: "c2", Content: "boom"}},
			"a tool message: one tool message per result"},
		{msg(fantasy.MessageRoleTool, result("c1", "one"), fantasy.TextPart{Text: "note"}),
			[]history.Message{{Role: history.RoleTool, ToolCallID: "c1", Content: "one"}, {Role: history.RoleUser, Kind: history.KindNudge, Parts: []history.Part{{Type: history.PartText, Text: "note"}}}},
			"a tool message's other parts: a nudge"},
		{msg(fantasy.MessageRoleAssistant, fantasy.ToolCallPart{ToolCallID: "ws", ToolName: "web_search", Input: "{}", ProviderExecuted: true}),
			[]history.Message{{Role: history.RoleAssistant, Parts: []history.Part{{Type: history.PartText,
				Text: `{"type":"tool-call","data":{"tool_call_id":"ws","tool_name":"web_search","input":"{}","provider_executed":true}}`}}}},
			"a provider-executed call counts as its JSON, unpaired"},
	} {
		got, err := ToHistory([]fantasy.Message{tc.in})
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v\nwant %+v", tc.reason, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in     fantasy.Message
		reason string
	}{
		{msg("robot", fantasy.TextPart{Text: "x"}), "unknown role"},
		{msg(fantasy.MessageRoleUser, nil), "a nil part"},
		{msg(fantasy.MessageRoleAssistant, call("", "{}")), "a call without id"},
		{msg(fantasy.MessageRoleAssistant, call("a", "{}"), call("a", "{}")), "two calls with one id"},
		{msg(fantasy.MessageRoleUser, call("a", "{}")), "a call in a user message"},
		{msg(fantasy.MessageRoleTool, result("", "x")), "a result without a call id"},
	} {
		_, err := ToHistory([]fantasy.Message{fantasy.NewUserMessage("first"), tc.in})
		var me *MessageError
		if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, history.ErrInvalidMessage) || !strings.HasPrefix(err.Error(), "history/fantasy: ") {
			t.Errorf("%s: %v", tc.reason, err)
		}
	}
}

// conversation returns a system prompt and turns user turns of a step of
// two parallel calls answered in one tool message, and an answer.
func conversation(turns, words int) []fantasy.Message {
	msgs := []fantasy.Message{fantasy.NewSystemMessage("You are an agent.")}
	for u := range turns {
		a, b := "a"+strconv.Itoa(u), "b"+strconv.Itoa(u)
		msgs = append(msgs, fantasy.NewUserMessage("task "+strconv.Itoa(u)),
			msg(fantasy.MessageRoleAssistant, fantasy.TextPart{Text: "reading"}, call(a, `{"path":"`+strings.Repeat("p", 50)+`"}`), call(b, `{}`)),
			msg(fantasy.MessageRoleTool, result(a, strings.Repeat("word ", words)), result(b, strings.Repeat("line ", words))),
			msg(fantasy.MessageRoleAssistant, fantasy.TextPart{Text: "done"}))
	}
	return msgs
}

// TestTrim: whole turns go behind one notice; kept messages are the
// caller's values; the output passes Validate and converts back to the
// Result's messages; a history that fits comes back as it is.
func TestTrim(t *testing.T) {
	msgs := conversation(8, 150)
	out, res, err := Trim(msgs, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if res.DroppedTurns == 0 || len(out[1].Content) != 1 || out[1].Role != fantasy.MessageRoleUser {
		t.Fatalf("dropped %d turns, output starts %+v", res.DroppedTurns, out[:2])
	}
	if tp, _ := fantasy.AsMessagePart[fantasy.TextPart](out[1].Content[0]); tp.Text != history.BreadcrumbText {
		t.Errorf("notice %+v", out[1])
	}
	checkOutput(t, msgs, out, res)
	same, res, err := Trim(msgs, 1<<20)
	if err != nil || res.Trimmed || len(same) != len(msgs) || &same[0] != &msgs[0] {
		t.Errorf("a history that fits: %v %+v", err, res)
	}
	again, res2, err := Trim(append(out, conversation(2, 150)[1:]...), 1200)
	if err != nil || res2.DroppedTurns == 0 || notices(again) != 1 {
		t.Errorf("trimming the output again: %v, %d notices", err, notices(again))
	}
}

func notices(msgs []fantasy.Message) int {
	n := 0
	for _, m := range msgs {
		if len(m.Content) == 1 {
			if tp, ok := fantasy.AsMessagePart[fantasy.TextPart](m.Content[0]); ok && tp.Text == history.BreadcrumbText {
				n++
			}
		}
	}
	return n
}

// checkOutput checks out, a trim of msgs with res: it passes Validate,
// converts back to res.Messages (kinds aside), and holds the caller's
// parts.
func checkOutput(t *testing.T, msgs, out []fantasy.Message, res history.Result) {
	t.Helper()
	if err := Validate(out); err != nil {
		t.Fatalf("output breaks the pairing: %v", err)
	}
	back, err := ToHistory(out)
	if err != nil || len(back) != len(res.Messages) {
		t.Fatalf("round trip: %v, %d messages for %d", err, len(back), len(res.Messages))
	}
	for j := range back {
		want := res.Messages[j]
		back[j].Kind, want.Kind = "", ""
		if !reflect.DeepEqual(back[j], want) {
			t.Fatalf("message %d converts back to %+v, want %+v", j, back[j], want)
		}
	}
}

// TestTrimRegroups: a tool message whose results were partly swept or
// elided is a new message over the caller's parts, the caller's message
// untouched; an assistant message whose call nothing answers loses it.
func TestTrimRegroups(t *testing.T) {
	msgs := conversation(2, 400)
	msgs = append(msgs, fantasy.NewUserMessage("next"),
		msg(fantasy.MessageRoleAssistant, call("k1", "{}"), call("k2", "{}")),
		msg(fantasy.MessageRoleTool, result("k1", "found"), result("stray", "lost")))
	before := snapshot(msgs)
	out, res, err := Trim(msgs, 1000, history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults == 0 || res.OrphansRemoved != 2 {
		t.Fatalf("elided %d, orphans %d", res.ElidedResults, res.OrphansRemoved)
	}
	last, asst := out[len(out)-1], out[len(out)-2]
	if len(last.Content) != 1 || len(asst.Content) != 1 {
		t.Errorf("swept messages: %+v / %+v", asst, last)
	}
	elided := false
	for _, m := range out {
		for _, p := range m.Content {
			if r, ok := fantasy.AsMessagePart[fantasy.ToolResultPart](p); ok {
				if o, ok := r.Output.(fantasy.ToolResultOutputContentText); ok && strings.HasPrefix(o.Text, "[elided tool result") {
					elided = true
				}
			}
		}
	}
	if !elided {
		t.Error("no elided result in the output")
	}
	checkOutput(t, msgs, out, res)
	if snapshot(msgs) != before {
		t.Error("Trim modified its input")
	}
}

// snapshot renders msgs, to check that nothing changed them.
func snapshot(msgs []fantasy.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role))
		for _, p := range m.Content {
			b.WriteString("|")
			switch p := p.(type) {
			case fantasy.TextPart:
				b.WriteString(p.Text)
			case fantasy.ToolCallPart:
				b.WriteString(p.ToolCallID + p.Input)
			case fantasy.ToolResultPart:
				b.WriteString(p.ToolCallID)
				if o, ok := p.Output.(fantasy.ToolResultOutputContentText); ok {
					b.WriteString(o.Text)
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestValidate(t *testing.T) {
	u := fantasy.NewUserMessage("go")
	a := msg(fantasy.MessageRoleAssistant, call("a", "{}"), call("b", "{}"))
	for _, tc := range []struct {
		msgs   []fantasy.Message
		at     int
		reason string
	}{
		{[]fantasy.Message{u, a, msg(fantasy.MessageRoleTool, result("b", ""), result("a", "")), u}, -1, "both answered in one tool message"},
		{[]fantasy.Message{u, a, msg(fantasy.MessageRoleTool, result("a", "")), msg(fantasy.MessageRoleTool, result("b", ""))}, -1, "answered over two tool messages"},
		{[]fantasy.Message{u, a, msg(fantasy.MessageRoleTool, result("a", "")), u}, 1, "a call left unanswered: the calling message"},
		{[]fantasy.Message{u, msg(fantasy.MessageRoleTool, result("a", ""))}, 1, "a result with no call"},
		{[]fantasy.Message{u, a}, 1, "calls at the end: the calling message"},
	} {
		err := Validate(tc.msgs)
		var pe *PairingError
		if tc.at < 0 && err != nil || tc.at >= 0 && (!errors.As(err, &pe) || pe.Index != tc.at || !errors.Is(err, ErrUnpaired)) {
			t.Errorf("%s: %v", tc.reason, err)
		}
	}
}

func TestOverheadAndPromptTokens(t *testing.T) {
	tools := []fantasy.Tool{fantasy.FunctionTool{Name: "grep", Description: "search", InputSchema: map[string]any{"type": "object"}}}
	if n := Overhead(tools, nil); n <= 0 || Overhead(nil, nil) != 0 {
		t.Errorf("Overhead = %d", n)
	}
	if n := PromptTokens(fantasy.Usage{InputTokens: 100, CacheReadTokens: 900, CacheCreationTokens: 5}); n != 1005 {
		t.Errorf("PromptTokens = %d", n)
	}
}
