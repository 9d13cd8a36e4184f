package eino

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	orderedmap "github.com/wk8/go-ordered-map/v2"
)

func ptr[T any](v T) *T { return &v }

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

// rich is a conversation using every field the adapter must carry.
func rich(t testing.TB) []*schema.Message {
	big := strings.Repeat("the quick brown fox jumps over the lazy dog ", 40)
	img := base64.StdEncoding.EncodeToString(adaptertest.PNG(t, 1024, 512))
	// Deprecated, but still in use and still read by the adapter.
	//lint:ignore SA1019 the adapter must keep reading MultiContent
	legacy := []schema.ChatMessagePart{{Type: schema.ChatMessagePartTypeImageURL, ImageURL: &schema.ChatMessageImageURL{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(adaptertest.PNG(t, 64, 64)), Detail: schema.ImageURLDetailLow}}}
	return []*schema.Message{
		schema.SystemMessage("You are terse."),
		{Role: schema.User, Content: "summary of earlier work", Extra: map[string]any{KindKey: "summary", "author": "compactor"}},
		{Role: schema.User, Name: "alice", UserInputMultiContent: []schema.MessageInputPart{
			{Type: schema.ChatMessagePartTypeText, Text: "what is in this picture? " + big},
			{Type: schema.ChatMessagePartTypeImageURL, Image: &schema.MessageInputImage{
				MessagePartCommon: schema.MessagePartCommon{Base64Data: &img, MIMEType: "image/png", Extra: map[string]any{"k": "v"}},
				Detail:            schema.ImageURLDetailHigh}},
			{Type: schema.ChatMessagePartTypeFileURL, File: &schema.MessageInputFile{
				MessagePartCommon: schema.MessagePartCommon{URL: ptr("https://example.com/a.pdf"), MIMEType: "application/pdf"}, Name: "a.pdf"}},
		}},
		{Role: schema.Assistant, ReasoningContent: "I should search twice.",
			ToolCalls: []schema.ToolCall{
				{Index: ptr(0), ID: "c1", Type: "function", Function: schema.FunctionCall{Name: "search", Arguments: `{"q":"fox"}`}, Extra: map[string]any{"sig": "abc"}},
				{Index: ptr(1), ID: "c2", Type: "function", Function: schema.FunctionCall{Name: "search", Arguments: `{"q":"dog"}`}},
			},
			ResponseMeta: &schema.ResponseMeta{FinishReason: "tool_calls", Usage: &schema.TokenUsage{PromptTokens: 10}},
			Extra:        map[string]any{"request_id": "r-1"}},
		{Role: schema.Tool, ToolCallID: "c2", ToolName: "search", Content: big},
		{Role: schema.Tool, ToolCallID: "c1", ToolName: "search", Content: "3 hits"},
		{Role: schema.User, Content: "[system: results are cached]", Extra: map[string]any{KindKey: "nudge"}},
		{Role: schema.Assistant, Content: "A fox and a dog. " + big, MultiContent: legacy},
		schema.UserMessage("and the second picture? " + big),
		{Role: schema.Assistant, Content: "It is a cat.", AssistantGenMultiContent: []schema.MessageOutputPart{{Type: schema.ChatMessagePartTypeText, Text: "meow"}}},
		schema.UserMessage("thanks"),
	}
}

func TestToHistory(t *testing.T) {
	msgs, err := ToHistory(rich(t))
	if err != nil {
		t.Fatal(err)
	}
	if msgs[1].Kind != history.KindSummary || msgs[6].Kind != history.KindNudge {
		t.Errorf("kinds from Extra: %q, %q", msgs[1].Kind, msgs[6].Kind)
	}
	u := msgs[2]
	if u.Name != "alice" || len(u.Parts) != 3 || u.Parts[1].Type != history.PartImage || u.Parts[1].Width != 1024 || u.Parts[1].Height != 512 || u.Parts[1].Detail != "high" {
		t.Errorf("user message = %+v, want the text, a 1024x512 image and a file", u)
	}
	if u.Parts[2].Type != history.PartFile || u.Parts[2].MIMEType != "application/pdf" {
		t.Errorf("file part = %+v", u.Parts[2])
	}
	a := msgs[3]
	if len(a.Parts) != 1 || a.Parts[0].Type != history.PartReasoning || len(a.ToolCalls) != 2 || a.ToolCalls[0] != (history.ToolCall{ID: "c1", Name: "search", Arguments: `{"q":"fox"}`}) {
		t.Errorf("assistant = %+v", a)
	}
	if msgs[4].Role != history.RoleTool || msgs[4].ToolCallID != "c2" || msgs[4].Name != "search" {
		t.Errorf("tool = %+v", msgs[4])
	}
	if p := msgs[7].Parts[0]; p.Type != history.PartImage || p.Width != 64 || p.Detail != "low" || p.MIMEType != "image/png" {
		t.Errorf("data URL image = %+v", p)
	}
	if p := msgs[9].Parts[0]; p.Type != history.PartText || p.Text != "meow" {
		t.Errorf("assistant output part = %+v", p)
	}
	if _, rep := history.SweepOrphans(msgs); rep.Total() != 0 {
		t.Errorf("well-paired conversion swept: %+v", rep)
	}
}

// TestToHistoryFileSize: a base64 file counts its decoded size, padding
// counted out.
func TestToHistoryFileSize(t *testing.T) {
	data := "YWJjZA==" // "abcd"
	msgs, err := ToHistory([]*schema.Message{{Role: schema.User, UserInputMultiContent: []schema.MessageInputPart{
		{Type: schema.ChatMessagePartTypeFileURL, File: &schema.MessageInputFile{MessagePartCommon: schema.MessagePartCommon{Base64Data: &data, MIMEType: "text/plain"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := msgs[0].Parts[0]; p.Type != history.PartFile || p.Size != 4 {
		t.Errorf("file part = %+v, want a file of 4 bytes", p)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name, reason string
		in           []*schema.Message
		want         error
	}{
		{"nil", "nil cannot be converted", []*schema.Message{nil}, ErrInvalidMessage},
		{"role", "eino has four roles", []*schema.Message{{Role: "developer", Content: "x"}}, ErrInvalidMessage},
		{"kind type", "the kind must be a string", []*schema.Message{{Role: schema.User, Extra: map[string]any{KindKey: 1}}}, ErrInvalidMessage},
		{"kind value", "the core rejects unknown kinds", []*schema.Message{{Role: schema.User, Extra: map[string]any{KindKey: "sumary"}}}, history.ErrInvalidMessage},
		{"tool without id", "the core needs the id", []*schema.Message{{Role: schema.Tool, Content: "x"}}, history.ErrInvalidMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Trim(c.in, 100)
			if !errors.Is(err, c.want) {
				t.Errorf("Trim: err = %v, want %v (%s)", err, c.want, c.reason)
			}
			if c.want == ErrInvalidMessage && !strings.HasPrefix(err.Error(), "history/eino: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	if _, _, err := Trim(nil, -1); !errors.Is(err, history.ErrInvalidBudget) {
		t.Errorf("negative budget: %v", err)
	}
}

func TestTrimRoundTrip(t *testing.T) {
	in := rich(t)
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if !adaptertest.Identity(res.Kept, len(res.Messages)) || &out[0] != &in[0] || cap(out) != len(in) || adaptertest.JSON(t, out) != before {
		t.Fatal("a fitting history must come back as the caller's slice, clipped and unchanged")
	}

	conv, _ := ToHistory(in)
	budget := history.Estimate(append(slices.Clone(conv[:2]), append([]history.Message{history.Breadcrumb()}, conv[8:]...)...), nil)
	out, res, err = Trim(in, budget)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Kept, []int{0, 1, -1, 8, 9, 10}) || res.DroppedTurns != 1 {
		t.Fatalf("Kept = %v, dropped %d turns; want the system, the pinned summary, a breadcrumb and the last two turns", res.Kept, res.DroppedTurns)
	}
	for j, k := range res.Kept {
		if k >= 0 && out[j] != in[k] {
			t.Errorf("out[%d] is not the caller's message %d", j, k)
		}
	}
	want := adaptertest.JSON(t, append(slices.Clone(in[:2]), in[8:]...))
	got := adaptertest.JSON(t, append(slices.Clone(out[:2]), out[3:]...))
	if got != want {
		t.Errorf("kept messages changed:\n got %s\nwant %s", got, want)
	}
	if got := adaptertest.JSON(t, out[2]); got != `{"role":"user","content":"[earlier turns omitted to fit the context window]","extra":{"histrim_kind":"breadcrumb"}}` {
		t.Errorf("breadcrumb = %s", got)
	}
	if adaptertest.JSON(t, in) != before {
		t.Error("Trim modified the input")
	}

	// Trimming the output again does not stack breadcrumbs.
	again, res2, err := Trim(out, budget)
	if err != nil || res2.Trimmed || len(again) != len(out) {
		t.Errorf("re-trim: err %v, trimmed %v, %d messages; want the output unchanged", err, res2.Trimmed, len(again))
	}
	again, _, _ = Trim(out, budget-50)
	crumbs := 0
	for _, m := range again {
		if m.Extra[KindKey] == "breadcrumb" {
			crumbs++
		}
	}
	if crumbs != 1 {
		t.Errorf("re-trim to a smaller budget left %d breadcrumbs, want 1", crumbs)
	}
}

func TestTrimStripsUnansweredCalls(t *testing.T) {
	asst := &schema.Message{Role: schema.Assistant, Content: "checking", ToolCalls: []schema.ToolCall{
		{Index: ptr(0), ID: "a", Function: schema.FunctionCall{Name: "f"}, Extra: map[string]any{"x": 1}},
		{Index: ptr(1), ID: "b", Function: schema.FunctionCall{Name: "g"}},
		{Index: ptr(2), ID: "c", Function: schema.FunctionCall{Name: "h"}},
	}, Extra: map[string]any{"keep": true}}
	in := []*schema.Message{
		schema.UserMessage("go"), asst,
		schema.ToolMessage("A", "a"), schema.ToolMessage("C", "c"), schema.ToolMessage("Z", "zzz"),
		schema.AssistantMessage("done", nil),
	}
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if res.OrphansRemoved != 2 || len(out) != 5 {
		t.Fatalf("OrphansRemoved = %d, %d messages; want call b and result zzz gone", res.OrphansRemoved, len(out))
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
	got := out[1]
	if got == asst || len(got.ToolCalls) != 2 || got.ToolCalls[0].ID != "a" || got.ToolCalls[1].ID != "c" ||
		*got.ToolCalls[1].Index != 2 || got.ToolCalls[0].Extra["x"] != 1 || got.Extra["keep"] != true || got.Content != "checking" {
		t.Errorf("stripped message = %s, want a copy keeping calls a and c as the caller's values", adaptertest.JSON(t, got))
	}
	if adaptertest.JSON(t, in) != before || len(asst.ToolCalls) != 3 {
		t.Error("Trim modified the caller's messages")
	}
}

func TestValidate(t *testing.T) {
	u := schema.UserMessage
	a := func(ids ...string) *schema.Message {
		m := &schema.Message{Role: schema.Assistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, call(id, "f", "{}"))
		}
		return m
	}
	tool := func(id string) *schema.Message { return schema.ToolMessage("r", id) }
	cases := []struct {
		name   string
		in     []*schema.Message
		bad    int
		reason string
	}{
		{"empty", nil, -1, "nothing to pair"},
		{"parallel", []*schema.Message{u("x"), a("1", "2"), tool("2"), tool("1"), u("y")}, -1, "results in any order"},
		{"reused id", []*schema.Message{u("x"), a("1"), tool("1"), a("1"), tool("1")}, -1, "ids may repeat across exchanges"},
		{"orphan first", []*schema.Message{tool("1"), u("x")}, 0, "a result needs a call"},
		{"after user", []*schema.Message{u("x"), a("1"), tool("1"), u("y"), tool("1")}, 4, "results must follow their call"},
		{"unknown id", []*schema.Message{u("x"), a("1"), tool("2")}, 2, "the id must be one of the calls"},
		{"twice", []*schema.Message{u("x"), a("1"), tool("1"), tool("1")}, 3, "one result per call"},
		{"unanswered", []*schema.Message{u("x"), a("1", "2"), tool("1"), u("y")}, 1, "every call needs a result"},
		{"trailing", []*schema.Message{u("x"), a("1")}, 1, "a trailing call is unanswered"},
		{"user calls", []*schema.Message{{Role: schema.User, ToolCalls: []schema.ToolCall{call("1", "f", "")}}}, 0, "only assistants call"},
		{"empty id", []*schema.Message{u("x"), a(""), tool("")}, 1, "ids are required"},
		{"nil", []*schema.Message{nil}, 0, "nil message"},
	}
	where := func(e *PairingError) (int, string) { return e.Index, "" }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adaptertest.Violation(t, Validate(c.in), ErrUnpaired, where, c.bad, "", c.reason)
		})
	}
}

// checkTrim trims in at budget and checks the invariants: the output
// validates, the input is untouched, and every message is the breadcrumb,
// the caller's pointer, or a copy of the caller's message with a subset of
// its tool calls, reasoning and signatures unchanged (sameOrigin). Of an
// input that validates, the latest user request and, if it had reasoning,
// the first assistant message answering it are kept (the rule Anthropic
// enforces with thinking on, see TestCorpus).
func checkTrim(t *testing.T, in []*schema.Message, budget int, opts ...history.Option) {
	t.Helper()
	out, res, _ := adapter.Trimmed(t, in, budget, opts...)
	if len(out) != len(res.Messages) {
		t.Fatalf("budget %d: %d messages, Result has %d", budget, len(out), len(res.Messages))
	}
	for j, m := range out {
		k := j
		if res.Kept != nil {
			k = res.Kept[j]
		}
		switch {
		case k < 0:
			if m.Extra[KindKey] != "breadcrumb" {
				t.Fatalf("budget %d: unmarked breadcrumb", budget)
			}
		case m == in[k]:
		case in[k].Role == schema.Tool && len(m.ToolCalls) == 0:
			if msg := sameOrigin(in[k], m); msg != "" {
				t.Fatalf("budget %d: message %d: %s", budget, j, msg)
			}
		default:
			if msg := sameOrigin(in[k], m); msg != "" || len(m.ToolCalls) >= len(in[k].ToolCalls) {
				t.Fatalf("budget %d: message %d is neither the caller's nor a stripped copy (%s)", budget, j, msg)
			}
		}
	}
	if Validate(in) == nil {
		if msg := keptRules(in, out, res); msg != "" {
			t.Fatalf("budget %d: %s", budget, msg)
		}
	}
}

// thinkingMessage returns an assistant message as a thinking model's
// reply comes back through eino-ext: reasoning in ReasoningContent and,
// for Claude, the thinking and its signature in Extra (n varies the
// signature).
func thinkingMessage(reasoning string, n int) *schema.Message {
	m := &schema.Message{Role: schema.Assistant, ReasoningContent: reasoning}
	if reasoning != "" {
		m.Extra = map[string]any{claudeThinkingKey: reasoning, claudeSignatureKey: "EqQBCkYIBxgCKkD" + strconv.Itoa(n)}
	}
	return m
}

// signedCall returns call k of a message: the first carries a Gemini
// thought signature in its Extra, as only the first of parallel calls
// does.
func signedCall(id, name, args string, k, n int) schema.ToolCall {
	c := call(id, name, args)
	if k == 0 {
		c.Extra = map[string]any{geminiSignatureKey: []byte("sig-" + strconv.Itoa(n))}
	}
	return c
}

func TestTrimEveryBudget(t *testing.T) {
	in := rich(t)
	_, res, err := Trim(in, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for budget := 1; budget <= res.TokensBefore+50; budget += 5 {
		checkTrim(t, in, budget)
	}
}

// gen builds a conversation from fuzz input: turns of a user prompt, tool
// rounds of parallel calls answered in shuffled order with nudges between,
// sometimes with a result missing, an orphan result or a wrong id, and a
// closing reply.
func gen(data []byte) []*schema.Message {
	seed := adaptertest.Bytes(data)
	next := seed.Byte
	out := []*schema.Message{schema.SystemMessage("sys")}
	if next()%2 == 0 {
		out = append(out, &schema.Message{Role: schema.User, Content: "summary", Extra: map[string]any{KindKey: "summary"}})
	}
	for turn := 0; len(seed) > 0 && turn < 12; turn++ {
		out = append(out, schema.UserMessage(strings.Repeat("prompt ", 1+next()%40)))
		for round := next() % 3; round > 0; round-- {
			m := thinkingMessage(strings.Repeat("hm ", next()%5), turn*3+round)
			var rs []*schema.Message
			for k := range 1 + next()%3 {
				id := string(rune('a'+turn)) + string(rune('0'+k))
				m.ToolCalls = append(m.ToolCalls, signedCall(id, "f", "{}", k, turn*3+round))
				rs = append(rs, schema.ToolMessage(strings.Repeat("x", next()), id))
			}
			nudge := false
			switch next() % 8 {
			case 0:
				rs = rs[1:]
			case 1:
				rs = append(rs, schema.ToolMessage("?", "orphan"))
			case 2:
				rs[0] = schema.ToolMessage("?", "wrong")
			case 3:
				nudge = true // after the results: OpenAI-style APIs reject anything between them
			}
			if len(rs) > 1 && next()%2 == 0 {
				rs[0], rs[len(rs)-1] = rs[len(rs)-1], rs[0]
			}
			out = append(append(out, m), rs...)
			if nudge {
				out = append(out, &schema.Message{Role: schema.User, Content: "[note]", Extra: map[string]any{KindKey: "nudge"}})
			}
		}
		out = append(out, schema.AssistantMessage(strings.Repeat("answer ", 1+next()%40), nil))
	}
	return out
}

func FuzzTrim(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint16(200))
	f.Add([]byte{0, 1, 2, 0, 1, 0, 2, 1, 0, 0, 5, 3, 2, 1, 0, 0, 9, 1, 2, 2, 2, 2}, uint16(60))
	f.Add(bytes.Repeat([]byte{7, 2, 1, 0, 3}, 30), uint16(500))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		checkTrim(t, gen(data), int(budget)+1)
	})
}

// TestReasoningCounted: ReasoningContent converts to a reasoning part and
// counts as the text the thinking models' requests carry back (eino-ext's
// gemini model sends it as a thought part, its claude model as the
// thinking block, from Extra); a kept message comes back as the caller's
// value, its reasoning and signatures untouched.
func TestReasoningCounted(t *testing.T) {
	reasoning := strings.Repeat("the failing test reads a.go, so read a.go first ", 20)
	with := thinkingMessage(reasoning, 7)
	with.ToolCalls = []schema.ToolCall{signedCall("c1", "read", "{}", 0, 7)}
	without := &schema.Message{Role: schema.Assistant, ToolCalls: with.ToolCalls}
	h, err := ToHistory([]*schema.Message{with, without})
	if err != nil {
		t.Fatal(err)
	}
	if len(h[0].Parts) != 1 || h[0].Parts[0] != (history.Part{Type: history.PartReasoning, Text: reasoning}) {
		t.Fatalf("reasoning converts to %+v", h[0].Parts)
	}
	c := history.Heuristic()
	if diff, text := c.CountMessage(h[0])-c.CountMessage(h[1]), history.EstimateText(reasoning); diff < text {
		t.Errorf("reasoning adds %d tokens, its text alone is %d", diff, text)
	}
	in := []*schema.Message{schema.UserMessage("go"), with, schema.ToolMessage("ok", "c1"), schema.UserMessage("next")}
	out, res, err := Trim(in, adapter.Tokens(t, in))
	if err != nil || res.TokensBefore != adapter.Tokens(t, in) {
		t.Fatalf("Trim: %v, %d tokens before", err, res.TokensBefore)
	}
	if out[1] != with || with.ReasoningContent != reasoning || with.Extra[claudeSignatureKey] != "EqQBCkYIBxgCKkD7" {
		t.Error("the kept thinking message is not the caller's, untouched")
	}
}

// contractConversation is a system prompt and six turns of a task, a
// call, its result and an answer.
func contractConversation() []*schema.Message {
	msgs := []*schema.Message{schema.SystemMessage("be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs, schema.UserMessage("task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			schema.AssistantMessage("", []schema.ToolCall{call(id, "read", `{}`)}),
			schema.ToolMessage(strings.Repeat("output line\n", 40), id),
			schema.AssistantMessage("done "+strconv.Itoa(i), nil))
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[*schema.Message]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[*schema.Message] {
			return NewConversations(s, opts...)
		},
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[*schema.Message] { return NewTrimmer(opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Task:       schema.UserMessage,
		Invalid:    []*schema.Message{schema.UserMessage("hi"), nil},
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

// TestPinSurvivesEveryBudget: messages pinned with history.WithPin, by
// their index in the caller's slice, are in the output of Trim and of
// RecoverOverflow at every budget, as the caller's own pointers, whatever
// rungs of the ladder are on.
func TestPinSurvivesEveryBudget(t *testing.T) {
	in := agentTurns(8, 120)
	// A memory the runtime inserted in turn 2 and an answer of turn 4:
	// index 1+4*k is turn k's task, 4+4*k its answer.
	memory := &schema.Message{Role: schema.User, Content: "Remember: the user wants tabs.", Extra: map[string]any{KindKey: "nudge"}}
	in = slices.Insert(in, 1+4*2+1, memory)
	pinned := []int{1 + 4*2 + 1, 4 + 4*4 + 1}
	total := tokens(t, in)
	sets := map[string][]history.Option{
		"turns":  nil,
		"ladder": {history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
	}
	for name, set := range sets {
		opts := append(slices.Clone(set), history.WithPin(pinned...))
		for budget := 1; budget <= total+10; budget += 7 {
			out, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			checkPinned(t, name+" trim", budget, in, out, pinned)
			if err != nil || res.DroppedTurns == len(history.Turns(mustHistory(t, in)))-1 {
				continue
			}
			// The provider rejects what Trim sent: the pins, translated to
			// the positions of the output, survive the recovery too.
			var again []int
			for j, k := range res.Kept {
				if slices.Contains(pinned, k) {
					again = append(again, j)
				}
			}
			rec, _, err := RecoverOverflow(out, overflowErr(budget*2, budget), 1, append(slices.Clone(set), history.WithPin(again...))...)
			if err != nil && !errors.Is(err, history.ErrCannotRecover) {
				t.Fatalf("%s, budget %d: recover: %v", name, budget, err)
			}
			checkPinned(t, name+" recover", budget, in, rec, pinned)
		}
	}
}

func checkPinned(t *testing.T, what string, budget int, in, out []*schema.Message, pinned []int) {
	t.Helper()
	if err := Validate(out); err != nil {
		t.Fatalf("%s, budget %d: %v", what, budget, err)
	}
	for _, p := range pinned {
		if !slices.Contains(out, in[p]) {
			t.Fatalf("%s, budget %d: pinned message %d (%q) is gone", what, budget, p, in[p].Content)
		}
	}
	if out[len(out)-1] != in[len(in)-1] {
		t.Fatalf("%s, budget %d: the latest message is gone", what, budget)
	}
}

// TestPinRejected: a pin on a tool result, on a message with tool calls
// or outside the slice is the core's *history.OptionError, reported with
// the native index (one for one, the same).
func TestPinRejected(t *testing.T) {
	in := agentTurns(3, 100) // 1+4k task, 2+4k call, 3+4k result, 4+4k answer
	for _, idx := range []int{2, 3, len(in)} {
		_, _, err := Trim(in, 50, history.WithPin(idx))
		var oe *history.OptionError
		if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) {
			t.Errorf("pin %d: got %v, want a *history.OptionError", idx, err)
		}
	}
}

func mustHistory(t *testing.T, msgs []*schema.Message) []history.Message {
	t.Helper()
	h, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The helper is what a ReAct agent's MessageModifier and MessageRewriter
// take.
var _ react.MessageModifier = MessageModifier(100, nil)

type ctxKey struct{}

func TestMessageModifier(t *testing.T) {
	conv := agentTurns(6, 300)
	size := tokens(t, conv)
	huge := agentTurns(1, 4000)
	invalid := []*schema.Message{schema.UserMessage("a"), {Role: "robot"}}
	tests := []struct {
		name   string
		in     []*schema.Message
		budget int
		opts   []history.Option
		// same: the input itself comes back; smaller: fewer messages.
		same, smaller bool
		want          error // errors.Is of the error reported
	}{
		{name: "fits", in: conv, budget: size, same: true},
		{name: "trimmed", in: conv, budget: size / 2, smaller: true},
		{name: "latest turn too large", in: huge, budget: 100, same: true, want: history.ErrLatestTurnTooLarge},
		{name: "latest turn too large, earlier turns dropped", in: append(conv[:len(conv):len(conv)], huge[1:]...), budget: 100,
			smaller: true, want: history.ErrLatestTurnTooLarge},
		{name: "invalid message", in: invalid, budget: size, same: true, want: ErrInvalidMessage},
		{name: "invalid budget", in: conv, budget: 0, same: true, want: history.ErrInvalidBudget},
		{name: "invalid option", in: conv, budget: size, opts: []history.Option{history.WithPin(2)}, same: true, want: history.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []error
			ctx := context.WithValue(context.Background(), ctxKey{}, tt.name)
			mod := MessageModifier(tt.budget, func(c context.Context, err error) {
				if c.Value(ctxKey{}) != tt.name {
					t.Error("onError did not receive the call's context")
				}
				got = append(got, err)
			}, tt.opts...)
			before := adaptertest.JSON(t, tt.in)
			out := mod(ctx, tt.in)
			if adaptertest.JSON(t, tt.in) != before {
				t.Fatal("the input was modified")
			}
			if tt.want == nil && len(got) > 0 || tt.want != nil && (len(got) != 1 || !errors.Is(got[0], tt.want)) {
				t.Fatalf("reported %v, want %v", got, tt.want)
			}
			if same := len(out) == len(tt.in) && &out[0] == &tt.in[0]; same != tt.same {
				t.Errorf("returned the input itself: %v, want %v", same, tt.same)
			}
			if tt.smaller && len(out) >= len(tt.in) {
				t.Errorf("%d messages of %d", len(out), len(tt.in))
			}
			if !errors.Is(tt.want, ErrInvalidMessage) {
				if err := Validate(out); err != nil {
					t.Error(err)
				}
			}
			if out[len(out)-1] != tt.in[len(tt.in)-1] {
				t.Error("the latest message is not the caller's")
			}
			// Without onError: the same messages, nothing reported.
			again := MessageModifier(tt.budget, nil, tt.opts...)(ctx, tt.in)
			if adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
				t.Error("without onError the output differs")
			}
		})
	}
}

// TestMessageModifierStepTrim: under history.WithStepTrim a latest turn
// too long for the budget is cut to its task and newest steps, and the
// output is returned although the error is reported.
func TestMessageModifierStepTrim(t *testing.T) {
	in := []*schema.Message{schema.SystemMessage("sys"), schema.UserMessage("task")}
	for i := range 10 {
		id := "c" + string(rune('0'+i))
		in = append(in, schema.AssistantMessage("", []schema.ToolCall{call(id, "run", "{}")}),
			schema.ToolMessage(strings.Repeat("output line\n", 100), id))
	}
	var reported error
	out := MessageModifier(600, func(_ context.Context, err error) { reported = err }, history.WithStepTrim())(context.Background(), in)
	if reported != nil || len(out) >= len(in) || out[1] != in[1] || out[len(out)-1] != in[len(in)-1] {
		t.Errorf("reported %v; %d of %d messages", reported, len(out), len(in))
	}
	if got := tokens(t, out); got > 600 {
		t.Errorf("%d tokens over 600", got)
	}
}

// overflowErr is the error Eino's OpenAI chat model returns when the
// endpoint rejects a request as too long (its APIError, converted from
// the HTTP 400 body), with the sizes OpenAI states.
func overflowErr(used, limit int) error {
	return &einoopenai.APIError{
		Code: "context_length_exceeded", Type: "invalid_request_error", Param: ptr("messages"),
		Message:    fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, used),
		HTTPStatus: "400 Bad Request", HTTPStatusCode: 400,
	}
}

// agentTurns is a conversation of n turns, each a task, a tool step with
// a result of about size tokens and an answer, after a system prompt.
func agentTurns(n, size int) []*schema.Message {
	out := []*schema.Message{schema.SystemMessage("You are an agent.")}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		out = append(out,
			schema.UserMessage(fmt.Sprintf("task %d", i)),
			schema.AssistantMessage("", []schema.ToolCall{call(id, "read_file", `{"path":"a.go"}`)}),
			schema.ToolMessage(strings.Repeat("line of code here\n", size/4), id, schema.WithToolName("read_file")),
			schema.AssistantMessage(fmt.Sprintf("done %d", i), nil))
	}
	return out
}

func TestRecoverOverflow(t *testing.T) {
	six := agentTurns(6, 400)
	sent := tokens(t, six)
	rateLimit := &einoopenai.APIError{Code: "rate_limit_exceeded", Type: "requests", HTTPStatusCode: 429,
		Message: "Rate limit reached for requests"}
	trimmed, _, err := Trim(six, sent/2)
	if err != nil {
		t.Fatal(err)
	}
	last := agentTurns(1, 400)
	tests := []struct {
		name    string
		in      []*schema.Message
		err     error
		attempt int
		opts    []history.Option
		want    error // errors.Is
		// maxTokens bounds the Result; dropped is the least number of
		// turns dropped.
		maxTokens, dropped int
		// elided is the least number of results elided.
		elided int
	}{
		{name: "rate limit", in: six, err: rateLimit, attempt: 1, want: history.ErrNotOverflow, maxTokens: sent},
		{name: "nil error", in: six, err: nil, attempt: 1, want: history.ErrNotOverflow, maxTokens: sent},
		{name: "sizes stated", in: six, err: overflowErr(sent*12/10, sent), attempt: 1,
			maxTokens: sent * 10 / 12 * 90 / 100, dropped: 1},
		{name: "second attempt", in: six, err: overflowErr(sent*12/10, sent), attempt: 2,
			maxTokens: sent * 10 / 12 * 75 / 100, dropped: 2},
		{name: "no sizes", in: six, err: errors.New("error, status code: 400, message: context_length_exceeded"), attempt: 1,
			maxTokens: sent * 3 / 4, dropped: 1},
		{name: "earlier output, notice replaced", in: trimmed, err: overflowErr(sent, sent*9/10), attempt: 1,
			maxTokens: sent / 2, dropped: 1},
		{name: "elision first", in: six, err: overflowErr(sent*12/10, sent), attempt: 1,
			opts: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}, maxTokens: sent * 10 / 12 * 90 / 100, elided: 1},
		{name: "nothing left", in: last, err: overflowErr(9000, 8000), attempt: 1, want: history.ErrCannotRecover,
			maxTokens: tokens(t, last)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tt.in)
			out, res, err := RecoverOverflow(tt.in, tt.err, tt.attempt, tt.opts...)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if adaptertest.JSON(t, tt.in) != before {
				t.Fatal("the input was modified")
			}
			if err := Validate(out); err != nil {
				t.Fatalf("output fails Validate: %v", err)
			}
			if got := tokens(t, out); (got != res.TokensAfter && tt.want != history.ErrNotOverflow) || got > tt.maxTokens {
				t.Errorf("output counts %d, Result %d, want at most %d", got, res.TokensAfter, tt.maxTokens)
			}
			if res.DroppedTurns < tt.dropped {
				t.Errorf("dropped %d turns, want at least %d", res.DroppedTurns, tt.dropped)
			}
			if res.ElidedResults < tt.elided {
				t.Errorf("elided %d results, want at least %d", res.ElidedResults, tt.elided)
			}
			notices := 0
			for j, k := range res.Kept {
				switch {
				case k < 0:
					notices++
					if out[j].Extra[KindKey] != "breadcrumb" {
						t.Errorf("notice %d is not marked", j)
					}
				case !slices.Contains(res.Modified, j) && out[j] != tt.in[k]:
					t.Errorf("message %d is not the caller's pointer %d", j, k)
				}
			}
			if notices > 1 || (res.DroppedTurns > 0 && notices != 1) {
				t.Errorf("%d notices after dropping %d turns", notices, res.DroppedTurns)
			}
			if out[len(out)-1] != tt.in[len(tt.in)-1] || out[0] != tt.in[0] {
				t.Error("the system prompt or the latest message was not kept")
			}
			switch {
			case errors.Is(err, history.ErrNotOverflow):
				if len(out) != len(tt.in) || cap(out) != len(out) || res.Trimmed {
					t.Errorf("not an overflow: %d of %d messages (cap %d), Trimmed %v", len(out), len(tt.in), cap(out), res.Trimmed)
				}
			case errors.Is(err, history.ErrCannotRecover):
				var re *history.RecoverError
				if !errors.As(err, &re) || !errors.Is(err, tt.err) || re.Limit != 8000 || re.Used != 9000 {
					t.Errorf("want a *history.RecoverError wrapping the provider's error with its sizes, got %#v", err)
				}
			}
		})
	}
}

// TestRecoverOverflowInvalid: a message that does not convert is reported
// as Trim reports it, with no messages.
func TestRecoverOverflowInvalid(t *testing.T) {
	in := []*schema.Message{schema.UserMessage("a"), nil}
	out, res, err := RecoverOverflow(in, overflowErr(10, 5), 1)
	if !errors.Is(err, ErrInvalidMessage) || out != nil || res.Messages != nil {
		t.Fatalf("got %v, %d messages, %d in Result", err, len(out), len(res.Messages))
	}
	_, _, err = RecoverOverflow(agentTurns(3, 100), overflowErr(10, 5), 1, history.WithPin(2))
	var oe *history.OptionError
	if !errors.As(err, &oe) {
		t.Fatalf("pinning a message with tool calls: got %v, want a *history.OptionError", err)
	}
}

// TestRecoverOverflowCalibration: RecoverOverflow records in the
// calibration what the overflow error says, so that the next trim aims
// lower.
func TestRecoverOverflowCalibration(t *testing.T) {
	in := agentTurns(6, 400)
	sent := tokens(t, in)
	var cal history.Calibration
	if _, _, err := RecoverOverflow(in, overflowErr(sent*13/10, sent), 1, history.WithCalibration(&cal)); err != nil {
		t.Fatal(err)
	}
	if got := cal.Budget(sent); got >= sent*10/13 {
		t.Errorf("after an overflow at 1.3x, the calibrated budget for %d is %d", sent, got)
	}
}

func TestOverhead(t *testing.T) {
	props := orderedmap.New[string, *jsonschema.Schema]()
	props.Set("path", &jsonschema.Schema{Type: "string", Description: "file to read"})
	read := &schema.ToolInfo{Name: "read_file", Desc: "Reads a file of the workspace.",
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&jsonschema.Schema{Type: "object", Properties: props, Required: []string{"path"}})}
	grep := &schema.ToolInfo{Name: "grep", Desc: "Searches the workspace.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"pattern": {Type: schema.String, Desc: "regular expression", Required: true}})}
	noParams := &schema.ToolInfo{Name: "now", Desc: "Current time."}
	readJSON := `[{"type":"function","function":{"name":"read_file","description":"Reads a file of the workspace.",` +
		`"parameters":{"type":"object","properties":{"path":{"type":"string","description":"file to read"}},"required":["path"]}}}]`
	bytesCounter := history.CounterFunc(func(m history.Message) int { return len(m.Content) })
	tests := []struct {
		name  string
		tools []*schema.ToolInfo
		c     history.Counter
		want  int
	}{
		{name: "none", tools: nil, want: 0},
		{name: "empty", tools: []*schema.ToolInfo{}, want: 0},
		{name: "only nil", tools: []*schema.ToolInfo{nil}, want: 0},
		{name: "wire JSON", tools: []*schema.ToolInfo{read}, c: bytesCounter, want: len(readJSON)},
		{name: "heuristic", tools: []*schema.ToolInfo{read},
			want: history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: readJSON})},
		{name: "no parameters", tools: []*schema.ToolInfo{noParams}, c: bytesCounter,
			want: len(`[{"type":"function","function":{"name":"now","description":"Current time.","parameters":null}}]`)},
		{name: "params form", tools: []*schema.ToolInfo{grep}, c: bytesCounter,
			want: len(`[{"type":"function","function":{"name":"grep","description":"Searches the workspace.",` +
				`"parameters":{"type":"object","properties":{"pattern":{"type":"string","description":"regular expression"}},"required":["pattern"]}}}]`)},
		{name: "negative counter", tools: []*schema.ToolInfo{read}, c: history.CounterFunc(func(history.Message) int { return -5 }), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overhead(tt.tools, tt.c); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	// Two tools encode as one array: [a] and [b] cost one byte more than [a,b].
	one, two := Overhead([]*schema.ToolInfo{read}, bytesCounter), Overhead([]*schema.ToolInfo{read, grep}, bytesCounter)
	if two != one+Overhead([]*schema.ToolInfo{grep}, bytesCounter)-1 {
		t.Errorf("two tools cost %d, one %d", two, one)
	}
}

// TestOverheadInTrim: WithOverhead(Overhead(...)) leaves room for the
// tools and TokensAfter counts them.
func TestOverheadInTrim(t *testing.T) {
	in := agentTurns(4, 200)
	tools := []*schema.ToolInfo{{Name: "read_file", Desc: strings.Repeat("Reads a file. ", 40)}}
	over := Overhead(tools, nil)
	budget := tokens(t, in)
	out, res, err := Trim(in, budget, history.WithOverhead(over))
	if err != nil {
		t.Fatal(err)
	}
	if got := tokens(t, out); res.TokensAfter != got+over || res.TokensAfter > budget || len(out) >= len(in) {
		t.Errorf("%d of %d messages, %d tokens + %d overhead, Result %d, budget %d", len(out), len(in), got, over, res.TokensAfter, budget)
	}
}

func tokens(t testing.TB, msgs []*schema.Message) int {
	t.Helper()
	h, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(h, nil)
}
