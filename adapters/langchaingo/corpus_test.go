package langchaingo

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

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
		strings.HasPrefix(a.FunctionCall.Arguments, clearedPrefix) {
		fc := *a.FunctionCall
		fc.Arguments = s.FunctionCall.Arguments
		a.FunctionCall = &fc
	}
	return adaptertest.DeepEqual(a, s)
}
