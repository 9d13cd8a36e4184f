package goopenai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"reflect"
	"strings"
	"testing"

	"github.com/histrim/history"
	openai "github.com/sashabaranov/go-openai"
)

func pngURL(t testing.TB, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

func call(id, name, args string) openai.ToolCall {
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

func TestToHistory(t *testing.T) {
	img := pngURL(t, 64, 32)
	for _, tc := range []struct {
		in     openai.ChatCompletionMessage
		want   history.Message
		reason string
	}{
		{openai.ChatCompletionMessage{Role: "system", Content: "be brief"}, history.Message{Role: history.RoleSystem, Content: "be brief"}, "system"},
		{openai.ChatCompletionMessage{Role: "developer", Content: "be brief"}, history.Message{Role: history.RoleSystem, Content: "be brief"}, "developer is system"},
		{openai.ChatCompletionMessage{Role: "user", Content: "hi", Name: "ann"}, history.Message{Role: history.RoleUser, Content: "hi", Name: "ann"}, "user with a name"},
		{openai.ChatCompletionMessage{Role: "user", MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: "look"},
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: img, Detail: openai.ImageURLDetailLow}},
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "https://example.com/a.png"}},
		}}, history.Message{Role: history.RoleUser, Parts: []history.Part{
			{Type: history.PartText, Text: "look"},
			{Type: history.PartImage, Width: 64, Height: 32, Detail: "low"},
			{Type: history.PartImage},
		}}, "text and images; a data URL's size read from its header"},
		{openai.ChatCompletionMessage{Role: "assistant", Content: "ok", ReasoningContent: "think", Refusal: "no",
			ToolCalls: []openai.ToolCall{call("c1", "grep", `{"q":1}`)}},
			history.Message{Role: history.RoleAssistant, Content: "ok", Parts: []history.Part{{Type: history.PartText, Text: "no"}, {Type: history.PartReasoning, Text: "think"}},
				ToolCalls: []history.ToolCall{{ID: "c1", Name: "grep", Arguments: `{"q":1}`}}}, "assistant with refusal, reasoning and a call"},
		{openai.ChatCompletionMessage{Role: "tool", ToolCallID: "c1", Content: "out", Name: "grep"}, history.Message{Role: history.RoleTool, ToolCallID: "c1", Content: "out", Name: "grep"}, "tool"},
		{openai.ChatCompletionMessage{Role: "assistant", FunctionCall: &openai.FunctionCall{Name: "f", Arguments: "{}"}},
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: legacyCallID, Name: "f", Arguments: "{}"}}}, "legacy function_call"},
		{openai.ChatCompletionMessage{Role: "function", Name: "f", Content: "r"}, history.Message{Role: history.RoleTool, ToolCallID: legacyCallID, Name: "f", Content: "r"}, "legacy function result"},
	} {
		got, err := ToHistory([]openai.ChatCompletionMessage{tc.in})
		if err != nil || !reflect.DeepEqual(got[0], tc.want) {
			t.Errorf("%s: got %+v, %v\nwant %+v", tc.reason, got, err, tc.want)
		}
	}
}

func TestToHistoryErrors(t *testing.T) {
	for _, tc := range []struct {
		in     openai.ChatCompletionMessage
		reason string
	}{
		{openai.ChatCompletionMessage{Role: "robot", Content: "x"}, "unknown role"},
		{openai.ChatCompletionMessage{Role: "tool", Content: "x"}, "tool message without an id"},
		{openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call("", "f", "{}")}}, "call without an id"},
		{openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call("a", "f", "{}"), call("a", "g", "{}")}}, "two calls with one id"},
		{openai.ChatCompletionMessage{Role: "user", Content: "x", MultiContent: []openai.ChatMessagePart{{Type: "text", Text: "y"}}}, "Content and MultiContent"},
	} {
		_, err := ToHistory([]openai.ChatCompletionMessage{{Role: "user", Content: "first"}, tc.in})
		var me *MessageError
		if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, history.ErrInvalidMessage) || !strings.HasPrefix(err.Error(), "history/goopenai: ") {
			t.Errorf("%s: %v", tc.reason, err)
		}
		if _, _, terr := Trim([]openai.ChatCompletionMessage{tc.in}, 100); !errors.As(terr, &me) {
			t.Errorf("%s: Trim: %v", tc.reason, terr)
		}
	}
}

// conversation returns a system prompt and turns user turns of two tool
// steps each, with results of size words.
func conversation(turns, words int) []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "You are an agent."}}
	for u := range turns {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: "task " + strings.Repeat("x", u+1)})
		for s := range 2 {
			id := "c" + string(rune('a'+u)) + string(rune('0'+s))
			msgs = append(msgs,
				openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call(id, "read_file", `{"path":"`+strings.Repeat("p", 40)+`"}`)}},
				openai.ChatCompletionMessage{Role: "tool", ToolCallID: id, Name: "read_file", Content: strings.Repeat("word ", words)})
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", Content: "done"})
	}
	return msgs
}

func deepCopy(t testing.TB, msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var out []openai.ChatCompletionMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTrim: whole turns go behind one notice, kept messages are the
// caller's values, the input is untouched, and the output passes Validate
// and converts back to the Result's messages.
func TestTrim(t *testing.T) {
	msgs := conversation(6, 200)
	before := deepCopy(t, msgs)
	out, res, err := Trim(msgs, 1200)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deepCopy(t, msgs), before) {
		t.Error("Trim modified its input")
	}
	if res.DroppedTurns == 0 || out[1].Content != history.BreadcrumbText || out[1].Role != "user" {
		t.Fatalf("dropped %d turns, output starts %+v", res.DroppedTurns, out[:2])
	}
	for j, i := range res.Kept {
		if i >= 0 && !reflect.DeepEqual(out[j], msgs[i]) {
			t.Errorf("output %d is not the caller's message %d", j, i)
		}
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
	back, err := ToHistory(out)
	if err != nil || len(back) != len(res.Messages) {
		t.Fatalf("round trip: %v, %d messages for %d", err, len(back), len(res.Messages))
	}
	for j := range back {
		back[j].Kind, res.Messages[j].Kind = "", ""
		if !reflect.DeepEqual(back[j], res.Messages[j]) {
			t.Errorf("message %d converts back to %+v, want %+v", j, back[j], res.Messages[j])
		}
	}
	// Fits: the same history is returned as it is.
	same, res, err := Trim(msgs, 1<<20)
	if err != nil || res.Trimmed || len(same) != len(msgs) || &same[0] != &msgs[0] || cap(same) != len(msgs) {
		t.Errorf("a history that fits: %v %+v", err, res)
	}
}

// TestElisionAndSweep: an elided result is a copy holding the
// placeholder; a call nothing answers is stripped from a copy of its
// message; the caller's messages are untouched.
func TestElisionAndSweep(t *testing.T) {
	msgs := conversation(1, 600)
	msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: "next"},
		openai.ChatCompletionMessage{Role: "assistant", Content: "calling", ToolCalls: []openai.ToolCall{call("k1", "grep", "{}"), call("k2", "grep", "{}")}},
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: "k1", Content: "found"})
	before := deepCopy(t, msgs)
	out, res, err := Trim(msgs, 1000, history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults == 0 || res.OrphansRemoved != 1 {
		t.Fatalf("elided %d, orphans %d", res.ElidedResults, res.OrphansRemoved)
	}
	if !strings.HasPrefix(out[3].Content, "[elided tool result: read_file") || out[3].ToolCallID != msgs[3].ToolCallID || out[3].Name != "read_file" {
		t.Errorf("elided result %+v", out[3])
	}
	last := out[len(out)-2]
	if len(last.ToolCalls) != 1 || last.ToolCalls[0].ID != "k1" || last.Content != "calling" {
		t.Errorf("stripped message %+v", last)
	}
	if !reflect.DeepEqual(deepCopy(t, msgs), before) {
		t.Error("Trim modified its input")
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

func TestValidate(t *testing.T) {
	u := openai.ChatCompletionMessage{Role: "user", Content: "go"}
	a := openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call("a", "f", "{}"), call("b", "f", "{}")}}
	r := func(id string) openai.ChatCompletionMessage {
		return openai.ChatCompletionMessage{Role: "tool", ToolCallID: id, Content: "x"}
	}
	for _, tc := range []struct {
		msgs   []openai.ChatCompletionMessage
		at     int
		reason string
	}{
		{[]openai.ChatCompletionMessage{u, a, r("b"), r("a"), u}, -1, "calls answered in any order"},
		{[]openai.ChatCompletionMessage{u, a, r("a"), u}, 1, "a call left unanswered before the next message: the calling message"},
		{[]openai.ChatCompletionMessage{u, a, r("a")}, 1, "a call left unanswered at the end: the calling message"},
		{[]openai.ChatCompletionMessage{u, r("a")}, 1, "a result with no call"},
		{[]openai.ChatCompletionMessage{u, a, r("a"), r("b"), r("a")}, 4, "a call answered twice"},
		{[]openai.ChatCompletionMessage{u, {Role: "assistant", FunctionCall: &openai.FunctionCall{Name: "f"}}, {Role: "function", Name: "f"}}, -1, "legacy pair"},
	} {
		err := Validate(tc.msgs)
		var pe *PairingError
		if tc.at < 0 && err != nil || tc.at >= 0 && (!errors.As(err, &pe) || pe.Index != tc.at || !errors.Is(err, ErrUnpaired)) {
			t.Errorf("%s: %v", tc.reason, err)
		}
	}
}

func TestOverhead(t *testing.T) {
	req := openai.ChatCompletionRequest{Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: "grep", Description: "search the workspace", Parameters: map[string]any{"type": "object"}}}}}
	n := Overhead(req, nil)
	b, _ := json.Marshal(req.Tools)
	if want := history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: string(b)}); n != want || n == 0 {
		t.Errorf("Overhead = %d, want %d", n, want)
	}
	req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	if m := Overhead(req, nil); m <= n {
		t.Errorf("a response format adds nothing: %d", m)
	}
	if Overhead(openai.ChatCompletionRequest{}, nil) != 0 {
		t.Error("a request without tools costs something")
	}
}
