package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/pkoukk/tiktoken-go"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/memory"
)

// genAgent builds an agent conversation from data: tasks followed by many
// tool rounds whose responses come one per tool message or several in one,
// some wrapped in llms.CachedContent, some next to a text part, with an
// occasional unanswered call or stray response for the sweep.
func genAgent(data []byte) []llms.MessageContent {
	out := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("You are an agent. Use the tools."))}
	id := 0
	for _, v := range data {
		b := int(v)
		switch b % 8 {
		case 0:
			out = append(out, msg(llms.ChatMessageTypeHuman, txt(adaptertest.TaskText(b))))
		case 1:
			out = append(out, msg(llms.ChatMessageTypeAI, txt(adaptertest.NoteText(b))))
		case 7:
			// An unanswered call next to an answered one, and a stray
			// response; from 64 on, with arguments worth clearing.
			id++
			c := "c" + strconv.Itoa(id)
			args := "{}"
			if b >= 64 {
				args = `{"pattern":"` + strings.Repeat("func handler", b/8) + `"}`
			}
			out = append(out, msg(llms.ChatMessageTypeAI, call(c, "grep", args), call("u"+c, "grep", "{}")),
				msg(llms.ChatMessageTypeTool, resp(c, "grep", adaptertest.FoundText(b)), resp("stray", "grep", "?")))
		default:
			n := 1 + b%3
			m := msg(llms.ChatMessageTypeAI)
			var rs []llms.ContentPart
			for k := range n {
				cid := "call_" + strconv.Itoa(id+k)
				m.Parts = append(m.Parts, call(cid, "read_file", `{"k":`+strconv.Itoa(k)+`}`))
				var r llms.ContentPart = resp(cid, "read_file", adaptertest.OutputText(b, k))
				if (b+k)%3 == 0 {
					r = llms.WithCacheControl(r, &llms.CacheControl{Type: "ephemeral"})
				}
				rs = append(rs, r)
			}
			id += n
			out = append(out, m)
			if b%2 == 0 {
				if b%4 == 0 {
					rs = append(rs, txt("note"))
				}
				out = append(out, msg(llms.ChatMessageTypeTool, rs...))
			} else {
				for _, r := range rs {
					out = append(out, msg(llms.ChatMessageTypeTool, r))
				}
			}
		}
	}
	return out
}

// conversation is what the shared test drivers trim.
type conversation = []llms.MessageContent

// adapter describes this package to the shared ladder and repeated-trim
// drivers: responses split out of their tool messages, and an output that
// counts exactly what the core counted.
var adapter = adaptertest.Adapter[conversation]{
	Trim:      Trim,
	ToHistory: ToHistory,
	Validate:  Validate,
	Agent:     genAgent,
	More:      []func([]byte) conversation{gen},
	Notices: []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[context trimmed]"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[steps trimmed]"})},
	Exact:          true,
	ClearArguments: true,
	Check:          checkRoundTrip,
	Start:          func() conversation { return conversation{msg(llms.ChatMessageTypeSystem, txt("sys"))} },
	Task: func(c conversation, s string) conversation {
		return slices.Concat(c, conversation{msg(llms.ChatMessageTypeHuman, txt(s))})
	},
	Step: func(c conversation, id, output string) conversation {
		return slices.Concat(c, conversation{msg(llms.ChatMessageTypeAI, call(id, "run", "{}")),
			msg(llms.ChatMessageTypeTool, resp(id, "run", output))})
	},
	Len: func(c conversation) int { return len(c) },
}

// checkRoundTrip checks that out, the native output of a ladder trim,
// converts back (ToHistory) to res.Messages, message for message: the
// rebuilt messages (notices, elided responses, cut-down messages) are
// exact, not merely of the same size. Kinds are compared except where the
// native form cannot carry them: an elided response reads back as an
// ordinary one holding the placeholder, and a notice of a configured text
// as an ordinary message (ToHistory recognises the default ones).
func checkRoundTrip(t *testing.T, _, out conversation, res history.Result) {
	t.Helper()
	back, err := ToHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(res.Messages) {
		t.Fatalf("output converts to %d messages, Result has %d", len(back), len(res.Messages))
	}
	for j := range back {
		b, w := back[j], res.Messages[j]
		if (w.Kind == history.KindElided || w.Kind == history.KindBreadcrumb) && b.Kind == "" {
			b.Kind = w.Kind
		}
		if !reflect.DeepEqual(b, w) {
			t.Fatalf("output message %d converts to %+v, Result holds %+v", j, b, w)
		}
	}
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size, also clearing arguments.
func TestTrimLadder(t *testing.T) { adapter.Ladder(t) }

func FuzzTrimLadder(f *testing.F) { adapter.FuzzLadder(f) }

// TestTrimElidedForms: an elided response keeps its id, name and
// cache-control wrapper, holds the placeholder, and stays in its tool
// message with the other parts untouched.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	cc := &llms.CacheControl{Type: "ephemeral"}
	note := txt("continue")
	in := []llms.MessageContent{
		msg(llms.ChatMessageTypeHuman, txt("task")),
		msg(llms.ChatMessageTypeAI, call("a", "read", "{}"), call("b", "grep", "{}")),
		msg(llms.ChatMessageTypeTool, resp("a", "read", big), llms.WithCacheControl(resp("b", "grep", big), cc), note),
		msg(llms.ChatMessageTypeAI, txt("done")),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.Name + "]" }
	out, res, err := Trim(in, 120, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 2 || len(out) != len(in) {
		t.Fatalf("elided %d of 2 responses, %d messages", res.ElidedResults, len(out))
	}
	want := []llms.ContentPart{resp("a", "read", "[elided read]"), llms.WithCacheControl(resp("b", "grep", "[elided grep]"), cc), note}
	if !slices.EqualFunc(out[2].Parts, want, func(a, b llms.ContentPart) bool { return a == b }) || out[2].Role != llms.ChatMessageTypeTool {
		t.Errorf("got  %#v\nwant %#v", out[2].Parts, want)
	}
	for _, j := range []int{0, 1, 3} {
		if !adaptertest.SameArray(out[j].Parts, in[j].Parts) {
			t.Errorf("message %d is not the caller's", j)
		}
	}
	if in[2].Parts[0].(llms.ToolCallResponse).Content != big {
		t.Error("the caller's parts were modified")
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) { adapter.Repeat(t) }

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }

// TestTrimClearedArguments: with ClearArguments, eliding a response clears
// the arguments of the call it answers in a copy of the AI message whose
// parts are the caller's but for that call: same ID, Type, name and
// cache-control wrapper, a new FunctionCall. The output counts exactly what
// the core counted, passes Validate, comes back unchanged from a second
// trim, and the caller's parts (and FunctionCalls) are untouched.
func TestTrimClearedArguments(t *testing.T) {
	source := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", 30)
	raw, _ := json.Marshal(map[string]string{"path": "server.go", "content": source})
	args := string(raw)
	out1 := strings.Repeat("wrote 30 lines\n", 40)
	cc := &llms.CacheControl{Type: "ephemeral"}
	in := []llms.MessageContent{
		msg(llms.ChatMessageTypeSystem, txt("You are a coding agent.")),
		msg(llms.ChatMessageTypeHuman, txt("Add the HTTP handlers.")),
		msg(llms.ChatMessageTypeAI, txt("Writing both files."), call("w1", "write_file", args), llms.WithCacheControl(call("w2", "write_file", args), cc)),
		msg(llms.ChatMessageTypeTool, resp("w1", "write_file", out1), resp("w2", "write_file", out1)),
		msg(llms.ChatMessageTypeAI, call("t1", "run_tests", `{"pkg":"./..."}`)),
		msg(llms.ChatMessageTypeTool, resp("t1", "run_tests", "ok")),
	}
	before := adaptertest.JSON(t, in)
	opts := []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 64})}
	budget := tokens(t, in) / 3
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
	if got := tokens(t, out); got != res.TokensAfter || got > budget {
		t.Fatalf("the output counts %d, the core %d, budget %d", got, res.TokensAfter, budget)
	}
	a := out[2]
	if len(a.Parts) != 3 || a.Parts[0] != in[2].Parts[0] {
		t.Fatalf("the cleared message's parts: %#v", a.Parts)
	}
	first, ok := a.Parts[1].(llms.ToolCall)
	if !ok || first.ID != "w1" || first.Type != "function" || first.FunctionCall.Name != "write_file" || !strings.HasPrefix(first.FunctionCall.Arguments, adaptertest.ClearedPrefix) {
		t.Fatalf("call w1 reads %#v", a.Parts[1])
	}
	wrapped, ok := a.Parts[2].(llms.CachedContent)
	if !ok || wrapped.CacheControl != cc {
		t.Fatalf("call w2 lost its cache-control wrapper: %#v", a.Parts[2])
	}
	if second := wrapped.ContentPart.(llms.ToolCall); !strings.HasPrefix(second.FunctionCall.Arguments, adaptertest.ClearedPrefix) {
		t.Fatalf("call w2 reads %#v", second)
	}
	if in[2].Parts[1].(llms.ToolCall).FunctionCall.Arguments != args {
		t.Fatal("the caller's FunctionCall was modified")
	}
	if !adaptertest.SameArray(out[4].Parts, in[4].Parts) {
		t.Error("the newest step, untouched, is not the caller's")
	}
	again, _, err := Trim(out, budget, opts...)
	if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
		t.Fatalf("a second trim changed the output (%v)", err)
	}
}

// TestMemoryClearedArguments: a Memory stores the cleared copy of an AI
// message as an llms.AIChatMessage with the new arguments, its text and
// ReasoningContent kept, and its next load counts what the trim counted.
func TestMemoryClearedArguments(t *testing.T) {
	ctx := context.Background()
	source := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", 30)
	raw, _ := json.Marshal(map[string]string{"content": source})
	stored := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "You are a coding agent."},
		llms.HumanChatMessage{Content: "Add the handlers."},
		llms.AIChatMessage{Content: "writing", ReasoningContent: "why", ToolCalls: []llms.ToolCall{call("a", "write_file", string(raw))}},
		llms.ToolChatMessage{ID: "a", Content: strings.Repeat("wrote\n", 200)},
		llms.AIChatMessage{Content: "testing", ToolCalls: []llms.ToolCall{call("b", "run_tests", "{}")}},
		llms.ToolChatMessage{ID: "b", Content: "ok"},
	}
	h := memory.NewChatMessageHistory()
	if err := h.SetMessages(ctx, stored); err != nil {
		t.Fatal(err)
	}
	m := NewMemory(chatTokens(t, stored)/2, history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 64}))
	m.ChatHistory, m.ReturnMessages = h, true
	got := loadMessages(t, m)
	if len(got) != len(stored) {
		t.Fatalf("%d messages loaded, %d stored", len(got), len(stored))
	}
	ai, ok := got[2].(llms.AIChatMessage)
	if !ok || ai.Content != "writing" || ai.ReasoningContent != "why" || len(ai.ToolCalls) != 1 ||
		ai.ToolCalls[0].ID != "a" || !strings.HasPrefix(ai.ToolCalls[0].FunctionCall.Arguments, adaptertest.ClearedPrefix) {
		t.Fatalf("the cleared AI message loads as %#v", got[2])
	}
	if chatTokens(t, got) > m.Budget {
		t.Errorf("the loaded messages count %d, budget %d", chatTokens(t, got), m.Budget)
	}
	if again, _ := h.Messages(ctx); again[2].(llms.AIChatMessage).ToolCalls[0].FunctionCall.Arguments != string(raw) {
		t.Error("LoadMemoryVariables modified the store")
	}
}

// corpusContent maps a conversation of the shared corpus to the messages
// LangChainGo's GenerateContent takes: text and tool calls in AI
// messages, one response per tool message (the form its OpenAI provider
// wants). llms.MessageContent has no part for reasoning or thinking in
// v0.1.14 (a provider's thinking comes back only in
// ContentChoice.ReasoningContent and GenerationInfo, and no provider sends
// it back), so none is synthesised here; corpusChat does, for the Memory.
func corpusContent(c adaptertest.Conversation) []llms.MessageContent {
	out := make([]llms.MessageContent, len(c.Messages))
	for i, m := range c.Messages {
		switch m.Role {
		case history.RoleSystem:
			out[i] = msg(llms.ChatMessageTypeSystem, txt(m.Content))
		case history.RoleUser:
			out[i] = msg(llms.ChatMessageTypeHuman, txt(m.Content))
		case history.RoleTool:
			out[i] = msg(llms.ChatMessageTypeTool, resp(m.ToolCallID, m.Name, m.Content))
		default:
			a := msg(llms.ChatMessageTypeAI)
			if m.Content != "" {
				a.Parts = append(a.Parts, txt(m.Content))
			}
			for _, tc := range m.ToolCalls {
				a.Parts = append(a.Parts, call(tc.ID, tc.Name, tc.Arguments))
			}
			out[i] = a
		}
	}
	return out
}

// corpusChat maps a conversation of the shared corpus to the messages a
// LangChainGo memory stores, every AI message with ReasoningContent
// synthesised, as a reasoning model's reply holds it (llms.AIChatMessage
// has the field; the corpus has no reasoning).
func corpusChat(c adaptertest.Conversation) []llms.ChatMessage {
	out := make([]llms.ChatMessage, len(c.Messages))
	for i, m := range c.Messages {
		switch m.Role {
		case history.RoleSystem:
			out[i] = llms.SystemChatMessage{Content: m.Content}
		case history.RoleUser:
			out[i] = llms.HumanChatMessage{Content: m.Content}
		case history.RoleTool:
			out[i] = llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Content}
		default:
			a := llms.AIChatMessage{Content: m.Content, ReasoningContent: "Message " + strconv.Itoa(i) + " of " + c.Name + ": decide the next step."}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, call(tc.ID, tc.Name, tc.Arguments))
			}
			out[i] = a
		}
	}
	return out
}

// TestCorpus trims every conversation of the shared corpus of real agent
// sessions at 1% to 100% of its size with each option set of the ladder,
// twice: as llms.MessageContent with Trim, and as the llms.ChatMessage
// values a Memory stores (with reasoning) through the Memory's trim. It
// counts the trims that break a rule: the output fails Validate (the
// pairing rule of the providers LangChainGo sends to), the latest human
// request is not in it, or a message in it is not the caller's (or what
// a trim may make of one: tool calls stripped, a response elided; an AI
// message keeps its ReasoningContent). The corpus is small (61
// conversations, 3,070 messages), so every conversation runs at every
// budget.
func TestCorpus(t *testing.T) {
	convs := adaptertest.Corpus(t, "../..")
	trims, violations := 0, 0
	report := func(name string, budget int, set, msg string) {
		trims++
		if msg != "" {
			violations++
			t.Errorf("%s, budget %d, %s: %s", name, budget, set, msg)
		}
	}
	for _, c := range convs {
		in, chat := corpusContent(c), corpusChat(c)
		if err := Validate(in); err != nil {
			t.Fatalf("%s: the mapped input is invalid: %v", c.Name, err)
		}
		before, beforeChat := adaptertest.JSON(t, in), adaptertest.JSON(t, chat)
		for _, budget := range adaptertest.CorpusBudgets(tokens(t, in)) {
			for _, set := range adaptertest.LadderSets(false) {
				report(c.Name, budget, set.Name, checkContentTrim(t, in, budget, set.Opts))
				report(c.Name, budget, set.Name+" (Memory)", checkMemoryTrim(chat, budget, set.Opts))
			}
		}
		if adaptertest.JSON(t, in) != before || adaptertest.JSON(t, chat) != beforeChat {
			t.Errorf("%s: a trim modified the caller's messages", c.Name)
		}
	}
	want := len(convs) * len(adaptertest.CorpusBudgets(1)) * len(adaptertest.LadderSets(false)) * 2
	t.Logf("%d conversations x %d budgets x %d option sets x 2 forms (MessageContent, Memory) = %d trims, %d violations",
		len(convs), len(adaptertest.CorpusBudgets(1)), len(adaptertest.LadderSets(false)), trims, violations)
	if trims != want {
		t.Errorf("%d trims run, want %d", trims, want)
	}
}

// checkContentTrim trims in at budget with opts and returns the first rule
// the output breaks (see TestCorpus), or "".
func checkContentTrim(t *testing.T, in []llms.MessageContent, budget int, opts []history.Option) string {
	t.Helper()
	out, _, err := Trim(in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return "Trim: " + err.Error()
	}
	// Where each output message comes from, as Trim decided it.
	same, _, from, _ := codec.Decide(struct{}{}, in, budget, opts, func(conv []history.Message, opts []history.Option) (history.Result, error) {
		return history.TrimToRecentTurns(conv, budget, opts...)
	})
	if !reflect.DeepEqual(same, out) {
		return "Trim returns other messages than the trim checked here"
	}
	if err := Validate(out); err != nil {
		return "output fails Validate: " + err.Error()
	}
	latest := lastHuman(in)
	kept := false
	for j, k := range from {
		switch {
		case k < 0:
		case adaptertest.SameArray(out[j].Parts, in[k].Parts):
			kept = kept || k == latest
		case !cutFrom(out[j], in[k]):
			return "message " + strconv.Itoa(j) + " is neither the caller's nor cut down from it"
		}
	}
	if !kept {
		return "the latest human request was dropped"
	}
	return ""
}

// cutFrom reports whether m is what a trim may make of orig: a message of
// its role over a subsequence of its parts, a response possibly elided
// (same ID and name, other content).
func cutFrom(m, orig llms.MessageContent) bool {
	if m.Role != orig.Role {
		return false
	}
	eq := func(a, b llms.ContentPart) bool {
		ra, okA := unwrap(a).(llms.ToolCallResponse)
		rb, okB := unwrap(b).(llms.ToolCallResponse)
		if okA && okB {
			return ra.ToolCallID == rb.ToolCallID && ra.Name == rb.Name
		}
		return reflect.DeepEqual(a, b)
	}
	return adaptertest.Subsequence(m.Parts, orig.Parts, eq)
}

// lastHuman returns the index of the last human message of msgs, or -1.
func lastHuman(msgs []llms.MessageContent) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			return i
		}
	}
	return -1
}

// checkMemoryTrim stores chat in a Memory trimming to budget with opts,
// loads it, and returns the first rule the loaded messages break (see
// TestCorpus), or "".
func checkMemoryTrim(chat []llms.ChatMessage, budget int, opts []history.Option) string {
	ctx := context.Background()
	m := NewMemory(budget, opts...)
	m.ReturnMessages = true
	if err := m.ChatHistory.SetMessages(ctx, chat); err != nil {
		return err.Error()
	}
	vars, err := m.LoadMemoryVariables(ctx, nil)
	if err != nil {
		return "LoadMemoryVariables: " + err.Error()
	}
	got, _ := vars[m.MemoryKey].([]llms.ChatMessage)
	content := make([]llms.MessageContent, len(got))
	for i, cm := range got {
		content[i] = contentOf(cm)
	}
	if err := Validate(content); err != nil {
		return "loaded messages fail Validate: " + err.Error()
	}
	var latest llms.ChatMessage
	for _, cm := range chat {
		if _, ok := cm.(llms.HumanChatMessage); ok {
			latest = cm
		}
	}
	kept := latest == nil // no request to keep
	for j, cm := range got {
		if cm == latest {
			kept = true
		}
		if ai, ok := cm.(llms.AIChatMessage); ok && ai.Content != history.BreadcrumbText && !fromStored(ai, chat) {
			return "AI message " + strconv.Itoa(j) + " is not a stored one (with its reasoning) or one with calls stripped"
		}
	}
	if !kept {
		return "the latest human request was dropped"
	}
	return ""
}

// fromStored reports whether ai is a stored AI message, or one with some
// of its tool calls stripped or their arguments cleared
// (history.ElideOptions.ClearArguments): content and ReasoningContent
// unchanged.
func fromStored(ai llms.AIChatMessage, stored []llms.ChatMessage) bool {
	for _, cm := range stored {
		s, ok := cm.(llms.AIChatMessage)
		if !ok || s.Content != ai.Content || s.ReasoningContent != ai.ReasoningContent || s.FunctionCall != ai.FunctionCall {
			continue
		}
		if len(ai.ToolCalls) == 0 || adaptertest.Subsequence(ai.ToolCalls, s.ToolCalls, sameOrCleared) {
			return true
		}
	}
	return false
}

// sameOrCleared reports whether the loaded call a is the stored call s, or
// s with its arguments cleared.
func sameOrCleared(a, s llms.ToolCall) bool {
	if a.FunctionCall != nil && s.FunctionCall != nil && a.FunctionCall.Arguments != s.FunctionCall.Arguments &&
		strings.HasPrefix(a.FunctionCall.Arguments, adaptertest.ClearedPrefix) {
		fc := *a.FunctionCall
		fc.Arguments = s.FunctionCall.Arguments
		a.FunctionCall = &fc
	}
	return adaptertest.DeepEqual(a, s)
}

// Replays: the histories on which other trimmers broke a request, each
// naming its source, trimmed here and sent through LangChainGo's real
// OpenAI provider to a server that enforces OpenAI's pairing rule with
// OpenAI's error bodies. The peer's output is sent too, so each case shows
// that the history reproduces the failure.

// send sends msgs through LangChainGo's OpenAI provider to srv.
func send(t *testing.T, srv *httptest.Server, msgs []llms.MessageContent) error {
	t.Helper()
	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("sk-test"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = llm.GenerateContent(context.Background(), msgs)
	return err
}

// perMessage counts every message as one token: the token_counter=len of
// the LangChain reproductions.
var perMessage = history.WithCounter(history.CounterFunc(func(history.Message) int { return 1 }))

// TestReplayTrimmers replays the histories on which LangChain's
// trim_messages, LangChain.js's trimMessages and Semantic Kernel's
// truncation reducer returned a history the provider rejects (an orphan
// tool message first, or a call without its result), and the shape of a
// runtime's trim that kept a trailing tool result without its call. For
// each, the peer's output is rejected with OpenAI's body, and Trim's, at
// the same budget, passes Validate, keeps the latest human request and is
// accepted.
func TestReplayTrimmers(t *testing.T) {
	weather := call("abc123", "get_weather", `{"location": "Florida"}`)
	big := strings.Repeat("func f() { return 42 } // source\n", 80)
	tests := []struct {
		name, source string
		in           []llms.MessageContent
		budget       int
		opts         []history.Option
		peer         []int  // the messages of in the peer kept
		peerError    string // what OpenAI answers the peer's output
	}{
		{
			name:   "trim_messages strategy last orphans the tool message",
			source: "langchain-ai/langchain#33245 (trim_messages(messages, strategy=\"last\", token_counter=len, max_tokens=5) returns ToolMessage, HumanMessage, AIMessage, HumanMessage, AIMessage)",
			in: []llms.MessageContent{
				msg(llms.ChatMessageTypeHuman, txt("What's the weather in Florida?")),
				msg(llms.ChatMessageTypeAI, txt("Let's check the weather in Florida"), weather),
				msg(llms.ChatMessageTypeTool, resp("abc123", "get_weather", "It's sunny in Florida, 85F")),
				msg(llms.ChatMessageTypeHuman, txt("And in New York?")),
				msg(llms.ChatMessageTypeAI, txt("I can check that too.")),
				msg(llms.ChatMessageTypeHuman, txt("Please do.")),
				msg(llms.ChatMessageTypeAI, txt("Checking New York now.")),
			},
			budget: 5, opts: []history.Option{perMessage},
			peer:      []int{2, 3, 4, 5, 6},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
		{
			name:   "LangChain.js trimMessages returns system, tool, ai, human, ai",
			source: "../shared/REFERENCES.md, Peers measured here (@langchain/core 1.4.0 trimMessages, strategy last, includeSystem)",
			in: []llms.MessageContent{
				msg(llms.ChatMessageTypeSystem, txt("You are a helpful assistant.")),
				msg(llms.ChatMessageTypeHuman, txt("What's the weather in Florida?")),
				msg(llms.ChatMessageTypeAI, weather),
				msg(llms.ChatMessageTypeTool, resp("abc123", "get_weather", "sunny")),
				msg(llms.ChatMessageTypeAI, txt("It is sunny.")),
				msg(llms.ChatMessageTypeHuman, txt("Thanks! Anything else?")),
				msg(llms.ChatMessageTypeAI, txt("No, that's all.")),
			},
			budget: 5, opts: []history.Option{perMessage},
			peer:      []int{0, 3, 4, 5, 6},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
		{
			name:   "ChatHistoryTruncationReducer target_count=3 cuts off the tool_calls message",
			source: "microsoft/semantic-kernel#12708 (reproduction in PR #12923: After reduce: TOOL, USER, ASSISTANT)",
			in: []llms.MessageContent{
				msg(llms.ChatMessageTypeSystem, txt("sys")),
				msg(llms.ChatMessageTypeHuman, txt("user A")),
				msg(llms.ChatMessageTypeAI, call("123", "plugin-search", `{"q":"x"}`)),
				msg(llms.ChatMessageTypeTool, resp("123", "plugin-search", "RESULT")),
				msg(llms.ChatMessageTypeHuman, txt("user B")),
				msg(llms.ChatMessageTypeAI, txt("done")),
			},
			budget: 4, opts: []history.Option{perMessage},
			peer:      []int{3, 4, 5},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
		{
			name:   "history filtered to human and AI messages keeps a call without its result",
			source: "langchain-ai/langchain#29637 (comment of 2026-04-17: \"The trimmed history contains AIMessage(tool_calls=[...]) but the corresponding ToolMessage was either filtered out ... or trimmed away\"; Anthropic: \"messages.2: tool_use ids were found without tool_result blocks immediately after\")",
			in: []llms.MessageContent{
				msg(llms.ChatMessageTypeHuman, txt("hi")),
				msg(llms.ChatMessageTypeAI, txt("hello")),
				msg(llms.ChatMessageTypeHuman, txt("what's the weather in florida?")),
				msg(llms.ChatMessageTypeAI, txt("let's check the weather in florida"), weather),
				msg(llms.ChatMessageTypeAI, txt("It's sunny in Florida.")),
				msg(llms.ChatMessageTypeHuman, txt("and tomorrow?")),
			},
			budget:    1000,
			peer:      []int{0, 1, 2, 3, 4, 5},
			peerError: "must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: abc123",
		},
		{
			name:   "a trim that always keeps the last message keeps a trailing tool result alone",
			source: "14790897/MiqroForge-Desktop#753 ([system, user, assistant(tc1), tool1, assistant(tc2), tool2] trimmed to [system, user, tool2]; OpenAI: \"Messages with role 'tool' must be a response to a preceding message with 'tool_calls'\")",
			in: []llms.MessageContent{
				msg(llms.ChatMessageTypeSystem, txt("You are an agent.")),
				msg(llms.ChatMessageTypeHuman, txt("search and read the results")),
				msg(llms.ChatMessageTypeAI, call("tc1", "search", `{"q":"x"}`)),
				msg(llms.ChatMessageTypeTool, resp("tc1", "search", big)),
				msg(llms.ChatMessageTypeAI, call("tc2", "read", `{"p":"a"}`)),
				msg(llms.ChatMessageTypeTool, resp("tc2", "read", big)),
			},
			budget: 900, opts: []history.Option{history.WithStepTrim()},
			peer:      []int{0, 1, 5},
			peerError: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
		},
	}
	srv := adaptertest.OpenAIPairingServer(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var peer []llms.MessageContent
			for _, i := range tc.peer {
				peer = append(peer, tc.in[i])
			}
			if err := Validate(peer); !errors.Is(err, ErrUnpaired) {
				t.Fatalf("the peer's output passes Validate (%v): the case does not replay %s", err, tc.source)
			}
			if err := send(t, srv, peer); err == nil || !strings.Contains(err.Error(), tc.peerError) {
				t.Fatalf("the peer's output: %v, want OpenAI's %q (%s)", err, tc.peerError, tc.source)
			}
			out, _, err := Trim(tc.in, tc.budget, tc.opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatal(err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("%v (%s)", err, tc.source)
			}
			if latest := tc.in[lastHuman(tc.in)]; !containsMessage(out, latest) {
				t.Fatalf("the latest human request was dropped (%s): %s", tc.source, show(out))
			}
			if err := send(t, srv, out); err != nil {
				t.Fatalf("our output was rejected: %v (%s)", err, tc.source)
			}
		})
	}
}

// containsMessage reports whether msgs holds m itself (its parts).
func containsMessage(msgs []llms.MessageContent, m llms.MessageContent) bool {
	for _, x := range msgs {
		if x.Role == m.Role && len(x.Parts) == len(m.Parts) && len(m.Parts) > 0 && &x.Parts[0] == &m.Parts[0] {
			return true
		}
	}
	return false
}

// show renders msgs as their roles and part types, for failure messages.
func show(msgs []llms.MessageContent) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + "(")
		for k, p := range m.Parts {
			if k > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%T", p)
		}
		b.WriteString(") ")
	}
	return b.String()
}

// offlineBPE is tiktoken-go's vocabulary loader on a machine that cannot
// download the vocabularies: llms.CountTokens then falls back to runes/4,
// as it does in production offline. It keeps the test from reaching the
// network.
type offlineBPE struct{}

func (offlineBPE) LoadTiktokenBpe(string) (map[string]int, error) {
	return nil, errors.New("no network: vocabularies are not downloaded in tests")
}

// TestReplayConversationTokenBuffer replays the failures of LangChainGo's
// own token-limited memory, memory.ConversationTokenBuffer (v0.1.14,
// memory/token_buffer.go; ../shared/REFERENCES.md), run for real here: it
// drops the oldest stored message one at a time until the rest fits, so
// an exchange larger than the limit empties it, the latest request
// included, and a stored tool call can go while its result stays, which
// OpenAI rejects. The Memory of this package, given the same store and
// limit, keeps the latest exchange and a history OpenAI accepts.
func TestReplayConversationTokenBuffer(t *testing.T) {
	tiktoken.SetBpeLoader(offlineBPE{})
	defer log.SetOutput(log.Writer())
	log.SetOutput(io.Discard) // CountTokens logs its fallback on every call
	ctx := context.Background()
	srv := adaptertest.OpenAIPairingServer(t)
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

	t.Run("an exchange over the limit empties the buffer", func(t *testing.T) {
		const limit = 200
		exchanges := [][2]string{{"hi", "hello"}, {"how are you?", "fine"}, {"summarise this: " + words(300), "summary: " + words(200)}}
		peer := memory.NewConversationTokenBuffer(nil, limit, memory.WithReturnMessages(true))
		ours := NewMemory(limit)
		ours.ReturnMessages = true
		for _, ex := range exchanges {
			for _, m := range []interface {
				SaveContext(context.Context, map[string]any, map[string]any) error
			}{peer, ours} {
				if err := m.SaveContext(ctx, map[string]any{"input": ex[0]}, map[string]any{"output": ex[1]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		latest := llms.HumanChatMessage{Content: exchanges[2][0]}
		vars, err := peer.LoadMemoryVariables(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := vars["history"].([]llms.ChatMessage); len(got) != 0 {
			t.Fatalf("the buffer holds %d messages: the case does not replay the emptied buffer", len(got))
		}
		vars, err = ours.LoadMemoryVariables(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := vars["history"].([]llms.ChatMessage)
		if len(got) < 2 || got[len(got)-2] != latest {
			t.Fatalf("the Memory lost the latest request: %v", got)
		}
	})

	t.Run("pruning one message at a time orphans a tool result", func(t *testing.T) {
		const limit = 150
		stored := []llms.ChatMessage{
			llms.HumanChatMessage{Content: "read the config and tell me the port: " + words(80)},
			llms.AIChatMessage{Content: "Reading the config file first. " + words(80), ToolCalls: []llms.ToolCall{call("call_1", "read_file", `{"path":"config.yaml"}`)}},
			llms.ToolChatMessage{ID: "call_1", Content: "port: 8080\n" + words(80)},
			llms.AIChatMessage{Content: "The port is 8080."},
		}
		peer := memory.NewConversationTokenBuffer(nil, limit, memory.WithReturnMessages(true))
		ours := NewMemory(limit)
		ours.ReturnMessages = true
		for _, m := range []*memory.ConversationBuffer{&peer.ConversationBuffer, &ours.ConversationBuffer} {
			if err := m.ChatHistory.SetMessages(ctx, stored); err != nil {
				t.Fatal(err)
			}
		}
		in, out := map[string]any{"input": "and the host?"}, map[string]any{"output": "localhost"}
		if err := peer.SaveContext(ctx, in, out); err != nil {
			t.Fatal(err)
		}
		if err := ours.SaveContext(ctx, in, out); err != nil {
			t.Fatal(err)
		}
		load := func(m interface {
			LoadMemoryVariables(context.Context, map[string]any) (map[string]any, error)
		}) []llms.MessageContent {
			vars, err := m.LoadMemoryVariables(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []llms.MessageContent
			for _, cm := range vars["history"].([]llms.ChatMessage) {
				msgs = append(msgs, contentOf(cm))
			}
			return msgs
		}
		peerMsgs := load(peer)
		if len(peerMsgs) == 0 || peerMsgs[0].Role != llms.ChatMessageTypeTool {
			t.Fatalf("the buffer does not start with the tool result (%s): the case does not replay the orphan", show(peerMsgs))
		}
		if err := send(t, srv, peerMsgs); err == nil || !strings.Contains(err.Error(), "must be a response to a preceeding message with 'tool_calls'") {
			t.Fatalf("the buffer's history: %v, want OpenAI's rejection", err)
		}
		ourMsgs := load(ours)
		if err := Validate(ourMsgs); err != nil {
			t.Fatal(err)
		}
		if n := len(ourMsgs); n < 2 || !reflectText(ourMsgs[n-2], "and the host?") {
			t.Fatalf("the Memory lost the latest request: %s", show(ourMsgs))
		}
		if err := send(t, srv, ourMsgs); err != nil {
			t.Fatalf("the Memory's history was rejected: %v", err)
		}
	})
}

// reflectText reports whether m is a human message holding exactly text.
func reflectText(m llms.MessageContent, text string) bool {
	if m.Role != llms.ChatMessageTypeHuman || len(m.Parts) != 1 {
		return false
	}
	t, ok := m.Parts[0].(llms.TextContent)
	return ok && t.Text == text
}

// The overflow classifiers (the core's history.ParseOverflow and this
// package's ParseOverflow) driven by LangChainGo's real OpenAI and Anthropic
// models, each pointed at an httptest server that answers with the
// provider's real status, headers and error body. The Google AI model needs
// modules this adapter does not require; its cases are in the nested module
// ./sdktest.

// sdkCase is one answer of a provider and what must be made of it.
type sdkCase struct {
	name   string
	status int
	header map[string]string // Content-Type defaults to application/json
	body   string
	want   bool
	ov     history.Overflow
	// source names where the body was found (owner/repo#N or a URL), or
	// says "constructed".
	source string
	// coreMisses, when set, says why the core alone (history.ParseOverflow
	// on the client's error) gets this case wrong: its verdict is then the
	// opposite of want. Empty: the core gets it right unaided.
	coreMisses string
	// mappedCoreMisses is the same for the client's error after
	// LangChainGo's own mapping (the provider's MapError, an *llms.Error).
	mappedCoreMisses string
}

// serve answers every request with tc's status, headers and body.
func serve(t *testing.T, tc sdkCase) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range tc.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(tc.status)
		_, _ = w.Write([]byte(tc.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

var hello = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")}

// checkOverflow runs the assertions every provider shares on the error err
// that a LangChainGo model returned for tc, and on mapped, the same error
// after the provider's MapError.
func checkOverflow(t *testing.T, tc sdkCase, err, mapped error) {
	t.Helper()
	if err == nil {
		t.Fatal("the request succeeded")
	}
	// LangChainGo v0.1.14 returns the HTTP error as text, not as *llms.Error:
	// its models do not call their own MapError.
	var le *llms.Error
	if errors.As(err, &le) {
		t.Fatalf("the model returned an *llms.Error (%v); LangChainGo now maps its errors, revisit ParseOverflow", err)
	}
	if want := fmt.Sprintf("%s%d", statusPrefix, tc.status); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not carry %q", err, want)
	}

	wrapped := fmt.Errorf("agent turn 3: %w", err)
	if ov, ok := ParseOverflow(wrapped); ok != tc.want || ov != tc.ov {
		t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
	}
	if IsContextOverflow(wrapped) != tc.want {
		t.Fatal("IsContextOverflow disagrees with ParseOverflow")
	}
	coreOv, coreOK := history.ParseOverflow(wrapped)
	if tc.coreMisses == "" && (coreOK != tc.want || coreOv != tc.ov) {
		t.Fatalf("history.ParseOverflow = %+v, %v; want %+v, %v unaided\nerror: %v", coreOv, coreOK, tc.ov, tc.want, err)
	}
	if tc.coreMisses != "" && coreOK == tc.want {
		t.Fatalf("history.ParseOverflow now gets it right (%+v, %v); drop coreMisses %q", coreOv, coreOK, tc.coreMisses)
	}

	// After LangChainGo's own mapping: an *llms.Error whose text is only
	// LangChainGo's label, wrapping the client's error.
	if !errors.As(mapped, &le) || le.Cause != err {
		t.Fatalf("MapError returned %T (%v), not an *llms.Error wrapping the client's error", mapped, mapped)
	}
	wrappedMapped := fmt.Errorf("agent turn 3: %w", mapped)
	if ov, ok := ParseOverflow(wrappedMapped); ok != tc.want || ov != tc.ov {
		t.Fatalf("after MapError (%q): ParseOverflow = %+v, %v; want %+v, %v", mapped, ov, ok, tc.ov, tc.want)
	}
	mOv, mOK := history.ParseOverflow(wrappedMapped)
	if tc.mappedCoreMisses == "" && (mOK != tc.want || mOv != tc.ov) {
		t.Fatalf("after MapError (%q): history.ParseOverflow = %+v, %v; want %+v, %v unaided", mapped, mOv, mOK, tc.ov, tc.want)
	}
	if tc.mappedCoreMisses != "" && mOK == tc.want {
		t.Fatalf("after MapError: history.ParseOverflow now gets it right (%+v, %v); drop mappedCoreMisses %q", mOv, mOK, tc.mappedCoreMisses)
	}
}

// Answers that are not JSON error bodies, the same from any provider.
var badBodies = []sdkCase{
	{
		name: "HTML 502 page from a proxy", status: http.StatusBadGateway,
		header: map[string]string{"Content-Type": "text/html"},
		body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
		source: "constructed (nginx's default 502 page)",
	},
	{
		name: "empty 400 body", status: http.StatusBadRequest,
		source: "constructed",
	},
}

func TestOverflowFromLangChainGoOpenAI(t *testing.T) {
	tests := []sdkCase{
		{
			name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
			header: map[string]string{"X-Request-Id": "req_8f3c1e2a"},
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want:   true, ov: history.Overflow{Used: 4294, Limit: 4097},
			source:           "chathub-dev/chathub#126",
			mappedCoreMisses: `MapError finds "429" in "4294 tokens" and labels it "openai: rate_limit: Rate limit exceeded", a text the core rules out`,
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
			source: "mckaywrigley/chatbot-ui#102",
		},
		{
			// LangChainGo keeps only error.message; OpenRouter (and vLLM)
			// put the message at the top level, so the client's error is
			// "API returned unexpected status code: 400: " and the overflow
			// is lost before any classifier sees it.
			name: "OpenRouter body without an error member: LangChainGo drops the message", status: http.StatusBadRequest,
			body:   `{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 264437 tokens (262437 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","metadata":{"provider_name":null}}`,
			source: "tailcallhq/forgecode#1143",
		},
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			header: map[string]string{"Retry-After": "5"},
			body:   `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
			source: "Wei-Shaw/sub2api#572",
		},
		{
			name: "429 request larger than the TPM limit", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			source: "TheR1D/shell_gpt#653",
		},
		{
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:       `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			source:     "constructed (the status rules it out)",
			coreMisses: `the status is only in LangChainGo's text ("status code: 429"), which the core does not read`,
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tok`,
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model", status: http.StatusBadRequest,
			body:   `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`,
			source: "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
		},
	}
	for _, tc := range append(tests, badBodies...) {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc)
			llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("sk-test"), openai.WithModel("gpt-4o-mini"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = llm.GenerateContent(context.Background(), hello)
			checkOverflow(t, tc, err, openai.MapError(err))
		})
	}
}

func TestOverflowFromLangChainGoAnthropic(t *testing.T) {
	tests := []sdkCase{
		{
			name: "prompt is too long", status: http.StatusBadRequest,
			header: map[string]string{"Request-Id": "req_011CWdepJvA2D819tdYYq4h7"},
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011CWdepJvA2D819tdYYq4h7"}`,
			want:   true, ov: history.Overflow{Used: 200251, Limit: 200000},
			source: "boldsoftware/exe.dev#62",
		},
		{
			name: "input length and max_tokens exceed context limit", status: http.StatusBadRequest,
			body: "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again\"},\"request_id\":\"req_011CUB2XUHWkFnQzxcKBbjpF\"}",
			want: true, ov: history.Overflow{Used: 178959, Limit: 136000},
			source: "docker/docker-agent#569",
		},
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			header: map[string]string{"Retry-After": "5"},
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"Extra usage is required for long context requests."},"request_id":"req_011CZf8TJf84hAUziB6LuRoc"}`,
			source: "anthropics/claude-code#42616",
		},
		{
			name: "429 input tokens per minute", status: http.StatusTooManyRequests,
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 30,000 input tokens per minute. Please reduce the prompt length or the maximum tokens requested, or try again later."}}`,
			source: "stagewise-io/stagewise#927",
		},
		{
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:       `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"}}`,
			source:     "constructed (the status rules it out)",
			coreMisses: `the status is only in LangChainGo's text ("status code: 429"), which the core does not read`,
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tok`,
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model name", status: http.StatusBadRequest,
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"system: Invalid model name"}}`,
			source: "anthropics/claude-code#1607",
		},
	}
	for _, tc := range append(tests, badBodies...) {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc)
			llm, err := anthropic.New(anthropic.WithBaseURL(srv.URL), anthropic.WithToken("sk-ant-test"), anthropic.WithModel("claude-sonnet-4-5"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = llm.GenerateContent(context.Background(), hello)
			checkOverflow(t, tc, err, anthropic.MapError(err))
		})
	}
}
