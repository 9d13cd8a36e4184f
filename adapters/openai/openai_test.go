package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

func functionCall(id, name, args string) openai.ChatCompletionMessageToolCallUnionParam {
	return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args},
	}}
}

func assistantCalls(content string, calls ...openai.ChatCompletionMessageToolCallUnionParam) openai.ChatCompletionMessageParamUnion {
	u := openai.AssistantMessage(content)
	if content == "" {
		u.OfAssistant.Content = openai.ChatCompletionAssistantMessageParamContentUnion{}
	}
	u.OfAssistant.ToolCalls = calls
	return u
}

// richConversation exercises every message type and the fields a runtime
// must not lose: names, ids, images, audio, files, cache breakpoints, custom
// tool calls, refusals, extra fields and param.Override values.
func richConversation(t testing.TB) []openai.ChatCompletionMessageParamUnion {
	sys := openai.SystemMessage("You are terse.")
	sys.OfSystem.Name = openai.String("root")
	textPart := openai.ChatCompletionContentPartTextParam{Text: "Cacheable instructions."}
	textPart.PromptCacheBreakpoint = openai.NewChatCompletionContentPartTextPromptCacheBreakpointParam()
	dev := openai.DeveloperMessage([]openai.ChatCompletionContentPartTextParam{textPart})

	img := openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(adaptertest.PNG(t, 640, 480)), Detail: "low"})
	user := openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		openai.TextContentPart("What is in this picture and this file?"),
		img,
		openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png"}),
		openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: "UklGRg==", Format: "wav"}),
		openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
			FileData: openai.String("data:application/pdf;base64,JVBERi0xLjQK"), Filename: openai.String("a.pdf"),
		}),
	})
	user.OfUser.Name = openai.String("alice")

	asst := assistantCalls("Let me look.",
		functionCall("call_1", "describe_image", `{"index":0}`),
		openai.ChatCompletionMessageToolCallUnionParam{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{
			ID: "call_2", Custom: openai.ChatCompletionMessageCustomToolCallCustomParam{Name: "read_pdf", Input: "a.pdf"},
		}},
	)
	asst.OfAssistant.Name = openai.String("bot")
	asst.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": "thinking out loud"})

	// A call that came back from the API and was turned into a param with
	// ToParam: an override whose typed fields are empty.
	var fromAPI openai.ChatCompletionMessageToolCallUnion
	if err := json.Unmarshal([]byte(`{"id":"call_3","type":"function","function":{"name":"zoom","arguments":"{}"}}`), &fromAPI); err != nil {
		t.Fatal(err)
	}
	asst2 := assistantCalls("", fromAPI.ToParam())

	refusal := openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		Refusal: openai.String("I can't help with that."),
	}}
	legacy := legacyAssistant("", "old_fn", `{"a":1}`)
	return []openai.ChatCompletionMessageParamUnion{
		sys, dev, user, asst,
		openai.ToolMessage("a gray square", "call_1"),
		openai.ToolMessage([]openai.ChatCompletionContentPartTextParam{{Text: "%PDF"}}, "call_2"),
		asst2,
		openai.ToolMessage("zoomed", "call_3"),
		refusal,
		openai.UserMessage("Use the old function."),
		legacy,
		openai.ChatCompletionMessageParamOfFunction("old result", "old_fn"),
		openai.AssistantMessage("Done."),
		openai.UserMessage("Thanks!"),
	}
}

func TestToHistory(t *testing.T) {
	msgs := richConversation(t)
	before := adaptertest.JSON(t, msgs)
	hist, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != len(msgs) {
		t.Fatalf("got %d messages, want %d", len(hist), len(msgs))
	}
	check := func(i int, got, want any, what string) {
		t.Helper()
		if adaptertest.JSON(t, got) != adaptertest.JSON(t, want) {
			t.Errorf("message %d %s:\n got %s\nwant %s", i, what, adaptertest.JSON(t, got), adaptertest.JSON(t, want))
		}
	}
	check(0, hist[0], history.Message{Role: history.RoleSystem, Content: "You are terse.", Name: "root"}, "system")
	check(1, hist[1], history.Message{Role: history.RoleSystem, Parts: []history.Part{{Type: history.PartText, Text: "Cacheable instructions."}}}, "developer")
	check(2, hist[2], history.Message{Role: history.RoleUser, Name: "alice", Parts: []history.Part{
		{Type: history.PartText, Text: "What is in this picture and this file?"},
		{Type: history.PartImage, Width: 640, Height: 480, Detail: "low", MIMEType: "image/png"},
		{Type: history.PartImage},
		{Type: history.PartFile, MIMEType: "audio/wav", Size: 4},
		{Type: history.PartFile, MIMEType: "application/pdf", Size: 9},
	}}, "user")
	check(3, hist[3], history.Message{Role: history.RoleAssistant, Name: "bot", Content: "Let me look.", Parts: []history.Part{
		{Type: history.PartReasoning, Text: "thinking out loud"},
	}, ToolCalls: []history.ToolCall{
		{ID: "call_1", Name: "describe_image", Arguments: `{"index":0}`},
		{ID: "call_2", Name: "read_pdf", Arguments: "a.pdf"},
	}}, "assistant")
	check(4, hist[4], history.Message{Role: history.RoleTool, ToolCallID: "call_1", Content: "a gray square"}, "tool")
	check(5, hist[5], history.Message{Role: history.RoleTool, ToolCallID: "call_2", Parts: []history.Part{{Type: history.PartText, Text: "%PDF"}}}, "tool parts")
	check(6, hist[6], history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "call_3", Name: "zoom", Arguments: "{}"}}}, "overridden tool call")
	check(8, hist[8], history.Message{Role: history.RoleAssistant, Parts: []history.Part{{Type: history.PartText, Text: "I can't help with that."}}}, "refusal")
	check(10, hist[10], history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: legacyCallID, Name: "old_fn", Arguments: `{"a":1}`}}}, "legacy function_call")
	check(11, hist[11], history.Message{Role: history.RoleTool, ToolCallID: legacyCallID, Name: "old_fn", Content: "old result"}, "function message")
	if after := adaptertest.JSON(t, msgs); after != before {
		t.Error("ToHistory modified its input")
	}
}

func TestToHistoryErrors(t *testing.T) {
	cases := []struct {
		name, reason string
		msgs         []openai.ChatCompletionMessageParamUnion
		index        int
	}{
		{"empty union", "a union with no variant cannot be sent", []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), {}}, 1},
		{"empty call id", "the core needs ids to pair", []openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("", "f", "{}"))}, 0},
		{"duplicate call id", "two calls with one id cannot be told apart", []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("hi"), assistantCalls("", functionCall("c", "f", "{}"), functionCall("c", "g", "{}"))}, 1},
		{"tool without id", "a tool message must name its call", []openai.ChatCompletionMessageParamUnion{openai.ToolMessage("x", "")}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToHistory(tc.msgs)
			var me *MessageError
			if !errors.As(err, &me) || me.Index != tc.index || !errors.Is(err, history.ErrInvalidMessage) {
				t.Fatalf("%s: got %v, want *MessageError at %d wrapping history.ErrInvalidMessage", tc.reason, err, tc.index)
			}
			if !strings.HasPrefix(err.Error(), "history/openai: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if _, _, err := Trim(tc.msgs, 1000); !errors.As(err, &me) {
				t.Errorf("Trim: got %v, want the same *MessageError", err)
			}
		})
	}
}

// TestTrimRoundTrip: with room for everything, Trim returns the input
// itself; with less, every kept message is the caller's original, byte for
// byte in JSON.
func TestTrimRoundTrip(t *testing.T) {
	msgs := richConversation(t)
	before := adaptertest.JSON(t, msgs)

	out, res, err := Trim(msgs, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if !adaptertest.Identity(res.Kept, len(msgs)) || len(out) != len(msgs) || &out[0] != &msgs[0] {
		t.Fatalf("untrimmed history was copied or changed: Kept=%v", res.Kept)
	}
	if got := adaptertest.JSON(t, out); got != before {
		t.Fatalf("round trip changed the messages:\n got %s\nwant %s", got, before)
	}

	hist, _ := ToHistory(msgs)
	total := history.Estimate(hist, nil)
	trimmedOnce := false
	for budget := total - 1; budget > 0; budget -= 7 {
		out, res, err := Trim(msgs, budget)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if !res.Trimmed {
			t.Fatalf("budget %d below the total %d did not trim", budget, total)
		}
		trimmedOnce = true
		if len(out) != len(res.Kept) {
			t.Fatalf("budget %d: %d messages for %d Kept entries", budget, len(out), len(res.Kept))
		}
		for j, k := range res.Kept {
			if k < 0 {
				want := adaptertest.JSON(t, openai.UserMessage(history.BreadcrumbText))
				if got := adaptertest.JSON(t, out[j]); got != want {
					t.Errorf("budget %d: breadcrumb %s, want %s", budget, got, want)
				}
				continue
			}
			if got, want := adaptertest.JSON(t, out[j]), adaptertest.JSON(t, msgs[k]); got != want {
				t.Errorf("budget %d: message %d (input %d) changed:\n got %s\nwant %s", budget, j, k, got, want)
			}
		}
		if err := Validate(out); err != nil {
			t.Errorf("budget %d: trimmed history fails Validate: %v", budget, err)
		}
	}
	if !trimmedOnce {
		t.Fatal("no budget trimmed")
	}
	if after := adaptertest.JSON(t, msgs); after != before {
		t.Fatal("Trim modified its input")
	}
}

// TestTrimStripsUnansweredCalls: the sweep strips a call nobody answered;
// Trim must send the assistant message without it, keeping everything else
// (name, extra fields, the answered call) and leaving the caller's message
// alone.
func TestTrimStripsUnansweredCalls(t *testing.T) {
	asst := assistantCalls("Checking both.", functionCall("a", "f", "{}"), functionCall("b", "g", "{}"))
	asst.OfAssistant.Name = openai.String("bot")
	asst.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": "r"})
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("sys"),
		openai.UserMessage("go"),
		asst,
		openai.ToolMessage("result a", "a"),
		openai.UserMessage("next"),
	}
	before := adaptertest.JSON(t, msgs)
	out, res, err := Trim(msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 1 {
		t.Fatalf("OrphansRemoved = %d, want 1", res.OrphansRemoved)
	}
	want := asst
	a := *asst.OfAssistant
	a.ToolCalls = a.ToolCalls[:1:1]
	want.OfAssistant = &a
	if got, w := adaptertest.JSON(t, out[2]), adaptertest.JSON(t, want); got != w {
		t.Fatalf("stripped message:\n got %s\nwant %s", got, w)
	}
	if !strings.Contains(adaptertest.JSON(t, out[2]), `"reasoning_content":"r"`) {
		t.Error("extra field lost")
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
	if err := Validate(msgs); !errors.Is(err, ErrUnpaired) {
		t.Errorf("Validate(input) = %v, want ErrUnpaired", err)
	}
	if adaptertest.JSON(t, msgs) != before {
		t.Error("Trim modified its input")
	}
}

// TestTrimStripsOverriddenMessage: a message built with param.Override is
// rewritten at the JSON level, keeping its unknown keys.
func TestTrimStripsOverriddenMessage(t *testing.T) {
	raw := `{"role":"assistant","content":"hm","vendor_field":{"x":1},` +
		`"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},` +
		`{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}`
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("go"),
		param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(raw)),
		openai.ToolMessage("result b", "b"),
	}
	out, res, err := Trim(msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 1 || len(out) != 3 {
		t.Fatalf("OrphansRemoved = %d, %d messages; want 1, 3", res.OrphansRemoved, len(out))
	}
	got := adaptertest.JSON(t, out[1])
	want := `{"content":"hm","role":"assistant","tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}],"vendor_field":{"x":1}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

func TestTrimLegacyFunctionCall(t *testing.T) {
	legacy := legacyAssistant("calling", "old_fn", "{}")
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go"), legacy, openai.UserMessage("never answered")}
	out, _, err := Trim(msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if got := adaptertest.JSON(t, out[1]); strings.Contains(got, "function_call") || !strings.Contains(got, "calling") {
		t.Errorf("unanswered function_call not stripped, or content lost: %s", got)
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestBreadcrumbRecognised: trimming an already trimmed history replaces its
// breadcrumb instead of counting it as a turn or stacking a second one.
func TestBreadcrumbRecognised(t *testing.T) {
	var msgs []openai.ChatCompletionMessageParamUnion
	msgs = append(msgs, openai.SystemMessage("sys"))
	for i := range 6 {
		msgs = append(msgs, openai.UserMessage(strings.Repeat("question ", 20)+string(rune('a'+i))), openai.AssistantMessage(strings.Repeat("answer ", 20)))
	}
	hist, _ := ToHistory(msgs)
	budget := history.Estimate(hist, nil) / 2
	once, _, err := Trim(msgs, budget)
	if err != nil {
		t.Fatal(err)
	}
	if got := adaptertest.JSON(t, once[1]); got != adaptertest.JSON(t, openai.UserMessage(history.BreadcrumbText)) {
		t.Fatalf("message 1 = %s, want the breadcrumb", got)
	}
	h2, _ := ToHistory(once)
	if h2[1].Kind != history.KindBreadcrumb {
		t.Fatalf("breadcrumb not recognised: %+v", h2[1])
	}
	more := append(once[:len(once):len(once)], openai.UserMessage(strings.Repeat("more ", 40)), openai.AssistantMessage(strings.Repeat("ok ", 40)))
	twice, res, err := Trim(more, budget)
	if err != nil {
		t.Fatal(err)
	}
	// The old breadcrumb (message 1 of more) is replaced, not kept.
	if n := slices.Index(res.Kept, -1); n < 0 || slices.Contains(res.Kept, 1) || len(twice) != len(res.Kept) {
		t.Errorf("Kept = %v: want a new breadcrumb and the old one (message 1) left out", res.Kept)
	}
	if res.DroppedMessages%2 != 0 {
		t.Errorf("DroppedMessages = %d: the old breadcrumb was counted as a dropped message", res.DroppedMessages)
	}
	// Not at the front, the same text is an ordinary user message.
	late := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.AssistantMessage("yo"), openai.UserMessage(history.BreadcrumbText)}
	h3, _ := ToHistory(late)
	if h3[2].Kind != "" {
		t.Errorf("late message with the breadcrumb text got Kind %q", h3[2].Kind)
	}
}

func TestTrimCustomBreadcrumbRole(t *testing.T) {
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("sys"),
		openai.UserMessage(strings.Repeat("old ", 200)), openai.AssistantMessage("a"),
		openai.UserMessage("new"), openai.AssistantMessage("b"),
	}
	out, _, err := Trim(msgs, 60, history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[trimmed]"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := adaptertest.JSON(t, out[1]), adaptertest.JSON(t, openai.SystemMessage("[trimmed]")); got != want {
		t.Errorf("breadcrumb = %s, want %s", got, want)
	}
}

func TestTrimErrors(t *testing.T) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("long ", 100))}
	if _, _, err := Trim(msgs, 0); !errors.Is(err, history.ErrInvalidBudget) {
		t.Errorf("budget 0: got %v, want ErrInvalidBudget", err)
	}
	out, res, err := Trim(msgs, 5)
	if !errors.Is(err, history.ErrLatestTurnTooLarge) || len(out) != 1 || res.TokensAfter <= 5 {
		t.Errorf("oversized latest turn: got %d messages, %v; want the turn and ErrLatestTurnTooLarge", len(out), err)
	}
}

// TestReasoningContent: DeepSeek's thinking mode returns an assistant
// message's reasoning in reasoning_content and, when the turn called tools,
// requires it back in every later request ("The `reasoning_content` in the
// thinking mode must be passed back to the API.", charmbracelet/crush#2754,
// earendil-works/pi#3636; https://api-docs.deepseek.com/guides/thinking_mode).
// As an extra field (SetExtraFields) or in an override, it is counted as a
// reasoning part, and comes back untouched: in kept messages, and in the
// copies whose unanswered calls the orphan sweep stripped.
func TestReasoningContent(t *testing.T) {
	thinking := strings.Repeat("The user wants the weather; I should call the tool. ", 20)
	typed := assistantCalls("", functionCall("c1", "weather", `{}`), functionCall("lost", "weather", `{}`))
	typed.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": thinking})
	over := param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(
		`{"role":"assistant","content":null,"reasoning_content":` + strconv.Quote(thinking) +
			`,"tool_calls":[{"id":"c2","type":"function","function":{"name":"weather","arguments":"{}"}},{"id":"lost2","type":"function","function":{"name":"weather","arguments":"{}"}}]}`))
	// As a runtime copies it from a response: ChatCompletionMessage.ToParam
	// keeps no unknown field, so the raw JSON goes into an extra field.
	var resp openai.ChatCompletionMessage
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":"Both are cold.","refusal":null,"reasoning_content":`+strconv.Quote(thinking)+`}`), &resp); err != nil {
		t.Fatal(err)
	}
	copied := resp.ToParam()
	if adaptertest.JSON(t, copied) != `{"content":"Both are cold.","role":"assistant"}` {
		t.Fatalf("ToParam now keeps more: %s", adaptertest.JSON(t, copied))
	}
	copied.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": json.RawMessage(resp.JSON.ExtraFields["reasoning_content"].Raw())})
	notString := openai.AssistantMessage("ok")
	notString.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": 42})
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo and Bergen?"),
		typed, openai.ToolMessage("4 °C", "c1"), over, openai.ToolMessage("6 °C", "c2"), notString, copied}
	hist := mustHistory(t, msgs)
	for _, i := range []int{1, 3, 6} {
		if len(hist[i].Parts) != 1 || hist[i].Parts[0] != (history.Part{Type: history.PartReasoning, Text: thinking}) {
			t.Fatalf("message %d: parts %+v, want the reasoning", i, hist[i].Parts)
		}
	}
	if len(hist[5].Parts) != 0 {
		t.Errorf("a reasoning_content that is not a string was read: %+v", hist[5].Parts)
	}
	plain := []openai.ChatCompletionMessageParamUnion{msgs[0], assistantCalls("", functionCall("c1", "weather", `{}`))}
	if with, without := history.Estimate(hist[:2], nil), history.Estimate(mustHistory(t, plain), nil); with-without < history.EstimateText(thinking) {
		t.Errorf("the reasoning adds %d tokens, want at least %d", with-without, history.EstimateText(thinking))
	}

	out, res, err := Trim(msgs, 100_000)
	if err != nil || res.OrphansRemoved != 2 || len(out) != len(msgs) {
		t.Fatalf("Trim = %d messages, %d orphans, %v", len(out), res.OrphansRemoved, err)
	}
	for _, i := range []int{1, 3} {
		var obj struct {
			ReasoningContent string            `json:"reasoning_content"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal([]byte(adaptertest.JSON(t, out[i])), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.ReasoningContent != thinking || len(obj.ToolCalls) != 1 {
			t.Errorf("message %d: %d calls, reasoning_content kept: %v", i, len(obj.ToolCalls), obj.ReasoningContent == thinking)
		}
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

//lint:file-ignore SA1019 tests of the deprecated function_call, which the adapter must still handle.

// legacyAssistant returns an assistant message using the deprecated
// function_call.
func legacyAssistant(content, name, args string) openai.ChatCompletionMessageParamUnion {
	a := &openai.ChatCompletionAssistantMessageParam{
		FunctionCall: openai.ChatCompletionAssistantMessageParamFunctionCall{Name: name, Arguments: args},
	}
	if content != "" {
		a.Content.OfString = openai.String(content)
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: a}
}

// legacyResult returns a deprecated function-role message answering a
// function_call.
func legacyResult(name, content string) openai.ChatCompletionMessageParamUnion {
	return openai.ChatCompletionMessageParamUnion{OfFunction: &openai.ChatCompletionFunctionMessageParam{Name: name, Content: openai.String(content)}}
}

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Current weather in a city."),
		Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})
}

func schemaFormat() openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{"type": "object", "properties": map[string]any{"temp_c": map[string]any{"type": "number"}}}},
	}}
}

// recorder is a Counter that records the text of each message it counts
// and prices it at its length in bytes.
type recorder struct{ texts []string }

func (r *recorder) CountMessage(m history.Message) int {
	if m.Role != history.RoleSystem || len(m.Parts) > 0 || m.Name != "" {
		return -1 << 20 // not the message Overhead must build
	}
	r.texts = append(r.texts, m.Content)
	return len(m.Content)
}

func TestOverhead(t *testing.T) {
	const (
		toolJSON   = `[{"function":{"name":"get_weather","description":"Current weather in a city.","parameters":{"properties":{"city":{"type":"string"}},"type":"object"}},"type":"function"}]`
		formatJSON = `{"json_schema":{"name":"answer","schema":{"properties":{"temp_c":{"type":"number"}},"type":"object"}},"type":"json_schema"}`
		overJSON   = `[{"type":"custom","custom":{"name":"shell","x_vendor":1}}]`
		fnJSON     = `[{"name":"lookup","description":"Look a term up."}]`
		extraJSON  = `[{"function":{"name":"get_weather","description":"Current weather in a city.","parameters":{"properties":{"city":{"type":"string"}},"type":"object"}},"type":"function","strict_mode":"vendor"}]`
	)
	withMessages := openai.ChatCompletionNewParams{
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("counted by Trim, not here")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool()},
	}
	extra := weatherTool()
	extra.OfFunction.SetExtraFields(map[string]any{"strict_mode": "vendor"})
	legacy := openai.ChatCompletionNewParams{}
	//lint:ignore SA1019 the deprecated functions are still sent, so they are counted.
	legacy.Functions = []openai.ChatCompletionNewParamsFunction{{Name: "lookup", Description: openai.String("Look a term up.")}}
	tests := []struct {
		name   string
		params openai.ChatCompletionNewParams
		want   []string // the texts counted, in order
	}{
		{"nothing besides the messages", openai.ChatCompletionNewParams{Model: "gpt-test", Messages: withMessages.Messages}, nil},
		{"tools, messages not read", withMessages, []string{toolJSON}},
		{"tools and response format", openai.ChatCompletionNewParams{Tools: withMessages.Tools, ResponseFormat: schemaFormat()}, []string{toolJSON, formatJSON}},
		{"json_object format", openai.ChatCompletionNewParams{ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, []string{`{"type":"json_object"}`}},
		{"deprecated functions", legacy, []string{fnJSON}},
		{"override tool as sent", openai.ChatCompletionNewParams{Tools: []openai.ChatCompletionToolUnionParam{param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(`{"type":"custom","custom":{"name":"shell","x_vendor":1}}`))}}, []string{overJSON}},
		{"extra fields as sent", openai.ChatCompletionNewParams{Tools: []openai.ChatCompletionToolUnionParam{extra}}, []string{extraJSON}},
		{"explicit nulls", openai.ChatCompletionNewParams{Tools: param.NullSlice[[]openai.ChatCompletionToolUnionParam](), ResponseFormat: param.NullStruct[openai.ChatCompletionNewParamsResponseFormatUnion]()}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			got := Overhead(tc.params, &r)
			if !slices.Equal(r.texts, tc.want) {
				t.Fatalf("counted %q\nwant    %q", r.texts, tc.want)
			}
			want := 0
			for _, s := range tc.want {
				want += len(s)
			}
			if got != want {
				t.Fatalf("Overhead = %d, want %d (the sum of the counts)", got, want)
			}
			// A nil Counter is Heuristic, counting the same messages.
			h := 0
			for _, s := range tc.want {
				h += history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: s})
			}
			if got := Overhead(tc.params, nil); got != h {
				t.Fatalf("Overhead(nil counter) = %d, want Heuristic's %d", got, h)
			}
		})
	}
}

// TestOverheadCounts: negative counts count 0, huge ones saturate.
func TestOverheadCounts(t *testing.T) {
	p := openai.ChatCompletionNewParams{Tools: []openai.ChatCompletionToolUnionParam{weatherTool()}, ResponseFormat: schemaFormat()}
	tests := []struct {
		count, want int
	}{
		{-5, 0},
		{math.MaxInt, math.MaxInt},
		{math.MaxInt/2 + 1, math.MaxInt},
		{7, 14},
	}
	for _, tc := range tests {
		c := history.CounterFunc(func(history.Message) int { return tc.count })
		if got := Overhead(p, c); got != tc.want {
			t.Errorf("count %d per part: Overhead = %d, want %d", tc.count, got, tc.want)
		}
	}
}

// TestOverheadAsSent: what Overhead counts is the tools and
// response_format JSON the real client sends.
func TestOverheadAsSent(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer srv.Close()
	params := openai.ChatCompletionNewParams{
		Model:          "gpt-test",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Tools:          []openai.ChatCompletionToolUnionParam{weatherTool(), param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(`{"type":"custom","custom":{"name":"shell"}}`))},
		ResponseFormat: schemaFormat(),
	}
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	var r recorder
	Overhead(params, &r)
	want := []string{string(sent["tools"]), string(sent["response_format"])}
	if !slices.Equal(r.texts, want) {
		t.Fatalf("counted %q\nthe client sent %q", r.texts, want)
	}
}

// TestValidate checks the two halves of the pairing rule, each of which
// OpenAI enforces with an HTTP 400 (invalid_request_error):
//
//   - a call without its tool messages: "An assistant message with
//     'tool_calls' must be followed by tool messages responding to each
//     'tool_call_id'. The following tool_call_ids did not have response
//     messages: call_RTlWVuE5MqEb3WZJgTIl7Rsb" (param "messages.[6].role";
//     router-for-me/CLIProxyAPI#2798);
//   - a tool message that answers no call of the preceding assistant
//     message: "Invalid parameter: messages with role 'tool' must be a
//     response to a preceeding message with 'tool_calls'." (OpenAI's
//     spelling; param "messages.[4].role"; smarter-sh/smarter#264,
//     miurla/morphic#136).
//
// internal/fakeprovider answers with the same bodies; replay_test.go sends
// peers' broken trims to it with the real client.
func TestValidate(t *testing.T) {
	u, tool := openai.UserMessage[string], openai.ToolMessage[string]
	cases := []struct {
		name, reason string
		msgs         []openai.ChatCompletionMessageParamUnion
		index        int // -1: valid
		id           string
	}{
		{"empty", "nothing to pair", nil, -1, ""},
		{"plain chat", "no tools", []openai.ChatCompletionMessageParamUnion{u("hi"), openai.AssistantMessage("yo")}, -1, ""},
		{"parallel calls any order", "results may come in any order",
			[]openai.ChatCompletionMessageParamUnion{u("go"), assistantCalls("", functionCall("a", "f", ""), functionCall("b", "g", "")), tool("B", "b"), tool("A", "a"), openai.AssistantMessage("ok")}, -1, ""},
		{"id reused later", "ids only need to be unique within an exchange",
			[]openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("a", "f", "")), tool("1", "a"), assistantCalls("", functionCall("a", "f", "")), tool("2", "a")}, -1, ""},
		{"legacy pair", "function_call answered by a function message",
			[]openai.ChatCompletionMessageParamUnion{legacyAssistant("", "f", "{}"), openai.ChatCompletionMessageParamOfFunction("r", "f")}, -1, ""},
		{"unanswered at end", "a call must be answered before the request ends",
			[]openai.ChatCompletionMessageParamUnion{u("go"), assistantCalls("", functionCall("a", "f", ""))}, 1, "a"},
		{"answer after user", "the answer must come before the next non-tool message",
			[]openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("a", "f", "")), u("wait"), tool("A", "a")}, 0, "a"},
		{"one of two answered", "every call of a parallel batch needs its answer",
			[]openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("a", "f", ""), functionCall("b", "f", "")), tool("A", "a"), u("next")}, 0, "b"},
		{"orphan tool", "a tool message with no preceding call",
			[]openai.ChatCompletionMessageParamUnion{u("hi"), tool("x", "a")}, 1, "a"},
		{"wrong id", "the id must be one of the preceding assistant's calls",
			[]openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("a", "f", "")), tool("A", "a"), tool("Z", "z")}, 2, "z"},
		{"answered twice", "one call, one answer",
			[]openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("a", "f", "")), tool("A", "a"), tool("A", "a")}, 2, "a"},
		{"answer to an older assistant", "only the immediately preceding assistant counts",
			[]openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("a", "f", "")), tool("A", "a"), openai.AssistantMessage("done"), tool("A", "a")}, 3, "a"},
	}
	where := func(e *PairingError) (int, string) { return e.Index, e.ID }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adaptertest.Violation(t, Validate(tc.msgs), ErrUnpaired, where, tc.index, tc.id, tc.reason)
		})
	}
}

// genConversation builds a conversation from data: the fuzzer's bytes or a
// seed. It deliberately produces broken pairs (unanswered calls, stray and
// duplicate tool messages) as well as good ones.
func genConversation(data []byte) []openai.ChatCompletionMessageParamUnion {
	var msgs []openai.ChatCompletionMessageParamUnion
	seed := adaptertest.Bytes(data)
	next := seed.Next
	text := adaptertest.Words
	if b := next(); b >= 0 && b%3 != 0 {
		msgs = append(msgs, openai.SystemMessage(text(b)))
	}
	var pending []string
	id := 0
	for {
		b := next()
		if b < 0 {
			return msgs
		}
		switch b % 8 {
		case 0, 1:
			msgs = append(msgs, openai.UserMessage(text(b)))
		case 2:
			msgs = append(msgs, openai.AssistantMessage(text(b)))
		case 3, 4:
			var calls []openai.ChatCompletionMessageToolCallUnionParam
			pending = pending[:0]
			for range 1 + b%3 {
				id++
				cid := "call_" + strconv.Itoa(id)
				calls = append(calls, functionCall(cid, "tool", `{"n":`+strconv.Itoa(b)+`}`))
				pending = append(pending, cid)
			}
			content := ""
			if b%2 == 0 {
				content = text(b)
			}
			msgs = append(msgs, assistantCalls(content, calls...))
		case 5, 6:
			// Answer pending calls, in an order and number chosen by b.
			for k := range pending {
				if (b>>(k+3))&1 == 0 || b%7 == 0 {
					msgs = append(msgs, openai.ToolMessage(text(b), pending[(k+b)%len(pending)]))
				}
			}
		case 7:
			if b%2 == 0 {
				msgs = append(msgs, openai.ToolMessage(text(b), "stray_"+strconv.Itoa(b)))
			} else {
				msgs = append(msgs, openai.DeveloperMessage(text(b)))
			}
		}
	}
}

// checkTrim is the property every trim must have: the output passes
// Validate, the input is untouched, every kept message is the caller's
// original (or, when calls were stripped, the original minus those calls),
// and a second trim with the same budget changes nothing more.
func checkTrim(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion, budget int) {
	t.Helper()
	newPropInput(t, msgs).check(t, budget)
}

// propInput is a conversation checkTrim trims, with what it reads of each
// message once for all its budgets: the message's JSON and the number of
// its tool calls.
type propInput struct {
	msgs  []openai.ChatCompletionMessageParamUnion
	json  []string
	calls []int
}

func newPropInput(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) *propInput {
	t.Helper()
	in := &propInput{msgs: msgs, json: make([]string, len(msgs)), calls: make([]int, len(msgs))}
	for k := range msgs {
		in.json[k] = adaptertest.JSON(t, msgs[k])
		in.calls[k] = len(mustHistory(t, msgs[k:k+1])[0].ToolCalls)
	}
	return in
}

// check is checkTrim at budget.
func (in *propInput) check(t *testing.T, budget int) {
	t.Helper()
	out, res, _ := adapter.Trimmed(t, in.msgs, budget)
	if res.Kept != nil {
		if len(out) != len(res.Kept) {
			t.Fatalf("budget %d: %d messages for %d Kept", budget, len(out), len(res.Kept))
		}
		for j, k := range res.Kept {
			if k < 0 {
				continue
			}
			got, orig := adaptertest.JSON(t, out[j]), in.json[k]
			if got != orig && len(res.Messages[j].ToolCalls) == in.calls[k] {
				t.Fatalf("budget %d: kept message %d changed without stripping:\n got %s\nwant %s", budget, k, got, orig)
			}
			h := mustHistory(t, out[j:j+1])[0]
			if adaptertest.JSON(t, h.ToolCalls) != adaptertest.JSON(t, res.Messages[j].ToolCalls) {
				t.Fatalf("budget %d: native calls %v, core decided %v", budget, h.ToolCalls, res.Messages[j].ToolCalls)
			}
		}
	}
	again, _, _ := Trim(out, budget)
	if adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
		t.Fatalf("budget %d: trimming the output again changed it", budget)
	}
}

func mustHistory(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) []history.Message {
	t.Helper()
	h, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

var fuzzSeeds = [][]byte{
	{1, 0, 3, 5, 2, 0, 4, 6, 1, 8},
	{2, 0, 11, 13, 0, 3, 7, 0, 2, 1, 12, 14, 9},
	{0, 4, 0, 8, 7, 15, 3, 0, 3, 5, 23},
	{1, 1, 9, 17, 25, 2, 3, 6, 0, 4, 4, 5, 5, 0},
	{5, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 8},
}

// TestTrimProperty runs checkTrim over generated conversations at every
// budget from 1 to just above their size.
func TestTrimProperty(t *testing.T) {
	// Under the race detector, 15 of the 45 conversations (race.Sample)
	// at a third of the budgets (Budgets): the plain run checks all; the
	// trims are single-goroutine logic.
	for _, seed := range race.Sample(adaptertest.Seeds(fuzzSeeds, 40), 15) {
		msgs := genConversation(seed)
		in := newPropInput(t, msgs)
		for _, budget := range adaptertest.Budgets(adapter.Tokens(t, msgs), 40) {
			in.check(t, budget)
		}
	}
}

func FuzzTrim(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint16(50))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		checkTrim(t, genConversation(data), int(budget)+1)
	})
}

// pinnedAgent returns an agent conversation with a developer instruction
// given mid-conversation after an assistant note, and the indices to pin:
// the note, the instruction and the first task (when the seed makes one).
func pinnedAgent(seed []byte) (conversation, []int) {
	msgs := genAgent(seed)
	mid := len(msgs) / 2
	for mid < len(msgs) && msgs[mid].OfUser == nil {
		mid++ // before a task, so that no tool exchange is split
	}
	msgs = slices.Insert(msgs, mid,
		openai.AssistantMessage("Noted: staging is read-only, I will use the fixtures."),
		openai.DeveloperMessage("Remember: the staging database is read-only."))
	pins := []int{mid, mid + 1}
	for i, m := range msgs {
		if m.OfUser != nil {
			pins = append(pins, i)
			break
		}
	}
	return msgs, pins
}

// TestPinSurvivesEveryBudget: native indices pin the caller's messages
// (one history message per native message, so WithPin passes through):
// each pinned message is in the output, as the caller's value, at every
// budget and with every rung of the ladder, and the output is valid and
// converts back to the Result.
func TestPinSurvivesEveryBudget(t *testing.T) {
	// Under the race detector, 4 of the 8 conversations (race.Sample):
	// the plain run sweeps all; the trims are single-goroutine logic.
	for _, seed := range race.Sample(adaptertest.Seeds(adaptertest.LadderSeeds, 4), 4) {
		msgs, pins := pinnedAgent(seed)
		sets := append(adapter.LadderOptions(), nil)
		for o := range sets {
			sets[o] = append(slices.Clip(sets[o]), history.WithPin(pins...))
		}
		adaptertest.Sweep(t, seed, adapter.Tokens(t, msgs), sets, func(t *testing.T, budget int, opts []history.Option) {
			out, res, err := adapter.Trimmed(t, msgs, budget, opts...)
			for _, p := range pins {
				j := slices.Index(res.Kept, p)
				if j < 0 {
					t.Fatalf("budget %d (%v): pinned message %d dropped; kept %v", budget, err, p, res.Kept)
				}
				if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, msgs[p]) {
					t.Fatalf("budget %d: pinned message %d is not the caller's: %s", budget, p, adaptertest.JSON(t, out[j]))
				}
			}
			assertRebuilt(t, out, res, opts)
		})
	}
}

// TestPinErrors: the core refuses a pin that would separate a tool call
// from its result, and the native index it names is the caller's.
func TestPinErrors(t *testing.T) {
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("sys"),
		openai.UserMessage("task"),
		assistantCalls("", functionCall("c1", "read", "{}")),
		openai.ToolMessage("result", "c1"),
		legacyAssistant("", "lookup", "{}"),
		legacyResult("lookup", "legacy result"),
		openai.AssistantMessage("done"),
		openai.UserMessage(history.BreadcrumbText),
		openai.UserMessage("next"),
	}
	tests := []struct {
		pin  int
		want string // in the reason
	}{
		{2, "message 2 has tool calls"},
		{3, "message 3 is a tool result"},
		{4, "message 4 has tool calls"},
		{5, "message 5 is a tool result"},
		{9, "index 9 is outside the history of 9 messages"},
		{-1, "index -1 is negative"},
	}
	for _, tc := range tests {
		for name, call := range map[string]func() ([]openai.ChatCompletionMessageParamUnion, error){
			"Trim": func() ([]openai.ChatCompletionMessageParamUnion, error) {
				out, _, err := Trim(msgs, 10, history.WithPin(tc.pin))
				return out, err
			},
			"RecoverOverflow": func() ([]openai.ChatCompletionMessageParamUnion, error) {
				out, _, err := RecoverOverflow(msgs, errors.New(overflowBody(100, 120)), 1, history.WithPin(tc.pin))
				return out, err
			},
		} {
			out, err := call()
			var oe *history.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) || oe.Option != "WithPin" || !strings.Contains(oe.Reason, tc.want) {
				t.Errorf("%s, pin %d: error %v, want a WithPin *history.OptionError saying %q", name, tc.pin, err, tc.want)
			}
			if out != nil {
				t.Errorf("%s, pin %d: output on an option error", name, tc.pin)
			}
		}
	}
	// Pinnable: the system prompt, the task, the answer. The turn notice
	// where trims put it is marked as a notice (the core replaces it); a
	// user message with its text after a turn is a task like any other.
	for _, p := range []int{0, 1, 6, 7} {
		if _, _, err := Trim(msgs, 1000, history.WithPin(p)); err != nil {
			t.Errorf("pin %d: %v", p, err)
		}
	}
}

// TestPinRepeatedTrim: a runtime that adopts each output and pins its
// instruction again at its new position (found with Result.Kept) keeps it
// through trims that drop more and more, and notices never stack.
func TestPinRepeatedTrim(t *testing.T) {
	msgs := agentTurns(8, 150)
	msgs = slices.Insert(msgs, 5, openai.DeveloperMessage("Remember: answer in French."))
	pin := 5
	for budget := adapter.Tokens(t, msgs) - 50; budget > 300; budget -= 250 {
		out, res, err := Trim(msgs, budget, history.WithPin(pin), history.WithElision(history.ElideOptions{}), history.WithStepTrim())
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		j := slices.Index(res.Kept, pin)
		if j < 0 {
			t.Fatalf("budget %d: the pinned instruction was dropped", budget)
		}
		notices := 0
		for _, m := range out {
			if m.OfUser != nil && m.OfUser.Content.OfString.Value == history.BreadcrumbText {
				notices++
			}
		}
		if notices > 1 {
			t.Fatalf("budget %d: %d turn notices", budget, notices)
		}
		msgs, pin = out, j
	}
	if pin != 1 {
		t.Fatalf("the instruction ends at %d, want 1: lifted out of its dropped turn, after the system prompt", pin)
	}
}

// contractConversation is a system prompt and six turns of a task, a call,
// its result and an answer.
func contractConversation() []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		a := openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read", Arguments: `{}`}}}}}
		msgs = append(msgs, openai.UserMessage("task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			openai.ChatCompletionMessageParamUnion{OfAssistant: &a},
			openai.ToolMessage(strings.Repeat("output line\n", 40), id),
			openai.AssistantMessage("done "+strconv.Itoa(i)))
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[openai.ChatCompletionMessageParamUnion]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[openai.ChatCompletionMessageParamUnion] {
			return NewConversations(s, opts...)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.Trimmer[openai.ChatCompletionMessageParamUnion] {
			return NewTrimmer(opts...)
		},
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Task:       func(s string) openai.ChatCompletionMessageParamUnion { return openai.UserMessage(s) },
		Invalid:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), {}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows:    []error{adaptertest.OverflowText(1000, 2000)},
		NotOverflows: []error{errors.New("Rate limit reached for gpt-4o: please try again in 20s")},
	}
	c.Run(t)
}

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that adapter and core are released and upgraded together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }
