package genkit

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/histrim/history"
)

func request(name string, input any) *ai.Part {
	return ai.NewToolRequestPart(&ai.ToolRequest{Name: name, Input: input})
}

func response(name string, output any) *ai.Part {
	return ai.NewToolResponsePart(&ai.ToolResponse{Name: name, Output: output})
}

func TestToHistory(t *testing.T) {
	msgs := []*ai.Message{
		ai.NewSystemTextMessage("be brief"),
		ai.NewUserTextMessage("go"),
		ai.NewModelMessage(ai.NewReasoningPart("think", nil), ai.NewTextPart("reading"), request("grep", map[string]any{"q": 1}), request("read", nil), request("grep", map[string]any{"q": 2})),
		ai.NewMessage(ai.RoleTool, nil, response("read", "file"), response("grep", map[string]any{"n": 1}), response("grep", "two"), response("lost", "x"), ai.NewTextPart("note")),
	}
	want := []history.Message{
		{Role: history.RoleSystem, Content: "be brief"},
		{Role: history.RoleUser, Content: "go"},
		{Role: history.RoleAssistant, Parts: []history.Part{{Type: history.PartReasoning, Text: "think"}, {Type: history.PartText, Text: "reading"}},
			ToolCalls: []history.ToolCall{{ID: "#c2.2", Name: "grep", Arguments: `{"q":1}`}, {ID: "#c2.3", Name: "read", Arguments: "null"}, {ID: "#c2.4", Name: "grep", Arguments: `{"q":2}`}}},
		{Role: history.RoleTool, ToolCallID: "#c2.3", Name: "read", Content: "file"},
		{Role: history.RoleTool, ToolCallID: "#c2.2", Name: "grep", Content: `{"n":1}`},
		{Role: history.RoleTool, ToolCallID: "#c2.4", Name: "grep", Content: "two"},
		{Role: history.RoleTool, ToolCallID: "#r3.3", Name: "lost", Content: "x"},
		{Role: history.RoleUser, Kind: history.KindNudge, Parts: []history.Part{{Type: history.PartText, Text: "note"}}},
	}
	got, err := ToHistory(msgs)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	for _, tc := range []struct {
		in     *ai.Message
		reason string
	}{
		{nil, "a nil message"},
		{ai.NewMessage("robot", nil, ai.NewTextPart("x")), "unknown role"},
		{ai.NewUserMessage(request("grep", nil)), "a request in a user message"},
		{ai.NewModelMessage(response("grep", "x")), "a response in a model message"},
		{ai.NewUserMessage(nil), "a nil part"},
		{ai.NewModelMessage(&ai.Part{Kind: ai.PartToolRequest}), "a tool request without its payload (it panicked)"},
		{ai.NewMessage(ai.RoleTool, nil, &ai.Part{Kind: ai.PartToolResponse}), "a tool response without its payload (it panicked)"},
	} {
		_, err := ToHistory([]*ai.Message{ai.NewUserTextMessage("first"), tc.in})
		var me *MessageError
		if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, history.ErrInvalidMessage) || !strings.HasPrefix(err.Error(), "history/genkit: ") {
			t.Errorf("%s: %v", tc.reason, err)
		}
	}
}

// conversation returns a system prompt and turns user turns of a step of
// two requests answered in one tool message, and an answer.
func conversation(turns, words int) []*ai.Message {
	msgs := []*ai.Message{ai.NewSystemTextMessage("You are an agent.")}
	for u := range turns {
		msgs = append(msgs, ai.NewUserTextMessage("task "+strconv.Itoa(u)),
			ai.NewModelMessage(request("grep", map[string]any{"path": strings.Repeat("p", 60)}), request("read", map[string]any{})),
			ai.NewMessage(ai.RoleTool, nil, response("grep", strings.Repeat("word ", words)), response("read", strings.Repeat("line ", words))),
			ai.NewModelTextMessage("done"))
	}
	return msgs
}

// TestTrim: whole turns go behind one notice, kept messages are the
// caller's pointers, changed ones new messages over the caller's parts,
// and the output converts back to the Result's messages.
func TestTrim(t *testing.T) {
	msgs := conversation(8, 150)
	msgs = append(msgs, ai.NewUserTextMessage("next"), ai.NewModelMessage(request("grep", map[string]any{}), request("read", map[string]any{})),
		ai.NewMessage(ai.RoleTool, nil, response("grep", "found"), response("stray", "lost")))
	before := make([]string, len(msgs))
	for i, m := range msgs {
		before[i] = m.Text() + strconv.Itoa(len(m.Content))
	}
	out, res, err := Trim(msgs, 700, history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1}))
	if err != nil {
		t.Fatal(err)
	}
	if res.DroppedTurns == 0 || res.ElidedResults == 0 || res.OrphansRemoved != 2 || out[1].Text() != history.BreadcrumbText || out[1].Role != ai.RoleUser {
		t.Fatalf("dropped %d turns, elided %d, %d orphans; output starts %q", res.DroppedTurns, res.ElidedResults, res.OrphansRemoved, out[1].Text())
	}
	if out[len(out)-3] != msgs[len(msgs)-3] || out[0] != msgs[0] {
		t.Error("kept messages are not the caller's pointers")
	}
	last, asst := out[len(out)-1], out[len(out)-2]
	if len(last.Content) != 1 || len(asst.Content) != 1 || last.Content[0] != msgs[len(msgs)-1].Content[0] {
		t.Errorf("swept messages: %d and %d parts", len(asst.Content), len(last.Content))
	}
	back, err := ToHistory(out)
	if err != nil || len(back) != len(res.Messages) {
		t.Fatalf("round trip: %v, %d for %d", err, len(back), len(res.Messages))
	}
	for j := range back {
		b, w := back[j], res.Messages[j]
		b.Kind, w.Kind, b.ToolCallID, w.ToolCallID, b.ToolCalls, w.ToolCalls = "", "", "", "", nil, nil // ids follow positions
		if !reflect.DeepEqual(b, w) {
			t.Errorf("message %d converts back to %+v, want %+v", j, b, w)
		}
	}
	for i, m := range msgs {
		if m.Text()+strconv.Itoa(len(m.Content)) != before[i] {
			t.Fatalf("Trim modified message %d", i)
		}
	}
	again, res2, err := Trim(append(out, conversation(2, 150)[1:]...), 1200)
	n := 0
	for _, m := range again {
		if m.Text() == history.BreadcrumbText {
			n++
		}
	}
	if err != nil || res2.DroppedTurns == 0 || n != 1 {
		t.Errorf("trimming the output again: %v, %d notices", err, n)
	}
}

func TestOverhead(t *testing.T) {
	req := &ai.ModelRequest{Tools: []*ai.ToolDefinition{{Name: "grep", Description: "search", InputSchema: map[string]any{"type": "object"}}}}
	if n := Overhead(req, nil); n <= 0 || Overhead(&ai.ModelRequest{}, nil) != 0 || Overhead(nil, nil) != 0 {
		t.Errorf("Overhead = %d", n)
	}
}
