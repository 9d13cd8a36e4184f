package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
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
