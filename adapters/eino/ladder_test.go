package eino

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	goopenai "github.com/meguminnnnnnnnn/go-openai"
)

// genAgent builds an agent conversation from data: tasks followed by many
// tool rounds of a thinking model (reasoning, Claude's thinking signature,
// Gemini's thought signature on the first call) whose results carry tool
// names, multi-content parts, reasoning and Extra maps, with an
// occasional unanswered call or stray result for the sweep.
func genAgent(data []byte) []*schema.Message {
	out := []*schema.Message{schema.SystemMessage("You are an agent. Use the tools.")}
	id := 0
	for _, v := range data {
		b := int(v)
		switch b % 8 {
		case 0:
			out = append(out, schema.UserMessage(adaptertest.TaskText(b)))
		case 1:
			out = append(out, schema.AssistantMessage(adaptertest.NoteText(b), nil))
		case 7:
			// An unanswered call next to an answered one, and a stray
			// result; from 64 on, with arguments worth clearing (a model
			// without thinking: nothing signed).
			id++
			c := "c" + strconv.Itoa(id)
			args := "{}"
			if b >= 64 {
				args = `{"pattern":"` + strings.Repeat("func handler", b/8) + `"}`
			}
			out = append(out, schema.AssistantMessage("", []schema.ToolCall{call(c, "grep", args), call("u"+c, "grep", "{}")}),
				schema.ToolMessage(adaptertest.FoundText(b), c, schema.WithToolName("grep")),
				schema.ToolMessage("?", "stray"))
		default:
			n := 1 + b%3
			m := thinkingMessage("thinking "+strconv.Itoa(b), id)
			var rs []*schema.Message
			for k := range n {
				cid := "call_" + strconv.Itoa(id+k)
				m.ToolCalls = append(m.ToolCalls, signedCall(cid, "read_file", `{"k":`+strconv.Itoa(k)+`}`, k, id))
				body := adaptertest.OutputText(b, k)
				r := schema.ToolMessage(body, cid, schema.WithToolName("read_file"))
				switch (b + k) % 4 {
				case 0:
					//lint:ignore SA1019 runtimes still fill the deprecated MultiContent; elision must clear it.
					r.MultiContent = []schema.ChatMessagePart{{Type: schema.ChatMessagePartTypeText, Text: "exit 0"}}
				case 1:
					r.Extra = map[string]any{"trace": b}
				case 2:
					r.ReasoningContent = "why " + strconv.Itoa(b)
				}
				rs = append(rs, r)
			}
			id += n
			out = append(append(out, m), rs...)
		}
	}
	return out
}

// conversation is what the shared test drivers trim.
type conversation = []*schema.Message

// adapter describes this package to the shared ladder and repeated-trim
// drivers: one for one, exact counts, notices rendered with their names.
var adapter = adaptertest.Adapter[conversation]{
	Trim:      Trim,
	ToHistory: ToHistory,
	Validate:  Validate,
	Agent:     genAgent,
	More:      []func([]byte) conversation{gen},
	Notices: []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[context trimmed]", Name: "trimmer"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[steps trimmed]"})},
	Exact:          true,
	OneForOne:      true,
	ClearArguments: true,
	Check:          checkNative,
	Start:          func() conversation { return conversation{schema.SystemMessage("sys")} },
	Task: func(c conversation, s string) conversation {
		return slices.Concat(c, conversation{schema.UserMessage(s)})
	},
	Step: func(c conversation, id, output string) conversation {
		return slices.Concat(c, conversation{schema.AssistantMessage("", []schema.ToolCall{call(id, "run", "{}")}),
			schema.ToolMessage(output, id)})
	},
	Len: func(c conversation) int { return len(c) },
}

// checkNative checks what the ladder keeps true of this package's native
// values: each notice carries Extra[KindKey] = "breadcrumb"; an elided
// result keeps the caller's ids, tool name and Extra entries and is marked
// "elided"; any other kept message whose calls the core left as they were
// is the caller's pointer, and one from which calls were stripped or whose
// arguments were cleared keeps its reasoning, its Extra and each kept
// call's Extra (signatures), and is never one with reasoning if cleared. Of an
// input that validates, the output keeps the latest user request and the
// first assistant message answering it (keptRules).
func checkNative(t *testing.T, in, out conversation, res history.Result) {
	t.Helper()
	// Converted back, the output is exactly Result.Messages: what the core
	// decided, counted and reported, notices and changed messages included.
	back, err := ToHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(res.Messages) {
		t.Fatalf("%d messages out, Result has %d", len(back), len(res.Messages))
	}
	for j := range back {
		if !sameMessage(back[j], res.Messages[j]) {
			t.Fatalf("message %d reads back as %s, Result has %s", j, adaptertest.JSON(t, back[j]), adaptertest.JSON(t, res.Messages[j]))
		}
	}
	for j, k := range res.Kept {
		m := &res.Messages[j]
		switch {
		case k < 0:
			if out[j].Extra[KindKey] != string(history.KindBreadcrumb) {
				t.Fatalf("notice %d is not marked: %s", j, adaptertest.JSON(t, out[j]))
			}
		case m.Kind == history.KindElided:
			o, c := out[j], in[k]
			if o.ToolCallID != c.ToolCallID || o.ToolName != c.ToolName || o.Extra[KindKey] != string(history.KindElided) {
				t.Fatalf("elided result %d is %s, from %s", j, adaptertest.JSON(t, o), adaptertest.JSON(t, c))
			}
			for key, v := range c.Extra {
				if o.Extra[key] != v {
					t.Fatalf("elided result %d lost Extra[%q]", j, key)
				}
			}
		case sameCalls(m.ToolCalls, in[k].ToolCalls):
			if out[j] != in[k] {
				t.Fatalf("kept message %d is not the caller's", k)
			}
		default: // calls stripped or cleared: reasoning and signatures stay
			if msg := sameOrigin(in[k], out[j]); msg != "" {
				t.Fatalf("message %d: %s", j, msg)
			}
		}
	}
	if Validate(in) == nil {
		if msg := keptRules(in, out, res); msg != "" {
			t.Fatal(msg)
		}
	}
}

// sameCalls reports whether the calls the core kept, h, are the caller's
// calls c, with the same arguments.
func sameCalls(h []history.ToolCall, c []schema.ToolCall) bool {
	if len(h) != len(c) {
		return false
	}
	for i := range h {
		if h[i].ID != c[i].ID || h[i].Arguments != c[i].Function.Arguments {
			return false
		}
	}
	return true
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size, also clearing arguments.
func TestTrimLadder(t *testing.T) { adapter.Ladder(t) }

func FuzzTrimLadder(f *testing.F) { adapter.FuzzLadder(f) }

// TestTrimElidedForms: an elided tool message keeps its ids, names,
// metadata and Extra, holds the placeholder and nothing else, and is marked
// so that a later trim does not count it as a new result.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	r := schema.ToolMessage(big, "a", schema.WithToolName("read"))
	r.Name = "reader"
	r.ReasoningContent = "because"
	r.UserInputMultiContent = []schema.MessageInputPart{{Type: schema.ChatMessagePartTypeText, Text: big}}
	r.ResponseMeta = &schema.ResponseMeta{FinishReason: "stop"}
	r.Extra = map[string]any{"trace": 7}
	in := []*schema.Message{
		schema.UserMessage("task"),
		schema.AssistantMessage("", []schema.ToolCall{call("a", "read", "{}")}),
		r,
		schema.AssistantMessage("done", nil),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.Name + "]" }
	out, res, err := Trim(in, 60, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 1 || len(out) != len(in) {
		t.Fatalf("elided %d of 1 results, %d messages", res.ElidedResults, len(out))
	}
	want := `{"role":"tool","content":"[elided read]","name":"reader","tool_call_id":"a","tool_name":"read",` +
		`"response_meta":{"finish_reason":"stop"},"extra":{"histrim_kind":"elided","trace":7}}`
	if got := adaptertest.JSON(t, out[2]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, j := range []int{0, 1, 3} {
		if out[j] != in[j] {
			t.Errorf("message %d is not the caller's", j)
		}
	}
	if r.Content != big || r.ReasoningContent == "" || len(r.UserInputMultiContent) != 1 || len(r.Extra) != 1 {
		t.Error("the caller's message was modified")
	}
	if h, _ := ToHistory(out); h[2].Kind != history.KindElided {
		t.Errorf("elided message reads back as Kind %q", h[2].Kind)
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice, whether Trim's Extra marker survives
// or the runtime stores the messages without Extra.
func TestRepeatedTrimNoStacking(t *testing.T) {
	adapter.Repeat(t)
	withoutExtra := adapter
	withoutExtra.Store = func(c conversation) conversation {
		stored := make(conversation, len(c))
		for i, m := range c {
			cp := *m
			cp.Extra = nil
			stored[i] = &cp
		}
		return stored
	}
	withoutExtra.Repeat(t)
}

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }

// sameMessage reports whether a and b are the same message, a nil slice
// being the same as an empty one.
func sameMessage(a, b history.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Name == b.Name && a.Kind == b.Kind &&
		a.ToolCallID == b.ToolCallID && slices.Equal(a.Parts, b.Parts) && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// TestStepTrimKeepsThinkingStep: with thinking on, Anthropic requires the
// first assistant message answering the latest user request to start with
// its thinking block ("messages.1.content.0.type: Expected `thinking` or
// `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a
// final `assistant` message must start with a thinking block (preceeding
// the lastmost set of `tool_use` and `tool_result` blocks)...",
// Kilo-Org/kilocode#5219; pydantic/pydantic-ai#2075). eino-ext's claude
// model sends that block from the message's ReasoningContent (in Extra) and
// signature, so step trimming must keep a first step with reasoning: it
// drops the steps after it instead, puts its notice right after the
// request, and returns the step's messages as the caller's values. A first
// step without reasoning is dropped as any other.
func TestStepTrimKeepsThinkingStep(t *testing.T) {
	out := strings.Repeat("func f() { return 42 } // a line of source\n", 60)
	build := func(thinking string) []*schema.Message {
		first := thinkingMessage(thinking, 1)
		first.ToolCalls = []schema.ToolCall{signedCall("c1", "read", `{"p":"a.go"}`, 0, 1), signedCall("c2", "read", `{"p":"b.go"}`, 1, 1)}
		return []*schema.Message{
			schema.SystemMessage("You are an agent."),
			schema.UserMessage("fix the tests"),
			first,
			schema.ToolMessage(out, "c1", schema.WithToolName("read")),
			schema.ToolMessage(out, "c2", schema.WithToolName("read")),
			schema.AssistantMessage("", []schema.ToolCall{call("c3", "read", `{"p":"c.go"}`)}),
			schema.ToolMessage(out, "c3", schema.WithToolName("read")),
			schema.AssistantMessage("", []schema.ToolCall{call("c4", "test", "{}")}),
			schema.ToolMessage(out, "c4", schema.WithToolName("test")),
			schema.AssistantMessage("", []schema.ToolCall{call("c5", "edit", "{}")}),
			schema.ToolMessage("ok", "c5", schema.WithToolName("edit")),
		}
	}
	sets := map[string][]history.Option{
		"steps":         {history.WithStepTrim()},
		"elision+steps": {history.WithElision(history.ElideOptions{MinTokens: -1}), history.WithStepTrim()},
	}
	for name, opts := range sets {
		in := build("The tests fail in a.go; read it and b.go first.")
		total, trimmed := adapter.Tokens(t, in), 0
		for budget := total / 3; budget < total; budget += total / 12 {
			got, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			if err := Validate(got); err != nil {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			if len(got) == len(in) {
				continue // nothing dropped at this budget
			}
			if res.DroppedSteps == 0 {
				t.Fatalf("%s, budget %d: %d of %d messages kept, no step dropped", name, budget, len(got), len(in))
			}
			if got[1] != in[1] || got[2].Extra[KindKey] != string(history.KindBreadcrumb) || got[3] != in[2] {
				t.Fatalf("%s, budget %d: want the request, the step notice, then the thinking step as the caller's message; got %s",
					name, budget, adaptertest.JSON(t, got[:4]))
			}
			if msg := keptRules(in, got, res); msg != "" {
				t.Fatalf("%s, budget %d: %s", name, budget, msg)
			}
			trimmed++
		}
		if trimmed < 3 {
			t.Errorf("%s: steps dropped at %d budgets only", name, trimmed)
		}
		// Without reasoning the first step is an ordinary old step.
		plain := build("")
		got, _, _ := Trim(plain, total/2, opts...)
		if slices.Contains(got, plain[2]) {
			t.Errorf("%s: a first step without reasoning was kept at half the size: %s", name, adaptertest.JSON(t, got))
		}
	}
}

// TestStepNoticeRoleGemini: eino-ext's gemini model sends assistant
// messages as model turns and Gemini rejects a function call turn that
// does not come right after a user turn or a function response turn
// ("Please ensure that function call turn comes immediately after a user
// turn or after a function response turn.", continuedev/continue#11164).
// The default step notice is a user message, so a trimmed tool loop keeps
// that order; a step notice configured with the assistant role would put a
// model turn right before the next function call.
func TestStepNoticeRoleGemini(t *testing.T) {
	out := strings.Repeat("func f() { return 42 } // a line of source\n", 60)
	in := []*schema.Message{schema.SystemMessage("You are an agent."), schema.UserMessage("fix the tests")}
	for k := range 5 {
		id := "c" + strconv.Itoa(k)
		in = append(in, schema.AssistantMessage("", []schema.ToolCall{call(id, "read", "{}")}),
			schema.ToolMessage(out, id, schema.WithToolName("read")))
	}
	budget := adapter.Tokens(t, in) / 2
	got, res, err := Trim(in, budget, history.WithStepTrim())
	if err != nil || res.DroppedSteps == 0 {
		t.Fatalf("Trim: %v, %d steps dropped", err, res.DroppedSteps)
	}
	if i := geminiOrder(got); i >= 0 {
		t.Errorf("default step notice: message %d breaks Gemini's order", i)
	}
	got, _, _ = Trim(in, budget, history.WithStepTrim(),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[steps trimmed]"}))
	if i := geminiOrder(got); i < 0 {
		t.Errorf("an assistant-role step notice keeps Gemini's order: %s", adaptertest.JSON(t, got))
	}
}

// TestTrimClearedArguments: with ClearArguments, eliding a result clears
// the arguments of the call it answers in a copy of the caller's message
// that keeps the call's ID, name, Index, Type and Extra; the output counts
// exactly what the core counted, passes Validate, and comes back unchanged
// from a second trim. A thinking message (ReasoningContent, signatures) is
// the caller's pointer, its arguments whole.
func TestTrimClearedArguments(t *testing.T) {
	source := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", 30)
	args := `{"path":"server.go","content":` + adaptertest.JSON(t, source) + `}`
	out1 := strings.Repeat("wrote 30 lines\n", 40)
	idx := 0
	write := call("w1", "write_file", args)
	write.Index = &idx
	write.Extra = map[string]any{"trace": "t1"}
	thinking := thinkingMessage("The handler needs a test next.", 3)
	thinking.ToolCalls = []schema.ToolCall{signedCall("w3", "write_file", args, 0, 3)}
	in := []*schema.Message{
		schema.SystemMessage("You are a coding agent."),
		schema.UserMessage("Add the HTTP handlers and their tests."),
		schema.AssistantMessage("", []schema.ToolCall{write, call("w2", "write_file", args)}),
		schema.ToolMessage(out1, "w1", schema.WithToolName("write_file")),
		schema.ToolMessage(out1, "w2", schema.WithToolName("write_file")),
		thinking,
		schema.ToolMessage(out1, "w3", schema.WithToolName("write_file")),
		schema.AssistantMessage("", []schema.ToolCall{call("t1", "run_tests", `{"pkg":"./..."}`)}),
		schema.ToolMessage("ok", "t1", schema.WithToolName("run_tests")),
	}
	before := adaptertest.JSON(t, in)
	opts := []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 64})}
	budget := adapter.Tokens(t, in) / 3
	out, res, err := Trim(in, budget, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if adaptertest.JSON(t, in) != before {
		t.Fatal("Trim modified its input")
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
	back, _ := ToHistory(out)
	if got := history.Estimate(back, nil); got != res.TokensAfter || got > budget {
		t.Fatalf("the output counts %d, the core %d, budget %d", got, res.TokensAfter, budget)
	}
	if len(out) != len(in) || res.ElidedResults != 3 {
		t.Fatalf("%d of %d messages, %d results elided; want every message and 3 results", len(out), len(in), res.ElidedResults)
	}
	a := out[2]
	if a == in[2] || len(a.ToolCalls) != 2 {
		t.Fatalf("the cleared message is the caller's, or lost calls: %s", adaptertest.JSON(t, a))
	}
	for i, c := range a.ToolCalls {
		o := in[2].ToolCalls[i]
		if !strings.HasPrefix(c.Function.Arguments, adaptertest.ClearedPrefix) || c.ID != o.ID || c.Function.Name != o.Function.Name || c.Type != o.Type {
			t.Fatalf("call %d reads %s, from %s", i, adaptertest.JSON(t, c), adaptertest.JSON(t, o))
		}
	}
	if a.ToolCalls[0].Index != &idx || a.ToolCalls[0].Extra["trace"] != "t1" {
		t.Error("the cleared call lost its Index or Extra")
	}
	if out[5] != thinking || out[5].ToolCalls[0].Function.Arguments != args {
		t.Error("a thinking message was changed: its reasoning and signatures bind its calls")
	}
	if h, _ := ToHistory(out[6:7]); h[0].Kind != history.KindElided {
		t.Error("the thinking message's result was not elided: the test does not show that its call was spared")
	}
	again, _, err := Trim(out, budget, opts...)
	if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
		t.Fatalf("a second trim changed the output (%v)", err)
	}

	// RecoverOverflow rebuilds the same way.
	rec, rres, err := RecoverOverflow(in, overflowErr(adapter.Tokens(t, in), budget), 1, opts...)
	if err != nil {
		t.Fatal(err)
	}
	back, _ = ToHistory(rec)
	if got := history.Estimate(back, nil); got != rres.TokensAfter || Validate(rec) != nil {
		t.Fatalf("RecoverOverflow: the output counts %d, the core %d", got, rres.TokensAfter)
	}
	if !strings.HasPrefix(rec[2].ToolCalls[0].Function.Arguments, adaptertest.ClearedPrefix) {
		t.Errorf("RecoverOverflow did not clear the arguments: %s", adaptertest.JSON(t, rec[2]))
	}
}

// The Extra keys under which eino-ext's chat models keep what a thinking
// model returns and must get back unmodified (cloudwego/eino-ext,
// components/model/claude/message_extra.go and
// components/model/gemini/message_extra.go): Claude's thinking text and
// its signature on the message, Gemini's thought signature on a function
// call.
const (
	claudeThinkingKey  = "_eino_claude_thinking"
	claudeSignatureKey = "_eino_claude_thinking_signature"
	geminiSignatureKey = "gemini_thought_signature"
)

// corpusMessages maps a conversation of the shared corpus to eino
// messages, with what a thinking model returns synthesised, as the corpus
// has none: every assistant message carries ReasoningContent and, as
// eino-ext's claude model stores them, the thinking text and a signature
// in Extra; its first tool call carries a Gemini thought signature in its
// Extra, as eino-ext's gemini model stores it (only the first of parallel
// calls has one).
func corpusMessages(c adaptertest.Conversation) []*schema.Message {
	out := make([]*schema.Message, len(c.Messages))
	for i, m := range c.Messages {
		switch m.Role {
		case history.RoleSystem:
			out[i] = schema.SystemMessage(m.Content)
		case history.RoleUser:
			out[i] = schema.UserMessage(m.Content)
		case history.RoleTool:
			out[i] = schema.ToolMessage(m.Content, m.ToolCallID, schema.WithToolName(m.Name))
		default:
			n := strconv.Itoa(i)
			thinking := "Message " + n + " of " + c.Name + ": read what came back, decide the next step."
			a := &schema.Message{Role: schema.Assistant, Content: m.Content, ReasoningContent: thinking,
				Extra: map[string]any{claudeThinkingKey: thinking, claudeSignatureKey: "EqQBCkYIBxgCKkD" + n}}
			for k, tc := range m.ToolCalls {
				call := schema.ToolCall{ID: tc.ID, Type: "function", Function: schema.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}}
				if k == 0 {
					call.Extra = map[string]any{geminiSignatureKey: []byte("sig-" + n)}
				}
				a.ToolCalls = append(a.ToolCalls, call)
			}
			out[i] = a
		}
	}
	return out
}

// TestCorpus trims every conversation of the shared corpus of real agent
// sessions, as eino messages with reasoning and signatures synthesised,
// at 1% to 100% of its size with each option set of the ladder, and
// counts the trims that break a rule:
//
//   - the output fails Validate (the pairing rule of the OpenAI-style APIs);
//   - the latest user request is not in the output;
//   - a kept assistant message lost its reasoning, its Extra (Claude's
//     thinking signature) or a kept call's Extra (Gemini's thought
//     signature), or any other message is not the caller's;
//   - where the input keeps Gemini's order (see geminiOrder), the output
//     does not: a function call turn follows a model turn or opens the
//     contents;
//   - the first assistant message answering the latest user request
//     carried reasoning in the input but the output's does not: with
//     thinking on, Anthropic rejects such a request ("Expected `thinking`
//     or `redacted_thinking`, but found `tool_use`. When `thinking` is
//     enabled, a final `assistant` message must start with a thinking
//     block (preceeding the lastmost set of `tool_use` and `tool_result`
//     blocks)...", Kilo-Org/kilocode#5219, mastra-ai/mastra#7799).
//
// The corpus is small (61 conversations, 3,070 messages), so every
// conversation runs at every budget.
func TestCorpus(t *testing.T) {
	convs := adaptertest.Corpus(t, "../..")
	trims, violations := 0, 0
	for _, c := range convs {
		in := corpusMessages(c)
		if err := Validate(in); err != nil {
			t.Fatalf("%s: the mapped input is invalid: %v", c.Name, err)
		}
		before := adaptertest.JSON(t, in)
		for _, budget := range adaptertest.CorpusBudgets(adapter.Tokens(t, in)) {
			for _, set := range adaptertest.LadderSets(false) {
				trims++
				if msg := checkCorpusTrim(in, budget, set.Opts); msg != "" {
					violations++
					t.Errorf("%s, budget %d, %s: %s", c.Name, budget, set.Name, msg)
				}
			}
		}
		if adaptertest.JSON(t, in) != before {
			t.Errorf("%s: a trim modified the caller's messages", c.Name)
		}
	}
	t.Logf("%d conversations x %d budgets x %d option sets = %d trims, %d violations",
		len(convs), len(adaptertest.CorpusBudgets(1)), len(adaptertest.LadderSets(false)), trims, violations)
	if trims != len(convs)*len(adaptertest.CorpusBudgets(1))*len(adaptertest.LadderSets(false)) {
		t.Errorf("%d trims run", trims)
	}
}

// checkCorpusTrim trims in at budget with opts and returns the first rule
// the output breaks (see TestCorpus), or "".
func checkCorpusTrim(in []*schema.Message, budget int, opts []history.Option) string {
	out, res, err := Trim(in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return "Trim: " + err.Error()
	}
	if err := Validate(out); err != nil {
		return "output fails Validate: " + err.Error()
	}
	if geminiOrder(in) < 0 {
		if i := geminiOrder(out); i >= 0 {
			return "message " + strconv.Itoa(i) + ": a function call turn that Gemini rejects where it stands"
		}
	}
	return keptRules(in, out, res)
}

// geminiOrder returns the index of the first assistant message with tool
// calls that eino-ext's gemini model would send where Gemini rejects it,
// or -1. That model sends a leading system message as the system
// instruction, any other system message and every tool message as a user
// turn, and assistant messages as model turns; Gemini requires a function
// call turn to come right after a user turn or a function response turn
// ("Please ensure that function call turn comes immediately after a user
// turn or after a function response turn.", INVALID_ARGUMENT,
// continuedev/continue#11164; google-gemini/gemini-cli#11814 when the
// history starts with a function call).
func geminiOrder(msgs []*schema.Message) int {
	for i, m := range msgs {
		if m.Role != schema.Assistant || len(m.ToolCalls) == 0 {
			continue
		}
		if i == 0 || msgs[i-1].Role == schema.Assistant || (i == 1 && msgs[0].Role == schema.System) {
			return i
		}
	}
	return -1
}

// keptRules returns the first rule of TestCorpus that out, what Trim made
// of in with res, breaks, leaving Validate aside, or "": every message
// the caller's or what it may become (sameOrigin), the latest user request
// kept, and its first assistant message kept if it had reasoning.
func keptRules(in, out []*schema.Message, res history.Result) string {
	if len(out) != len(res.Messages) || (res.Kept != nil && len(res.Kept) != len(out)) {
		return "the output does not correspond to the Result"
	}
	latest := lastUser(in)
	kept := -1
	for j, m := range out {
		k := j
		if res.Kept != nil {
			k = res.Kept[j]
		}
		if k < 0 {
			continue
		}
		if k == latest && m == in[k] {
			kept = j
		}
		if msg := sameOrigin(in[k], m); msg != "" {
			return "message " + strconv.Itoa(j) + ": " + msg
		}
	}
	switch {
	case latest < 0:
		return "" // no request to keep
	case kept < 0:
		return "the latest user request was dropped"
	}
	if first := firstAssistant(in, latest); first >= 0 && in[first].ReasoningContent != "" {
		if j := firstAssistant(out, kept); j < 0 || out[j].ReasoningContent != in[first].ReasoningContent {
			return "the latest turn's first assistant message lost its thinking: Anthropic rejects the request"
		}
	}
	return ""
}

// sameOrigin reports how m, the output message Trim made of orig, is not
// what it may be, or "": orig itself; a copy holding a subset of its
// calls, each with its Extra, and everything else unchanged (reasoning
// and signatures included); or, for a tool message, orig elided.
func sameOrigin(orig, m *schema.Message) string {
	switch {
	case m == orig:
		return ""
	case orig.Role == schema.Tool:
		if m.Extra[KindKey] != string(history.KindElided) || m.ToolCallID != orig.ToolCallID || m.ToolName != orig.ToolName {
			return "a changed tool message that is not the caller's result elided"
		}
		return ""
	}
	c := *orig
	c.ToolCalls = nil
	d := *m
	d.ToolCalls = nil
	if !reflect.DeepEqual(c, d) {
		return "a changed message other than a stripped copy (its reasoning or Extra changed)"
	}
	i := 0
	for _, tc := range m.ToolCalls {
		for i < len(orig.ToolCalls) && orig.ToolCalls[i].ID != tc.ID {
			i++
		}
		if i < len(orig.ToolCalls) && tc.Function.Arguments != orig.ToolCalls[i].Function.Arguments {
			// history.ElideOptions.ClearArguments, never with reasoning.
			if !strings.HasPrefix(tc.Function.Arguments, adaptertest.ClearedPrefix) || orig.ReasoningContent != "" {
				return "tool call " + strconv.Quote(tc.ID) + " has arguments that are neither the caller's nor cleared ones"
			}
			tc.Function.Arguments = orig.ToolCalls[i].Function.Arguments
		}
		if i == len(orig.ToolCalls) || !reflect.DeepEqual(orig.ToolCalls[i], tc) {
			return "tool call " + strconv.Quote(tc.ID) + " is not the caller's, in order, with its Extra"
		}
	}
	return ""
}

// lastUser returns the index of the last user message of msgs that is not
// a notice or a nudge, or -1.
func lastUser(msgs []*schema.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == schema.User && msgs[i].Extra[KindKey] == nil {
			return i
		}
	}
	return -1
}

// firstAssistant returns the index of the first assistant message after
// msgs[from], or -1.
func firstAssistant(msgs []*schema.Message, from int) int {
	for i := from + 1; i < len(msgs); i++ {
		if msgs[i].Role == schema.Assistant && msgs[i].Extra[KindKey] == nil {
			return i
		}
	}
	return -1
}

// Replays: the histories on which other trimmers broke a request, each
// naming its source, as eino messages of a thinking model, trimmed here and
// sent through eino-ext's real OpenAI chat model to a server that enforces
// OpenAI's pairing rule with OpenAI's error bodies. The peer's output is
// sent too, so each case shows that the history reproduces the failure.

// send sends msgs through eino-ext's OpenAI chat model to srv.
func send(t *testing.T, srv *httptest.Server, msgs []*schema.Message) error {
	t.Helper()
	ctx := context.Background()
	cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-4o-mini", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cm.Generate(ctx, msgs)
	return err
}

// perMessage counts every message as one token: the token_counter=len of
// the LangChain reproductions.
var perMessage = history.WithCounter(history.CounterFunc(func(history.Message) int { return 1 }))

// TestReplayTrimmers replays the histories on which LangChain's
// trim_messages, Semantic Kernel's truncation reducer and a runtime's trim
// returned a history the provider rejects (an orphan tool message first,
// or a call without its result), with every assistant message a thinking
// model's. For each, the peer's output is rejected with OpenAI's body,
// and Trim's, at the same budget, passes Validate, keeps the latest user
// request and the first assistant message answering it (with its
// thinking), hands back the caller's messages with their signatures, and
// is accepted.
func TestReplayTrimmers(t *testing.T) {
	weather := func() *schema.Message {
		m := thinkingMessage("The user wants the weather: call get_weather.", 1)
		m.Content = "Let's check the weather in Florida"
		m.ToolCalls = []schema.ToolCall{signedCall("abc123", "get_weather", `{"location": "Florida"}`, 0, 1)}
		return m
	}
	answer := func(text string, n int) *schema.Message {
		m := thinkingMessage("Answer from what I know.", n)
		m.Content = text
		return m
	}
	step := func(id, tool string, n int) *schema.Message {
		m := thinkingMessage("Next: "+tool+".", n)
		m.ToolCalls = []schema.ToolCall{signedCall(id, tool, "{}", 0, n)}
		return m
	}
	big := strings.Repeat("func f() { return 42 } // source\n", 80)
	tests := []struct {
		name, source string
		in           []*schema.Message
		budget       int
		opts         []history.Option
		peer         []int  // the messages of in the peer kept
		peerError    string // what OpenAI answers the peer's output
	}{
		{
			name:   "trim_messages strategy last orphans the tool message",
			source: "langchain-ai/langchain#33245 (trim_messages(messages, strategy=\"last\", token_counter=len, max_tokens=5) returns ToolMessage, HumanMessage, AIMessage, HumanMessage, AIMessage)",
			in: []*schema.Message{
				schema.UserMessage("What's the weather in Florida?"),
				weather(),
				schema.ToolMessage("It's sunny in Florida, 85F", "abc123", schema.WithToolName("get_weather")),
				schema.UserMessage("And in New York?"),
				answer("I can check that too.", 2),
				schema.UserMessage("Please do."),
				answer("Checking New York now.", 3),
			},
			budget: 5, opts: []history.Option{perMessage},
			peer:      []int{2, 3, 4, 5, 6},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
		{
			name:   "ChatHistoryTruncationReducer target_count=3 cuts off the tool_calls message",
			source: "microsoft/semantic-kernel#12708 (reproduction in PR #12923: After reduce: TOOL, USER, ASSISTANT)",
			in: []*schema.Message{
				schema.SystemMessage("sys"),
				schema.UserMessage("user A"),
				step("123", "search", 1),
				schema.ToolMessage("RESULT", "123", schema.WithToolName("search")),
				schema.UserMessage("user B"),
				answer("done", 2),
			},
			budget: 4, opts: []history.Option{perMessage},
			peer:      []int{3, 4, 5},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
		{
			name:   "history filtered to user and assistant messages keeps a call without its result",
			source: "langchain-ai/langchain#29637 (comment of 2026-04-17: the ToolMessage \"was either filtered out ... or trimmed away\"; Anthropic: \"messages.2: tool_use ids were found without tool_result blocks immediately after\")",
			in: []*schema.Message{
				schema.UserMessage("hi"),
				answer("hello", 1),
				schema.UserMessage("what's the weather in florida?"),
				weather(),
				answer("It's sunny in Florida.", 2),
				schema.UserMessage("and tomorrow?"),
			},
			budget:    1000,
			peer:      []int{0, 1, 2, 3, 4, 5},
			peerError: "must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: abc123",
		},
		{
			name:   "a trim that always keeps the last message keeps a trailing tool result alone",
			source: "14790897/MiqroForge-Desktop#753 ([system, user, assistant(tc1), tool1, assistant(tc2), tool2] trimmed to [system, user, tool2])",
			in: []*schema.Message{
				schema.SystemMessage("You are an agent."),
				schema.UserMessage("search and read the results"),
				step("tc1", "search", 1),
				schema.ToolMessage(big, "tc1", schema.WithToolName("search")),
				step("tc2", "read", 2),
				schema.ToolMessage(big, "tc2", schema.WithToolName("read")),
			},
			// The thinking step cannot go (Anthropic binds its thinking to
			// the loop), nor the latest: elision makes them fit.
			budget: 900, opts: []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1}), history.WithStepTrim()},
			peer:      []int{0, 1, 5},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
	}
	srv := adaptertest.OpenAIPairingServer(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var peer []*schema.Message
			for _, i := range tc.peer {
				peer = append(peer, tc.in[i])
			}
			if err := Validate(peer); !errors.Is(err, ErrUnpaired) {
				t.Fatalf("the peer's output passes Validate (%v): the case does not replay %s", err, tc.source)
			}
			if err := send(t, srv, peer); err == nil || !strings.Contains(err.Error(), tc.peerError) {
				t.Fatalf("the peer's output: %v, want OpenAI's %q (%s)", err, tc.peerError, tc.source)
			}
			out, res, err := Trim(tc.in, tc.budget, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("%v (%s)", err, tc.source)
			}
			if msg := keptRules(tc.in, out, res); msg != "" {
				t.Fatalf("%s (%s): %s", msg, tc.source, adaptertest.JSON(t, out))
			}
			if err := send(t, srv, out); err != nil {
				t.Fatalf("our output was rejected: %v (%s)", err, tc.source)
			}
		})
	}
}

// The core's overflow classifier driven by eino-ext's real OpenAI chat model
// (github.com/cloudwego/eino-ext/components/model/openai, over its go-openai
// fork) pointed at an httptest server that answers with OpenAI's real
// status, headers and error bodies, and with bodies that are not overflows.

func TestOverflowFromEinoOpenAI(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        bool
		ov          history.Overflow
		source      string
		// apiError: the body has an "error" object, so Generate returns
		// eino-ext's *openai.APIError; otherwise go-openai's *RequestError
		// (the status and the raw body), wrapped.
		apiError bool
	}{
		{
			name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
			body: `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want: true, ov: history.Overflow{Used: 4294, Limit: 4097},
			source:   "chathub-dev/chathub#126",
			apiError: true,
		},
		{
			name: "context_length_exceeded with the completion reserved", status: http.StatusBadRequest,
			body: `{
  "error": {
    "message": "This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
}
`,
			want: true, ov: history.Overflow{Used: 3120, Limit: 3097},
			source:   "mckaywrigley/chatbot-ui#102",
			apiError: true,
		},
		{
			// No "error" member: go-openai keeps the raw body in its
			// RequestError, whose text the core reads.
			name: "OpenRouter body without an error member", status: http.StatusBadRequest,
			body: `{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 264437 tokens (262437 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","metadata":{"provider_name":null}}`,
			want: true, ov: history.Overflow{Used: 262437, Limit: 198000},
			source: "tailcallhq/forgecode#1143",
		},
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			body:     `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
			source:   "Wei-Shaw/sub2api#572",
			apiError: true,
		},
		{
			name: "429 request larger than the TPM limit", status: http.StatusTooManyRequests,
			body:     `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			source:   "TheR1D/shell_gpt#653",
			apiError: true,
		},
		{
			// The status is a field (HTTPStatusCode), which the core does
			// not read, but the text names it: "status: 429 Too Many
			// Requests", a phrase that rules an overflow out.
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:     `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			source:   "constructed (the status rules it out)",
			apiError: true,
		},
		{
			name: "HTML 502 page from a proxy", status: http.StatusBadGateway, contentType: "text/html",
			body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			source: "constructed (nginx's default 502 page)",
		},
		{
			name: "empty 400 body", status: http.StatusBadRequest,
			source: "constructed",
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum con`,
			source: "constructed",
		},
		{
			// go-openai keeps a body it cannot decode in its RequestError's
			// text, and the core reads an undecodable body as plain text: a
			// body cut after the overflow phrase still says what the server
			// said (docs/overflow.md), with the numbers it kept.
			name: "JSON body truncated after the overflow phrase", status: http.StatusBadRequest,
			body: `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tok`,
			want: true, ov: history.Overflow{Limit: 4097},
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model", status: http.StatusBadRequest,
			body:     `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`,
			source:   "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
			apiError: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				adaptertest.Answer(w, tc.status, tc.contentType, "application/json", tc.body, "X-Request-Id", "req_8f3c1e2a")
			}))
			defer srv.Close()
			ctx := context.Background()
			cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{
				BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-4o-mini",
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cm.Generate(ctx, []*schema.Message{schema.UserMessage("hello")})
			if err == nil {
				t.Fatal("the request succeeded")
			}

			// The client's own error types.
			var apiErr *einoopenai.APIError
			var reqErr *goopenai.RequestError
			switch {
			case tc.apiError:
				if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tc.status {
					t.Fatalf("Generate returned %T (%v), not eino-ext's *openai.APIError with status %d", err, err, tc.status)
				}
			case !errors.As(err, &reqErr) || reqErr.HTTPStatusCode != tc.status || string(reqErr.Body) != tc.body:
				t.Fatalf("Generate returned %T (%v), not go-openai's *RequestError with status %d and the body", err, err, tc.status)
			}

			wrapped := fmt.Errorf("agent turn 3: %w", err)
			ov, ok := history.ParseOverflow(wrapped)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
			}
			if history.IsContextOverflow(wrapped) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
		})
	}
}
