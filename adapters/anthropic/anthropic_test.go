package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

func cached(b anthropic.ContentBlockParamUnion) anthropic.ContentBlockParamUnion {
	cc := anthropic.NewCacheControlEphemeralParam()
	cc.TTL = anthropic.CacheControlEphemeralTTLTTL1h
	if p := b.GetCacheControl(); p != nil {
		*p = cc
	}
	return b
}

func user(blocks ...anthropic.ContentBlockParamUnion) anthropic.MessageParam {
	return anthropic.NewUserMessage(blocks...)
}

func assistant(blocks ...anthropic.ContentBlockParamUnion) anthropic.MessageParam {
	return anthropic.NewAssistantMessage(blocks...)
}

func text(s string) anthropic.ContentBlockParamUnion { return anthropic.NewTextBlock(s) }

func toolUse(id, name string) anthropic.ContentBlockParamUnion {
	return anthropic.NewToolUseBlock(id, map[string]any{"q": name}, name)
}

func result(id, content string) anthropic.ContentBlockParamUnion {
	return anthropic.NewToolResultBlock(id, content, false)
}

// richRequest exercises the blocks and fields a runtime must not lose:
// cache_control, thinking signatures, redacted thinking, images (base64 and
// URL), documents, tool results with images and is_error, server-tool
// blocks, blocks of unknown type, extra fields.
func richRequest(t testing.TB) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	sysBlock := anthropic.TextBlockParam{Text: "You are a careful agent."}
	sysBlock.CacheControl = anthropic.NewCacheControlEphemeralParam()
	system := []anthropic.TextBlockParam{sysBlock, {Text: "Answer briefly."}}

	first := user(
		text("Describe this image and this PDF."),
		anthropic.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(adaptertest.PNG(t, 1000, 500))),
		anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: "https://example.com/a.png"}),
		anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: "JVBERi0xLjQK"}),
	)
	first.SetExtraFields(map[string]any{"x_trace": "t-1"})

	toolRes := anthropic.ToolResultBlockParam{ToolUseID: "toolu_2", IsError: anthropic.Bool(true)}
	toolRes.Content = []anthropic.ToolResultBlockParamContentUnion{
		{OfText: &anthropic.TextBlockParam{Text: "not found"}},
		{OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(adaptertest.PNG(t, 200, 100)), MediaType: "image/png"}}}},
	}

	var server anthropic.MessageParam
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":[
		{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"weather"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"Weather","encrypted_content":"abc"}]},
		{"type":"text","text":"Sunny."}]}`), &server); err != nil {
		t.Fatal(err)
	}
	future := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(`{"type":"future_block","payload":"keep me"}`))

	return system, []anthropic.MessageParam{
		first,
		assistant(
			anthropic.NewThinkingBlock("sig-abc==", "Let me think about the image."),
			anthropic.NewRedactedThinkingBlock("ENCRYPTED=="),
			text("I'll look closer."),
			toolUse("toolu_1", "zoom"),
			cached(toolUse("toolu_2", "ocr")),
		),
		user(result("toolu_1", "zoomed"), anthropic.ContentBlockParamUnion{OfToolResult: &toolRes}, cached(text("Also, be quick."))),
		assistant(text("It is a gray rectangle."), future),
		user(text("Weather?")),
		server,
		user(cached(text("Thanks!"))),
	}
}

func TestToHistory(t *testing.T) {
	system, msgs := richRequest(t)
	before := adaptertest.JSON(t, msgs)
	hist, err := ToHistory(system, msgs)
	if err != nil {
		t.Fatal(err)
	}
	roles := make([]string, len(hist))
	for i, m := range hist {
		roles[i] = string(m.Role) + "/" + string(m.Kind)
	}
	want := "system/ user/ assistant/ tool/ tool/ user/nudge assistant/ user/ assistant/ user/"
	if got := strings.Join(roles, " "); got != want {
		t.Fatalf("roles %s\nwant  %s", got, want)
	}
	check := func(i int, got, want any, what string) {
		t.Helper()
		if adaptertest.JSON(t, got) != adaptertest.JSON(t, want) {
			t.Errorf("message %d %s:\n got %s\nwant %s", i, what, adaptertest.JSON(t, got), adaptertest.JSON(t, want))
		}
	}
	check(0, hist[0].Parts, []history.Part{{Type: history.PartText, Text: "You are a careful agent."}, {Type: history.PartText, Text: "Answer briefly."}}, "system")
	check(1, hist[1].Parts, []history.Part{
		{Type: history.PartText, Text: "Describe this image and this PDF."},
		{Type: history.PartImage, Width: 1000, Height: 500, MIMEType: "image/png", Tokens: 667},
		{Type: history.PartImage, Tokens: imageMaxTokens},
		{Type: history.PartFile, MIMEType: "application/pdf", Size: 9},
	}, "user parts")
	check(2, hist[2].ToolCalls, []history.ToolCall{{ID: "toolu_1", Name: "zoom", Arguments: `{"q":"zoom"}`}, {ID: "toolu_2", Name: "ocr", Arguments: `{"q":"ocr"}`}}, "tool calls")
	check(2, hist[2].Parts, []history.Part{
		{Type: history.PartReasoning, Text: "Let me think about the image."},
		{Type: history.PartReasoning, Text: "ENCRYPTED=="},
		{Type: history.PartText, Text: "I'll look closer."},
	}, "assistant parts")
	check(3, hist[3], history.Message{Role: history.RoleTool, ToolCallID: "toolu_1", Parts: []history.Part{{Type: history.PartText, Text: "zoomed"}}}, "tool result")
	check(4, hist[4].Parts, []history.Part{{Type: history.PartText, Text: "not found"}, {Type: history.PartImage, Width: 200, Height: 100, MIMEType: "image/png", Tokens: 27}}, "tool result with image")
	check(5, hist[5].Parts, []history.Part{{Type: history.PartText, Text: "Also, be quick."}}, "text after results")
	check(6, hist[6].Parts[1], history.Part{Type: history.PartText, Text: `{"type":"future_block","payload":"keep me"}`}, "unknown block")
	if len(hist[8].Parts) != 3 || !strings.Contains(hist[8].Parts[0].Text, "web_search") {
		t.Errorf("server tool blocks not counted: %+v", hist[8].Parts)
	}
	if adaptertest.JSON(t, msgs) != before {
		t.Error("ToHistory modified its input")
	}
}

func TestImageTokens(t *testing.T) {
	cases := []struct {
		w, h, want int
		reason     string
	}{
		{0, 0, imageMaxTokens, "unknown size is charged the maximum"},
		{750, 1, 1, "tokens = pixels/750"},
		{1000, 1000, 1334, "under both limits: ceil(1e6/750)"},
		{1092, 1092, 1590, "the largest image that is not scaled"},
		{4000, 3000, 1590, "scaled down to the area limit"},
		{3136, 100, 105, "long edge scaled to 1568 first: ceil(1568*50/750)"},
	}
	for _, c := range cases {
		if got := imageTokens(c.w, c.h); got != c.want {
			t.Errorf("%dx%d: %d tokens, want %d (%s)", c.w, c.h, got, c.want, c.reason)
		}
	}
}

func TestToHistoryErrors(t *testing.T) {
	cases := []struct {
		name, reason string
		msgs         []anthropic.MessageParam
		index        int
	}{
		{"empty tool_use id", "the core pairs by id", []anthropic.MessageParam{user(text("hi")), assistant(toolUse("", "f"))}, 1},
		{"duplicate tool_use id", "two calls with one id cannot be told apart", []anthropic.MessageParam{assistant(toolUse("a", "f"), toolUse("a", "g"))}, 0},
		{"tool_use in user message", "only the assistant calls tools", []anthropic.MessageParam{user(toolUse("a", "f"))}, 0},
		{"tool_result in assistant message", "only the user answers", []anthropic.MessageParam{assistant(result("a", "x"))}, 0},
		{"empty tool_use_id", "a result must name its call", []anthropic.MessageParam{user(result("", "x"))}, 0},
		{"unknown role", "no mapping for it", []anthropic.MessageParam{{Role: "robot", Content: []anthropic.ContentBlockParamUnion{text("x")}}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToHistory(nil, tc.msgs)
			var me *MessageError
			if !errors.As(err, &me) || me.Index != tc.index || !errors.Is(err, history.ErrInvalidMessage) {
				t.Fatalf("%s: got %v, want *MessageError at %d wrapping history.ErrInvalidMessage", tc.reason, err, tc.index)
			}
			if !strings.HasPrefix(err.Error(), "history/anthropic: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if _, _, err := Trim(nil, tc.msgs, 1000); !errors.As(err, &me) {
				t.Errorf("Trim: got %v, want the same *MessageError", err)
			}
		})
	}
}

// TestTrimRoundTrip: with room for everything, Trim returns the input
// itself; with less, every message it returns is one of the caller's
// originals, byte for byte in JSON, or the breadcrumb.
func TestTrimRoundTrip(t *testing.T) {
	system, msgs := richRequest(t)
	before, sysBefore := adaptertest.JSON(t, msgs), adaptertest.JSON(t, system)

	out, res, err := Trim(system, msgs, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if !adaptertest.Identity(res.Kept, len(res.Messages)) || len(out) != len(msgs) || &out[0] != &msgs[0] { // the system prompt is message 0
		t.Fatalf("untrimmed history was copied or changed: Kept=%v", res.Kept)
	}
	if got := adaptertest.JSON(t, out); got != before {
		t.Fatalf("round trip changed the messages:\n got %s\nwant %s", got, before)
	}
	for _, keep := range []string{`"signature":"sig-abc=="`, `"data":"ENCRYPTED=="`, `"cache_control":{"ttl":"1h","type":"ephemeral"}`,
		`"x_trace":"t-1"`, `"payload":"keep me"`, `"is_error":true`, `"encrypted_content":"abc"`} {
		if !strings.Contains(before, keep) {
			t.Fatalf("test input lacks %s", keep)
		}
	}

	hist, _ := ToHistory(system, msgs)
	total := history.Estimate(hist, nil)
	crumb := adaptertest.JSON(t, anthropic.NewUserMessage(anthropic.NewTextBlock(history.BreadcrumbText)))
	originals := map[string]bool{}
	for _, m := range msgs {
		originals[adaptertest.JSON(t, m)] = true
	}
	for budget := total - 1; budget > 0; budget -= 11 {
		out, res, err := Trim(system, msgs, budget)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if !res.Trimmed || adaptertest.JSON(t, out[0]) != crumb {
			t.Fatalf("budget %d: not trimmed, or no breadcrumb first: %s", budget, adaptertest.JSON(t, out))
		}
		for j, m := range out[1:] {
			if !originals[adaptertest.JSON(t, m)] {
				t.Errorf("budget %d: message %d is not one of the originals: %s", budget, j+1, adaptertest.JSON(t, m))
			}
		}
		if err := Validate(out); err != nil {
			t.Errorf("budget %d: %v", budget, err)
		}
	}
	if adaptertest.JSON(t, msgs) != before || adaptertest.JSON(t, system) != sysBefore {
		t.Fatal("Trim modified its input")
	}
}

// TestTrimPartialMessages: the orphan sweep strips an unanswered tool_use
// from an assistant message and an orphaned tool_result from a user
// message; Trim sends copies without just those blocks, everything else
// (thinking signature, cache_control, text after the results, extra
// fields) kept, and leaves the caller's messages alone.
func TestTrimPartialMessages(t *testing.T) {
	a := assistant(anthropic.NewThinkingBlock("sig", "hmm"), toolUse("a", "f"), toolUse("b", "g"))
	u := user(result("a", "A"), result("zzz", "orphan"), cached(text("go on")))
	u.SetExtraFields(map[string]any{"x_note": 1})
	msgs := []anthropic.MessageParam{user(text("start")), a, u, assistant(text("done"))}
	before := adaptertest.JSON(t, msgs)

	out, res, err := Trim(nil, msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 2 {
		t.Fatalf("OrphansRemoved = %d, want 2 (call b, result zzz)", res.OrphansRemoved)
	}
	wantA := assistant(anthropic.NewThinkingBlock("sig", "hmm"), toolUse("a", "f"))
	wantU := user(result("a", "A"), cached(text("go on")))
	wantU.SetExtraFields(map[string]any{"x_note": 1})
	want := adaptertest.JSON(t, []anthropic.MessageParam{msgs[0], wantA, wantU, msgs[3]})
	if got := adaptertest.JSON(t, out); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
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

	// A user message whose only tool_result is an orphan, with nothing
	// else, disappears.
	msgs = []anthropic.MessageParam{user(text("start")), assistant(text("hi")), user(result("x", "orphan")), user(text("next"))}
	out, _, err = Trim(nil, msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := adaptertest.JSON(t, out), adaptertest.JSON(t, []anthropic.MessageParam{msgs[0], msgs[1], msgs[3]}); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestTrimResultsSplitAcrossMessages: the API wants every tool_result in
// the message right after its tool_use; a result in a later user message is
// an orphan even though only tool results stand between.
func TestTrimResultsSplitAcrossMessages(t *testing.T) {
	msgs := []anthropic.MessageParam{
		user(text("go")),
		assistant(text("two calls"), toolUse("a", "f"), toolUse("b", "g")),
		user(result("a", "A")),
		user(result("b", "B")),
		assistant(text("done")),
	}
	if err := Validate(msgs); !errors.Is(err, ErrUnpaired) {
		t.Fatalf("Validate(input) = %v, want ErrUnpaired", err)
	}
	out, res, err := Trim(nil, msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	want := adaptertest.JSON(t, []anthropic.MessageParam{msgs[0], assistant(text("two calls"), toolUse("a", "f")), msgs[2], msgs[4]})
	if got := adaptertest.JSON(t, out); got != want || res.OrphansRemoved != 2 {
		t.Fatalf("OrphansRemoved %d\ngot  %s\nwant %s", res.OrphansRemoved, got, want)
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestTrimOverriddenMessage: a message built with param.Override is
// rewritten at the JSON level, keeping its unknown keys.
func TestTrimOverriddenMessage(t *testing.T) {
	raw := `{"role":"assistant","vendor":{"x":1},"content":[{"type":"text","text":"hm"},` +
		`{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{}}]}`
	msgs := []anthropic.MessageParam{
		user(text("go")),
		param.Override[anthropic.MessageParam](json.RawMessage(raw)),
		user(result("b", "B")),
	}
	out, res, err := Trim(nil, msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 1 || len(out) != 3 {
		t.Fatalf("OrphansRemoved = %d, %d messages; want 1, 3", res.OrphansRemoved, len(out))
	}
	want := `{"content":[{"type":"text","text":"hm"},{"type":"tool_use","id":"b","name":"g","input":{}}],"role":"assistant","vendor":{"x":1}}`
	if got := adaptertest.JSON(t, out[1]); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestBreadcrumbRecognised: trimming an already trimmed history replaces its
// breadcrumb instead of counting it as a turn or stacking a second one.
func TestBreadcrumbRecognised(t *testing.T) {
	var msgs []anthropic.MessageParam
	for i := range 6 {
		msgs = append(msgs, user(text(strings.Repeat("question ", 20)+string(rune('a'+i)))), assistant(text(strings.Repeat("answer ", 20))))
	}
	system := []anthropic.TextBlockParam{{Text: "sys"}}
	hist, _ := ToHistory(system, msgs)
	budget := history.Estimate(hist, nil) / 2
	once, _, err := Trim(system, msgs, budget)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := ToHistory(system, once)
	if h2[1].Kind != history.KindBreadcrumb {
		t.Fatalf("breadcrumb not recognised: %+v", h2[1])
	}
	more := append(once[:len(once):len(once)], user(text(strings.Repeat("more ", 40))), assistant(text(strings.Repeat("ok ", 40))))
	twice, res, err := Trim(system, more, budget)
	if err != nil {
		t.Fatal(err)
	}
	// The old breadcrumb (message 0: the Result describes the messages,
	// not the system prompt) is replaced, not kept.
	if slices.Index(res.Kept, -1) < 0 || slices.Contains(res.Kept, 0) || len(twice) != len(res.Kept) {
		t.Errorf("Kept = %v: want a new breadcrumb and the old one (message 0) left out", res.Kept)
	}
	if res.DroppedMessages%2 != 0 {
		t.Errorf("DroppedMessages %d; want an even count (whole user/assistant turns)", res.DroppedMessages)
	}
}

func TestTrimErrors(t *testing.T) {
	msgs := []anthropic.MessageParam{user(text(strings.Repeat("long ", 100)))}
	if _, _, err := Trim(nil, msgs, 0); !errors.Is(err, history.ErrInvalidBudget) {
		t.Errorf("budget 0: got %v, want ErrInvalidBudget", err)
	}
	out, res, err := Trim(nil, msgs, 5)
	if !errors.Is(err, history.ErrLatestTurnTooLarge) || len(out) != 1 || res.TokensAfter <= 5 {
		t.Errorf("oversized latest turn: got %d messages, %v; want the turn and ErrLatestTurnTooLarge", len(out), err)
	}
}

// The Messages API's own error messages for the rules ValidateRequest
// checks, as public reports quote them (each names its source), and the
// message the API would give for a violation ValidateRequest reports. The
// thinking tests and the httptest server of the SDK tests answer with them.

// apiMessage returns the "message" of the API's invalid_request_error for
// err, a violation ValidateRequest reported for msgs, or "" when err is
// nil.
func apiMessage(err error) string {
	var pe *PairingError
	var te *ThinkingError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe) && strings.Contains(pe.Reason, "no tool_result"):
		// anthropics/claude-code#5060, #2697, #7929; lbjlaq/Antigravity-Manager#654.
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", pe.Index, pe.ID)
	case errors.As(err, &pe):
		// anthropics/claude-code#13460 (the API names the block; the
		// adapter's error names the message).
		return fmt.Sprintf("messages.%d.content.0: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", pe.Index, pe.ID)
	case errors.As(err, &te) && strings.Contains(te.Reason, "final assistant turn"):
		// openai/openai-agents-python#1704 (found `tool_use`),
		// pydantic/pydantic-ai#2075 (found `text`), anomalyco/opencode#3077
		// and n8n-io/n8n#22550 (the docs.claude.com address).
		found := te.Reason[strings.LastIndex(te.Reason, " ")+1:]
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", te.Index, strings.Trim(found, `"`))
	case errors.As(err, &te) && strings.Contains(te.Reason, "first block must be"):
		// anthropics/claude-code#20705, lbjlaq/Antigravity-Manager#653
		// (both "Found text.").
		found := te.Reason[strings.LastIndex(te.Reason, " ")+1:]
		return fmt.Sprintf("messages.%d.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found %s.", te.Index, strings.Trim(found, `"`))
	case errors.As(err, &te) && strings.Contains(te.Reason, "final block"):
		// tailcallhq/forgecode#2107 ("messages.1: ..."), #3071.
		return fmt.Sprintf("messages.%d: The final block in an assistant message cannot be `thinking`.", te.Index)
	case errors.As(err, &te) && strings.Contains(te.Reason, "disabled"):
		// tailcallhq/forgecode#1853, #1195, #1197.
		return fmt.Sprintf("messages.%d.content.%d: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.", te.Index, te.Block)
	}
	return "invalid request: " + err.Error()
}

func TestOverhead(t *testing.T) {
	weather := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	}, "get_weather")
	empty := anthropic.ToolInputSchemaParam{Properties: map[string]any{}}
	described := anthropic.ToolUnionParamOfTool(empty, "list_files")
	described.OfTool.Description = anthropic.String("Lists the files of the repository, recursively.")
	extra := anthropic.ToolUnionParamOfTool(empty, "deploy")
	extra.OfTool.SetExtraFields(map[string]any{"x_internal": "a field the SDK does not model"})
	override := param.Override[anthropic.ToolUnionParam](json.RawMessage(`{"name":"raw_tool","input_schema":{"type":"object"},"x":"y"}`))
	format := anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{
		"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}}}
	system := []anthropic.TextBlockParam{{Text: "A long system prompt that Trim counts, not Overhead."}}
	msgs := []anthropic.MessageParam{user(text("hello"))}

	tests := []struct {
		name   string
		params anthropic.MessageNewParams
		want   string // the text counted as one system message; "" for none
	}{
		{"nothing besides the messages", anthropic.MessageNewParams{System: system, Messages: msgs, MaxTokens: 100}, ""},
		{"tools", anthropic.MessageNewParams{Tools: []anthropic.ToolUnionParam{weather, described}},
			`[{"input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather"},` +
				`{"input_schema":{"properties":{},"type":"object"},"name":"list_files","description":"Lists the files of the repository, recursively."}]`},
		{"extra fields and overrides as sent", anthropic.MessageNewParams{Tools: []anthropic.ToolUnionParam{extra, override}},
			`[{"input_schema":{"properties":{},"type":"object"},"name":"deploy","x_internal":"a field the SDK does not model"},` +
				`{"name":"raw_tool","input_schema":{"type":"object"},"x":"y"}]`},
		{"a response schema", anthropic.MessageNewParams{OutputConfig: format},
			`{"schema":{"properties":{"answer":{"type":"string"}},"type":"object"},"type":"json_schema"}`},
		{"tools and a schema, with messages and system", anthropic.MessageNewParams{System: system, Messages: msgs, Tools: []anthropic.ToolUnionParam{weather}, OutputConfig: format},
			`[{"input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather"}]` + "\n" +
				`{"schema":{"properties":{"answer":{"type":"string"}},"type":"object"},"type":"json_schema"}`},
		{"an effort without a schema", anthropic.MessageNewParams{OutputConfig: anthropic.OutputConfigParam{Effort: anthropic.OutputConfigEffortLow}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []history.Message
			spy := history.CounterFunc(func(m history.Message) int {
				seen = append(seen, m)
				return 7 * len(m.Content)
			})
			got := Overhead(tc.params, spy)
			if tc.want == "" {
				if got != 0 || len(seen) != 0 {
					t.Fatalf("got %d from %d messages, want 0 and no count", got, len(seen))
				}
				return
			}
			if len(seen) != 1 || seen[0].Role != history.RoleSystem || seen[0].Content != tc.want || got != 7*len(tc.want) {
				t.Fatalf("counted %+v (%d tokens), want one system message holding\n%s", seen, got, tc.want)
			}
			if h, want := Overhead(tc.params, nil), history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: tc.want}); h != want {
				t.Fatalf("nil counter: %d, want Heuristic's %d", h, want)
			}
		})
	}
}

// TestOverheadReachesResult: passed with history.WithOverhead, the
// overhead is part of the Result's TokensAfter, and the budget leaves room
// for it.
func TestOverheadReachesResult(t *testing.T) {
	system, msgs := pinRequest()
	params := anthropic.MessageNewParams{Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{}, "read")}}
	ovh := Overhead(params, nil)
	_, plain, err := Trim(system, msgs, 1_000)
	if err != nil {
		t.Fatal(err)
	}
	_, with, err := Trim(system, msgs, 1_000, history.WithOverhead(ovh))
	if err != nil {
		t.Fatal(err)
	}
	if ovh <= 0 || with.TokensAfter > 1_000 || with.TokensAfter-ovh > plain.TokensAfter || with.TokensAfter-ovh > 1_000-ovh {
		t.Fatalf("overhead %d: TokensAfter %d with it, %d without; want the overhead counted and the messages in the rest", ovh, with.TokensAfter, plain.TokensAfter)
	}
}

// pinRequest is a request whose native indices differ from the converted
// history's: the system prompt comes first there, and message 2 holds two
// tool results and a text block (three history messages).
func pinRequest() ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	big := strings.Repeat("lorem ipsum dolor sit amet ", 60)
	system := []anthropic.TextBlockParam{{Text: "You are an agent."}, {Text: "Be brief."}}
	return system, []anthropic.MessageParam{
		user(text("task 1: " + big)),                                             // 0
		assistant(toolUse("c1", "read"), toolUse("c2", "read")),                  // 1
		user(result("c1", big), result("c2", big), text("continue")),             // 2
		assistant(text("done 1: " + big)),                                        // 3
		user(text("remember: the deploy key lives in vault/ci")),                 // 4
		assistant(text("noted")),                                                 // 5
		user(text("task 2: " + big)),                                             // 6
		assistant(toolUse("c3", "grep")),                                         // 7
		user(result("c3", big)),                                                  // 8
		assistant(text("done 2: " + big)),                                        // 9
		user(text("task 3: what now?")),                                          // 10
		assistant(anthropic.NewThinkingBlock("sig", "hm"), toolUse("c4", "run")), // 11
		user(result("c4", big)),                                                  // 12
	}
}

// TestTrimPins: a pinned native message is sent, as the caller's own
// value, at every budget and with every rung of the ladder, though its
// index in the converted history differs from its index in msgs.
func TestTrimPins(t *testing.T) {
	system, msgs := pinRequest()
	hist, err := ToHistory(system, msgs)
	if err != nil {
		t.Fatal(err)
	}
	total := history.Estimate(hist, nil)
	tests := []struct {
		name   string
		system []anthropic.TextBlockParam
		pins   []int
	}{
		{"a memory after a message of three results", system, []int{4}},
		{"the first task", system, []int{0}},
		{"an assistant's text and a memory", system, []int{3, 4}},
		{"no system prompt", nil, []int{4, 9}},
		{"the latest task", system, []int{10}},
	}
	sets := [][]history.Option{
		nil,
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, set := range sets {
				for _, budget := range adaptertest.Budgets(total, 30) {
					opts := append([]history.Option{history.WithPin(tc.pins...)}, set...)
					out, res, err := Trim(tc.system, msgs, budget, opts...)
					if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
						t.Fatalf("budget %d: %v", budget, err)
					}
					if err := Validate(out); err != nil {
						t.Fatalf("budget %d: %v", budget, err)
					}
					for _, p := range tc.pins {
						if !adaptertest.Subsequence(msgs[p:p+1], out, adaptertest.SameJSON) {
							t.Fatalf("budget %d (options %d): pinned message %d was not sent (%d of %d messages, %d turns dropped)",
								budget, len(set), p, len(out), len(msgs), res.DroppedTurns)
						}
					}
				}
			}
		})
	}
}

// TestTrimPinsDropped: at a small budget the turns of the pinned messages
// go, and the pinned messages are lifted after the notice, in order, so
// that the notice stays in the leading block.
func TestTrimPinsDropped(t *testing.T) {
	system, msgs := pinRequest()
	out, res, err := Trim(system, msgs, 900, history.WithPin(0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if res.DroppedTurns == 0 {
		t.Fatal("nothing dropped: the budget does not test lifting")
	}
	want := []anthropic.MessageParam{fromBreadcrumb(history.Breadcrumb()), msgs[0], msgs[4]}
	for j, m := range want {
		if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, m) {
			t.Fatalf("message %d is %s, want %s", j, adaptertest.JSON(t, out[j]), adaptertest.JSON(t, m))
		}
	}
}

func TestTrimPinErrors(t *testing.T) {
	system, msgs := pinRequest()
	notice := append([]anthropic.MessageParam{fromBreadcrumb(history.Breadcrumb())}, msgs[10:]...)
	tests := []struct {
		name   string
		msgs   []anthropic.MessageParam
		pin    int
		reason string // in the OptionError's reason
	}{
		{"tool results", msgs, 2, "message 2 is a tool result"},
		{"tool calls", msgs, 1, "message 1 has tool calls"},
		{"thinking and a tool call", msgs, 11, "message 11 has tool calls"},
		{"a single tool result", msgs, 12, "message 12 is a tool result"},
		{"outside", msgs, 13, "index 13 is outside the history of 13 messages"},
		{"negative", msgs, -1, "index -1 is negative"},
		{"a notice", notice, 0, "message 0 is a notice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := map[string]func() ([]anthropic.MessageParam, error){
				"Trim": func() ([]anthropic.MessageParam, error) {
					out, _, err := Trim(system, tc.msgs, 1_000, history.WithPin(tc.pin))
					return out, err
				},
				"RecoverOverflow": func() ([]anthropic.MessageParam, error) {
					out, _, err := RecoverOverflow(system, tc.msgs, overflowErr(9_000, 8_000), 1, history.WithPin(tc.pin))
					return out, err
				},
			}
			for name, call := range calls {
				out, err := call()
				var oe *history.OptionError
				if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) || oe.Option != "WithPin" || !strings.Contains(oe.Reason, tc.reason) {
					t.Fatalf("%s: got %v, want an *history.OptionError for WithPin saying %q", name, err, tc.reason)
				}
				if out != nil {
					t.Errorf("%s: got %d messages with the error, want none", name, len(out))
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name, reason string
		msgs         []anthropic.MessageParam
		index        int // -1: valid
		id           string
	}{
		{"empty", "nothing to pair", nil, -1, ""},
		{"plain chat", "no tools", []anthropic.MessageParam{user(text("hi")), assistant(text("yo"))}, -1, ""},
		{"parallel calls", "results in any order, text after them",
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f"), toolUse("b", "g")), user(result("b", "B"), result("a", "A"), text("more"))}, -1, ""},
		{"consecutive users", "the API joins consecutive user messages (breadcrumb + turn)",
			[]anthropic.MessageParam{user(text(history.BreadcrumbText)), user(text("hi")), assistant(text("yo"))}, -1, ""},
		{"id reused later", "ids only need to pair with the neighbouring message",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(result("a", "1")), assistant(toolUse("a", "f")), user(result("a", "2"))}, -1, ""},
		{"unanswered at end", "a tool_use needs its tool_result in the next message",
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f"))}, 1, "a"},
		{"answer two messages later", "the result must be in the very next message",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(text("wait")), user(result("a", "A"))}, 0, "a"},
		{"one of two answered", "every tool_use of the message needs a result",
			[]anthropic.MessageParam{assistant(toolUse("a", "f"), toolUse("b", "g")), user(result("a", "A"))}, 0, "b"},
		{"orphan result", "a tool_result with no tool_use before it",
			[]anthropic.MessageParam{user(text("hi")), assistant(text("yo")), user(result("a", "A"))}, 2, "a"},
		{"result in first message", "no preceding assistant at all",
			[]anthropic.MessageParam{user(result("a", "A"))}, 0, "a"},
		{"answered twice", "one tool_use, one tool_result",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(result("a", "A"), result("a", "A"))}, 1, "a"},
		{"text before result", "tool_result blocks must come first",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(text("here:"), result("a", "A"))}, 1, "a"},
	}
	where := func(e *PairingError) (int, string) { return e.Index, e.ID }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adaptertest.Violation(t, Validate(tc.msgs), ErrUnpaired, where, tc.index, tc.id, tc.reason)
		})
	}
}

// genRequest builds a request from data: the fuzzer's bytes or a seed. It
// deliberately produces broken pairs (unanswered tool_use, stray and
// duplicate tool_result blocks, answers two messages late) as well as good
// ones, always with tool_result blocks first in their message.
func genRequest(data []byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	seed := adaptertest.Bytes(data)
	next := seed.Next
	words := adaptertest.Words
	var system []anthropic.TextBlockParam
	if b := next(); b >= 0 && b%3 != 0 {
		system = append(system, anthropic.TextBlockParam{Text: words(b)})
	}
	var msgs []anthropic.MessageParam
	var pending []string
	id := 0
	for {
		b := next()
		if b < 0 {
			return system, msgs
		}
		switch b % 8 {
		case 0, 1:
			msgs = append(msgs, user(text(words(b))))
		case 2:
			msgs = append(msgs, assistant(anthropic.NewThinkingBlock("sig"+strconv.Itoa(b), words(b)), text(words(b))))
		case 3, 4:
			var blocks []anthropic.ContentBlockParamUnion
			if b%2 == 0 {
				blocks = append(blocks, anthropic.NewThinkingBlock("sig", words(b)))
			}
			pending = pending[:0]
			for range 1 + b%3 {
				id++
				tid := "toolu_" + strconv.Itoa(id)
				blocks = append(blocks, toolUse(tid, "tool"))
				pending = append(pending, tid)
			}
			msgs = append(msgs, assistant(blocks...))
		case 5, 6:
			// One user message answering some pending calls, in an order
			// chosen by b, maybe with a stray result and trailing text.
			var blocks []anthropic.ContentBlockParamUnion
			for k := range pending {
				if (b>>(k+3))&1 == 0 || b%7 == 0 {
					blocks = append(blocks, result(pending[(k+b)%len(pending)], words(b)))
				}
			}
			if b%5 == 0 {
				blocks = append(blocks, result("stray_"+strconv.Itoa(b), "x"))
			}
			if b%3 == 0 || len(blocks) == 0 {
				blocks = append(blocks, cached(text(words(b))))
			}
			msgs = append(msgs, user(blocks...))
		case 7:
			msgs = append(msgs, user(result("stray_"+strconv.Itoa(b), words(b))))
		}
	}
}

// checkTrim is the property every trim must have: the output passes
// Validate, the input is untouched, every output message is an original or
// a breadcrumb or holds only blocks of one original message in their
// original order, and trimming the output again changes nothing (see below
// for the one exception).
func checkTrim(t *testing.T, system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, budget int) {
	t.Helper()
	r, res, err := adapter.Trimmed(t, request{system, msgs}, budget)
	out := r.Messages
	// Every output block comes from the input, in input order, except in
	// the notices the core inserted, each a message of its own.
	// Each block is encoded once (uncachedBlocks), not at every
	// comparison of the search.
	in := uncachedBlocks(msgs)
	pos, notices := 0, 0
	for j, m := range out {
		blocks := uncachedBlocks(out[j : j+1])[0]
		p := pos
		for p < len(msgs) && !adaptertest.Subsequence(blocks, in[p], adaptertest.Same[string]) {
			p++
		}
		if p < len(msgs) {
			pos = p + 1
			continue
		}
		notices++
		if len(m.Content) != 1 || m.Content[0].OfText == nil {
			t.Fatalf("budget %d: output message %d is neither made of an input message's blocks nor a notice: %s", budget, j, adaptertest.JSON(t, m))
		}
	}
	if n := breakpoints(system, out); n > 4 && err == nil {
		t.Fatalf("budget %d: %d cache breakpoints sent, the API takes 4", budget, n)
	}
	want := 0
	for _, k := range res.Kept {
		if k < 0 {
			want++
		}
	}
	if notices != want {
		t.Fatalf("budget %d: %d messages not from the input, %d notices inserted: %s", budget, notices, want, adaptertest.JSON(t, out))
	}
	// Trimming the output again changes nothing, unless the latest turn
	// was over budget and the input was broken: then the sweep may have
	// turned a message with orphaned tool_results and text into a plain
	// user message, which opens a turn the second trim can drop.
	again, _, _ := Trim(system, out, budget)
	if (err == nil || Validate(msgs) == nil) && adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
		t.Fatalf("budget %d: trimming the output again changed it:\n once %s\ntwice %s", budget, adaptertest.JSON(t, out), adaptertest.JSON(t, again))
	}
}

// uncachedBlocks returns the JSON each block of msgs sends but for a
// cache_control marker, which a trim takes off older blocks to keep at
// most four: two blocks that send the same JSON so are the same block.
func uncachedBlocks(msgs []anthropic.MessageParam) [][]string {
	out := make([][]string, len(msgs))
	for i := range msgs {
		for _, b := range msgs[i].Content {
			out[i] = append(out[i], uncached(b))
		}
	}
	return out
}

func uncached(b anthropic.ContentBlockParamUnion) string {
	raw, _ := json.Marshal(b)
	var obj map[string]any
	_ = json.Unmarshal(raw, &obj)
	delete(obj, "cache_control")
	out, _ := json.Marshal(obj)
	return string(out)
}

// breakpoints counts the cache_control markers of a request.
func breakpoints(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) int {
	raw, _ := json.Marshal(map[string]any{"system": system, "messages": msgs})
	return strings.Count(string(raw), `"cache_control":`)
}

var fuzzSeeds = [][]byte{
	{1, 0, 3, 5, 2, 0, 4, 6, 1, 8},
	{2, 0, 11, 13, 0, 3, 7, 0, 2, 1, 12, 14, 9},
	{0, 4, 0, 8, 7, 15, 3, 0, 3, 5, 23},
	{1, 1, 9, 17, 25, 2, 3, 6, 0, 4, 4, 5, 5, 0},
	{5, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 8},
	{1, 0, 11, 0, 13, 21, 8, 3, 45, 0, 2},
}

// TestTrimProperty runs checkTrim over generated requests at budgets from 1
// to just above their size.
func TestTrimProperty(t *testing.T) {
	// Under the race detector, 16 of the 46 requests (race.Sample) at a
	// third of the budgets (Budgets): the plain run checks all; the trims
	// are single-goroutine logic.
	for _, seed := range race.Sample(adaptertest.Seeds(fuzzSeeds, 40), 16) {
		system, msgs := genRequest(seed)
		for _, budget := range adaptertest.Budgets(adapter.Tokens(t, request{system, msgs}), 40) {
			checkTrim(t, system, msgs, budget)
		}
	}
}

func FuzzTrim(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint16(50))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		system, msgs := genRequest(data)
		checkTrim(t, system, msgs, int(budget)+1)
	})
}

// contractConversation is six turns of a task, a tool_use, its result and
// an answer (the system prompt is contractSystem).
func contractConversation() []anthropic.MessageParam {
	var msgs []anthropic.MessageParam
	for i := range 6 {
		id := "toolu_" + strconv.Itoa(i)
		msgs = append(msgs, user(text("task "+strconv.Itoa(i)+strings.Repeat(" words", 20))), assistant(toolUse(id, "read")),
			user(result(id, strings.Repeat("output line\n", 40))), assistant(text("done "+strconv.Itoa(i))))
	}
	return msgs
}

var contractSystem = []anthropic.TextBlockParam{{Text: "be brief"}}

// TestContract runs the adapter through the contract every adapter keeps,
// with a system prompt: the Result describes msgs alone.
func TestContract(t *testing.T) {
	type msg = anthropic.MessageParam
	c := &adaptertest.Contract[msg]{
		Trim: func(msgs []msg, budget int, opts ...history.Option) ([]msg, history.Result, error) {
			return Trim(contractSystem, msgs, budget, opts...)
		},
		RecoverOverflow: func(msgs []msg, err error, attempt int, opts ...history.Option) ([]msg, history.Result, error) {
			return RecoverOverflow(contractSystem, msgs, err, attempt, opts...)
		},
		Positions: Positions, Validate: Validate,
		ToHistory: func(msgs []msg) ([]history.Message, error) { return ToHistory(nil, msgs) },
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[msg] {
			return adaptertest.BindSystem(NewConversations(s, opts...).SystemConversations, contractSystem)
		},
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[msg] { return NewTrimmer(contractSystem, opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 12, Calls: 1, Results: 2,
		Task: func(s string) msg { return user(text(s)) },
		Compaction: func(s string) msg {
			return assistant(param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(`{"type":"compaction","content":` + strconv.Quote(s) + `,"encrypted_content":"e==","signature":"s","tool_changes":[]}`)))
		},
		Invalid:    []msg{user(text("hi")), user(toolUse("toolu_x", "read"))},
		Bad:        1,
		Unpaired:   contractConversation()[:2],
		UnpairedAt: 1, UnpairedID: "toolu_0",
		Overflows:    []error{errors.New(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 2000 tokens > 1000 maximum"}}`)},
		NotOverflows: []error{errors.New(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)},
	}
	c.Run(t)
}

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that adapter and core are released and upgraded together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }

// apiError stands for the *anthropic.Error the client returns for an error
// answer: the status in its text and StatusCode, the body in RawJSON (the
// loop test drives the real client).
type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string {
	return `POST "https://api.anthropic.com/v1/messages": ` + strconv.Itoa(e.status) + " " + http.StatusText(e.status) + " " + e.body
}
func (e *apiError) StatusCode() int { return e.status }
func (e *apiError) RawJSON() string { return e.body }

// overflowErr is the Messages API's answer to a prompt of used tokens over
// a window of limit.
func overflowErr(used, limit int) error {
	return &apiError{http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: ` +
		strconv.Itoa(used) + ` tokens > ` + strconv.Itoa(limit) + ` maximum"},"request_id":"req_011CTest"}`}
}

func TestRecoverOverflow(t *testing.T) {
	system, msgs := pinRequest()
	hist, _ := ToHistory(system, msgs)
	sent := history.Estimate(hist, nil) // what the core counts of the rejected request
	latest := msgs[10:]
	stray := append(append([]anthropic.MessageParam(nil), msgs[:10]...), user(result("stray", "x"), text("go on")), msgs[10], msgs[11], msgs[12])
	elide := history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1})
	rateLimit := &apiError{http.StatusTooManyRequests, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 30,000 input tokens per minute."}}`}
	tests := []struct {
		name     string
		msgs     []anthropic.MessageParam
		err      error
		attempt  int
		opts     []history.Option
		want     error // nil: recovered
		maxAfter int   // recovered: res.TokensAfter at most this
	}{
		{"prompt is too long", msgs, overflowErr(sent*13/10, sent), 1, nil, nil, sent * 10 / 13},
		{"second attempt", msgs, overflowErr(sent*13/10, sent), 2, nil, nil, sent * 10 / 13 * 3 / 4},
		{"input length and max_tokens", msgs, &apiError{http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 197000 + 16384 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`}, 1, nil, nil, sent},
		{"with elision and step trimming", msgs, overflowErr(sent*2, sent), 1, []history.Option{elide, history.WithStepTrim()}, nil, sent / 2},
		{"orphans only", stray, overflowErr(sent+1, sent), 1, nil, nil, sent},
		{"rate limit", msgs, rateLimit, 1, nil, history.ErrNotOverflow, 0},
		{"nil error", msgs, nil, 1, nil, history.ErrNotOverflow, 0},
		{"only the latest turn left", latest, overflowErr(sent, sent/2), 1, nil, history.ErrCannotRecover, 0},
		{"invalid option", msgs, overflowErr(sent*2, sent), 1, []history.Option{history.WithLowWater(2)}, history.ErrInvalidOption, 0},
		{"invalid message", []anthropic.MessageParam{user(toolUse("c9", "x"))}, overflowErr(sent*2, sent), 1, nil, history.ErrInvalidMessage, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tc.msgs)
			var events []history.Event
			opts := append([]history.Option{history.WithOnTrim(func(ev history.Event) { events = append(events, ev) })}, tc.opts...)
			out, res, err := RecoverOverflow(system, tc.msgs, tc.err, tc.attempt, opts...)
			if adaptertest.JSON(t, tc.msgs) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			switch {
			case tc.want == nil:
				if !res.Trimmed && res.OrphansRemoved == 0 || res.TokensAfter > tc.maxAfter {
					t.Fatalf("recovered to %d tokens (trimmed %v, orphans %d), want at most %d", res.TokensAfter, res.Trimmed, res.OrphansRemoved, tc.maxAfter)
				}
				if len(events) != 1 || events[0].Reason != history.ReasonOverflow || events[0].Attempt != tc.attempt {
					t.Fatalf("events %+v, want one overflow event of attempt %d", events, tc.attempt)
				}
				if err := Validate(out); err != nil {
					t.Fatal(err)
				}
				if !adaptertest.Subsequence(tc.msgs[len(tc.msgs)-3:], out, adaptertest.SameJSON) {
					t.Fatal("the latest turn was not kept")
				}
				checkConvertsBack(t, request{system, tc.msgs}, request{system, out}, res)
			case errors.Is(err, history.ErrNotOverflow):
				if !adaptertest.SameArray(out, tc.msgs) || !adaptertest.Identity(res.Kept, len(hist)-1) || len(events) != 0 {
					t.Fatalf("not an overflow: got %d messages, Kept %v, %d events; want msgs itself, untouched", len(out), res.Kept, len(events))
				}
			case errors.Is(err, history.ErrCannotRecover):
				var re *history.RecoverError
				if !errors.As(err, &re) || !errors.Is(err, tc.err) || re.Used != sent || re.Limit != sent/2 {
					t.Fatalf("got %v, want a *history.RecoverError wrapping the provider error, with its sizes", err)
				}
				if adaptertest.JSON(t, out) != adaptertest.JSON(t, tc.msgs) {
					t.Fatalf("got %s, want what is left: the latest turn", adaptertest.JSON(t, out))
				}
			default:
				if out != nil {
					t.Fatalf("got %d messages with %v, want none", len(out), err)
				}
			}
		})
	}
}

// TestRecoverOverflowLoop: recovering again from the output of a recovery
// goes further each time, keeps the system prompt's pin and the latest
// turn, and ends with ErrCannotRecover, as the core does.
func TestRecoverOverflowLoop(t *testing.T) {
	system, msgs := pinRequest()
	prev := len(msgs) + 1
	for attempt := 1; ; attempt++ {
		hist, _ := ToHistory(system, msgs)
		n := history.Estimate(hist, nil)
		out, res, err := RecoverOverflow(system, msgs, overflowErr(n+100, n), attempt)
		if errors.Is(err, history.ErrCannotRecover) {
			if attempt < 3 {
				t.Fatalf("gave up at attempt %d", attempt)
			}
			return
		}
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if len(out) >= prev || res.TokensAfter >= n {
			t.Fatalf("attempt %d: %d messages, %d tokens, from %d and %d: no progress", attempt, len(out), res.TokensAfter, prev, n)
		}
		if err := Validate(out); err != nil {
			t.Fatal(err)
		}
		prev, msgs = len(out), out
		if attempt > len(out)+1 {
			t.Fatal("no end")
		}
	}
}
